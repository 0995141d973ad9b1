"""`ludo tournament …` as a user runs it: exit statuses and what is printed, offline for
verify, against a real PostgreSQL for export."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path

import msgspec
import pytest

from domain.arena import ArenaEvent, ResultScored
from ludo_cli.main import main
from replays.tournament import dump_tournament, load_tournament
from services.shared.database import create_engine
from services.shared.eventstore import EventStore
from tests import paths
from tests.arena_fixtures import ArenaRecord, build_arena, forge_event, store_arena

GOLDEN = paths.GOLDEN / "tournaments" / "v1-arena-bga-2p.ludo-tournament.json"
REPLAY = paths.GOLDEN / "replays" / "v1-standard-2p-standins.ludo-replay.json"


def forged_result(tmp_path: Path) -> tuple[Path, int]:
    """The golden file with its second result's loser given the winner's points (the chain
    recomputed), and that event's version."""
    tournament = load_tournament(GOLDEN.read_bytes())
    version = [e.version for e in tournament.events if e.type == "ResultScored"][1]
    scored = msgspec.json.decode(tournament.events[version].data, type=ResultScored)
    results = tuple(msgspec.structs.replace(r, points=2.0) for r in scored.results)
    forge_event(
        tournament.events,
        tournament.stream_id,
        version,
        msgspec.structs.replace(scored, results=results),
    )
    path = tmp_path / "forged.json"
    path.write_bytes(dump_tournament(tournament))
    return path, version


class TestVerify:
    def test_a_good_file_exits_zero(self, capsys: pytest.CaptureFixture[str]) -> None:
        """A genuine file: exit 0 and an OK line with its figures."""
        assert main(["tournament", "verify", str(GOLDEN)]) == 0
        out = capsys.readouterr().out
        assert out.startswith(f"OK   {GOLDEN}: tournament 3e6f9a12-")
        assert "19 arena events, 6 matches, 6 players" in out

    def test_a_forged_result_exits_one_and_names_it(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """A forged result: exit 1, a FAIL line naming the event, its check and the seat."""
        path, version = forged_result(tmp_path)
        assert main(["tournament", "verify", str(path)]) == 1
        out = capsys.readouterr().out
        assert out.startswith(f"FAIL {path}: event {version} (ResultScored): result: results[")

    def test_json_verdicts(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """--json prints the verdict: figures, and the failure's check and version."""
        assert main(["tournament", "verify", "--json", str(GOLDEN)]) == 0
        good = msgspec.json.decode(capsys.readouterr().out)
        assert good["ok"] is True and good["failure"] is None and good["matches"] == 6
        path, version = forged_result(tmp_path)
        assert main(["tournament", "verify", "--json", str(path)]) == 1
        bad = msgspec.json.decode(capsys.readouterr().out)
        assert bad["ok"] is False and bad["file"] == str(path)
        assert (bad["failure"]["check"], bad["failure"]["version"]) == ("result", version)

    def test_files_that_are_not_tournaments_fail(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """A match's replay, or no file at all: exit 1, saying what is wrong."""
        assert main(["tournament", "verify", str(REPLAY)]) == 1
        out = capsys.readouterr().out
        assert "not a readable tournament file" in out and "`ludo replay verify` reads it" in out
        assert main(["tournament", "verify", str(tmp_path / "none.json")]) == 1
        assert "No such file" in capsys.readouterr().out


def store(url: str, record: ArenaRecord, events: Sequence[ArenaEvent] | None = None) -> None:
    """Store the arena (or only `events` of its stream) in the database at `url`."""

    async def run() -> None:
        engine = create_engine(url, pool_size=2, max_overflow=2)
        try:
            await store_arena(EventStore(engine), record, events)
        finally:
            await engine.dispose()

    asyncio.run(run())


class TestExport:
    def test_export_then_verify(
        self,
        tmp_path: Path,
        database_url: str,
        monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str],
    ) -> None:
        """A finished arena exports (exit 0, a line on stderr) to a file that verifies."""
        monkeypatch.setenv("DATABASE_URL", database_url)
        record = build_arena()
        store(database_url, record)
        out = tmp_path / "arena.json"
        assert main(["tournament", "export", record.arena_id, "-o", str(out)]) == 0
        assert f"wrote {out}: 19 arena events, 6 matches" in capsys.readouterr().err
        assert main(["tournament", "verify", str(out)]) == 0

    def test_running_and_unknown_arenas(
        self,
        database_url: str,
        monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str],
    ) -> None:
        """An arena not over: exit 1 and when to export it; an unknown id: exit 2."""
        monkeypatch.setenv("DATABASE_URL", database_url)
        record = build_arena()
        store(database_url, record, record.events[:-1])
        assert main(["tournament", "export", record.arena_id]) == 1
        assert "export it once it has finished" in capsys.readouterr().err
        assert main(["tournament", "export", "00000000-0000-4000-8000-000000000000"]) == 2
        assert "no arena" in capsys.readouterr().err
