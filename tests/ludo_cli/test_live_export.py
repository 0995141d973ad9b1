"""`ludo replay verify --live`: the export of a match still in play, checked up to its
last event (hash chain, moves, turn order; the dice values wait for the seed)."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest

from domain.events import DieRolled, Event, TurnEnded
from ludo_cli.main import main
from replays.format import dump_replay, load_replay, replay_from_events
from services.match.replays.service import ReplayStore
from services.shared.eventstore import EventStore
from tests.services.match.test_replay_store import MATCH_ID, a_match, store_match

pytestmark = pytest.mark.anyio


async def _live_export(pg_store: EventStore, tmp_path: Path) -> tuple[Path, list[Event]]:
    """A match stored as the service stores it, cut after a turn in the middle (still in
    play), exported with the code `ludo replay export` and `GET …/replay` use."""
    events, actors, seed = a_match("live-export")
    cut = next(i for i, e in enumerate(events) if isinstance(e, TurnEnded) and i > 60)
    await store_match(pg_store, MATCH_ID, events[: cut + 1], actors[: cut + 1], seed)
    path = tmp_path / "live.json"
    path.write_bytes(dump_replay(await ReplayStore(pg_store).export(MATCH_ID)))
    return path, events[: cut + 1]


async def test_a_live_export_verifies_with_live(
    pg_store: EventStore, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Without --live a running match's export fails `finished` and says to use --live;
    with it the export holds (exit 0) and the verdict says the dice were not checked."""
    path, events = await _live_export(pg_store, tmp_path)
    replay = load_replay(path.read_bytes())
    assert replay.server_seed is None and replay.placements is None

    assert main(["replay", "verify", str(path)]) == 1
    out = capsys.readouterr().out
    assert "finished: the match is not over" in out and "--live" in out

    assert main(["replay", "verify", "--live", str(path)]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"OK   {path}: live match, checked up to event {len(events) - 1}")
    assert "dice NOT checked" in out

    assert main(["replay", "verify", "--live", "--json", str(path)]) == 0
    verdict = json.loads(capsys.readouterr().out)
    assert verdict["ok"] and not verdict["finished"] and not verdict["dice_checked"]
    assert verdict["events"] == len(events) and verdict["failure"] is None


async def test_live_verification_still_finds_a_broken_chain_or_turn(
    pg_store: EventStore, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--live checks everything but the dice values: an edited event (hash chain) and a
    re-hashed roll by the wrong seat (turn order) both fail with exit 1."""
    path, events = await _live_export(pg_store, tmp_path)
    raw = json.loads(path.read_bytes())
    roll = next(i for i, e in enumerate(raw["events"]) if e["type"] == "DieRolled" and i > 20)
    raw["events"][roll]["data"] = raw["events"][roll]["data"].replace('"value":', '"value": ')
    edited = tmp_path / "edited.json"
    edited.write_text(json.dumps(raw))
    assert main(["replay", "verify", "--live", str(edited)]) == 1
    assert f"event {roll} (DieRolled): hash_chain" in capsys.readouterr().out

    i = next(i for i, e in enumerate(events) if isinstance(e, DieRolled) and i > 20)
    wrong = events[:]
    original = events[i]
    assert isinstance(original, DieRolled)
    players = len({e.seat for e in events if isinstance(e, DieRolled)})
    wrong[i] = msgspec.structs.replace(original, seat=(original.seat + 1) % players)
    forged = tmp_path / "forged.json"
    forged.write_bytes(dump_replay(replay_from_events(MATCH_ID, wrong)))
    assert main(["replay", "verify", "--live", str(forged)]) == 1
    assert f"event {i} (DieRolled): turn_order" in capsys.readouterr().out
