"""The player commands' one table, and the fairness view: what both ways into a match
(HTTP and the socket) carry out, and how the dice of a stored match are judged."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import msgspec
import pytest

from domain.chain import GENESIS, event_hash
from replays.format import ReplayFile, load_replay
from services.match.app import create_app
from services.match.play import socket as match_socket
from services.match.play.player_commands import PLAYER_COMMANDS
from services.match.play.views import fairness_view
from services.shared.eventstore import StoredEvent
from services.shared.settings import Settings
from tests.paths import GOLDEN

_FINISHED = GOLDEN / "replays" / "v1-standard-2p-standins.ludo-replay.json"


class TestOneTable:
    def test_every_command_is_a_route_with_its_operation(self, tmp_path: Path) -> None:
        """Each command of the table is `POST /api/matches/{match_id}/<name>` with its
        operationId, and the API has no other command route but the stamps (which go to
        the match's stamps stream, not through the match's commands)."""
        schema = create_app(Settings(data_dir=tmp_path)).openapi_schema.to_schema()
        routes = {
            path.rsplit("/", 1)[1]: item["post"]["operationId"]
            for path, item in schema["paths"].items()
            if path.startswith("/api/matches/{match_id}/") and "post" in item
        }
        assert routes.pop("stamps") == "sendStamp"
        assert routes == {name: c.operation_id for name, c in PLAYER_COMMANDS.items()}

    def test_every_command_is_a_socket_message(self) -> None:
        """The match socket has one command message per entry, named by its `type`."""
        assert sorted(match_socket._ACTIONS.values()) == sorted(PLAYER_COMMANDS)

    def test_only_move_names_a_piece(self) -> None:
        """A move carries the piece, in the HTTP body and in the socket message alike."""
        assert [n for n, c in PLAYER_COMMANDS.items() if c.takes_piece] == ["move"]
        assert "piece" in match_socket.MoveMessage.__struct_fields__


def _stored(
    replay: ReplayFile, change: dict[int, dict[str, Any]] | None = None
) -> list[StoredEvent]:
    """The replay's events as the store returns them; `change`: data fields to replace at
    some versions, the hash chain written again over them (as a forger with write access
    to the table would)."""
    out, prev = [], GENESIS
    for e in replay.events:
        data = e.data.encode()
        if change and e.version in change:
            data = msgspec.json.encode(msgspec.json.decode(data) | change[e.version])
        digest = event_hash(prev, replay.stream_id, e.version, e.type, e.schema_version, data)
        out.append(
            StoredEvent(
                global_position=e.version + 1,
                tx=1,
                stream_id=replay.stream_id,
                version=e.version,
                event_id=uuid.uuid4(),
                type=e.type,
                schema_version=e.schema_version,
                data=data,
                metadata={},
                recorded_at=datetime(2026, 1, 1, tzinfo=UTC),
                prev_hash=prev,
                hash=digest,
            )
        )
        prev = digest
    return out


class TestFairness:
    @pytest.fixture(scope="class")
    def replay(self) -> ReplayFile:
        return load_replay(_FINISHED.read_bytes())

    def test_a_finished_match_verifies(self, replay: ReplayFile) -> None:
        """After the reveal every roll is listed and the stored match verifies."""
        fairness = fairness_view(_stored(replay))
        rolls = [e for e in replay.events if e.type == "DieRolled"]
        assert fairness.server_seed is not None
        assert len(fairness.rolls) == len(rolls) and fairness.verified is True

    def test_a_die_the_seed_does_not_give_is_not_verified(self, replay: ReplayFile) -> None:
        """A roll rewritten (chain and all) to a face the seed does not give fails."""
        first = next(e for e in replay.events if e.type == "DieRolled")
        value = msgspec.json.decode(first.data)["value"]
        forged = _stored(replay, {first.version: {"value": value % 6 + 1}})
        assert fairness_view(forged).verified is False

    def test_before_the_reveal_nothing_is_judged(self, replay: ReplayFile) -> None:
        """Before `SeedRevealed` neither the seed nor a verdict is shown."""
        revealed = next(e.version for e in replay.events if e.type == "SeedRevealed")
        fairness = fairness_view(_stored(replay)[:revealed])
        assert fairness.server_seed is None and fairness.verified is None
