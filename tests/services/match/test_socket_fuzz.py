"""Fuzzing the match socket's client messages on the real service (uvicorn, a real database):
hypothesis-generated JSON values, protocol-shaped objects, arbitrary text and bytes, sent in
batches over one connection per example. Each message gets exactly one reply frame of a
known type and never a 500, the socket stays open, and nothing is appended to the match.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from websockets.sync.client import ClientConnection, connect

from services.match.sockets import MAX_MESSAGE
from tests.services.match.test_live import Instance, _settings

REPLIES = {"error", "pong", "hello", "result", "stamped"}  # what answers a client message
TYPES = [
    *("hello", "ping", "roll", "move", "leave", "reclaim", "stamp"),
    *("HELLO", "", "event", "state", "batch"),
]

scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False)
    | st.text(max_size=10)
)
json_values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=12,
)
# Objects shaped like the protocol's: a known (or near) type, its fields, some wrong ones.
shaped = st.fixed_dictionaries(
    {"type": st.sampled_from(TYPES) | json_values},
    optional={
        "id": st.text(max_size=8) | json_values,
        "piece": st.integers(-2, 6) | json_values,
        "token": st.text(max_size=40) | json_values,
        "extra": json_values,
    },
)
messages = (
    shaped.map(json.dumps)
    | json_values.map(json.dumps)
    | st.text(max_size=50)
    | st.binary(max_size=50)
    | st.text(min_size=MAX_MESSAGE - 10, max_size=MAX_MESSAGE + 200, alphabet='ab{}"')
)


class Table:
    """A service instance with a started two-guest match nobody plays."""

    def __init__(self, instance: Instance) -> None:
        self.instance = instance
        self.http = httpx.Client(base_url=instance.http, timeout=30)
        tokens = []
        for name in ("alice", "bob"):
            r = self.http.post("/api/players", json={"name": name})
            assert r.status_code == 201, r.text
            tokens.append({"Authorization": f"Bearer {r.json()['token']}"})
        r = self.http.post(
            "/api/parties",
            json={"seats": 2, "rules": {"preset": "bga"}, "client_seed": "a"},
            headers=tokens[0],
        )
        party = r.json()["id"]
        r = self.http.post(
            f"/api/parties/{party}/join", json={"client_seed": "b"}, headers=tokens[1]
        )
        assert r.status_code == 200, r.text
        r = self.http.post(f"/api/parties/{party}/start", headers=tokens[0])
        assert r.status_code == 201, r.text
        self.match_id = r.json()["match_id"]

    def version(self) -> int:
        return int(self.http.get(f"/api/matches/{self.match_id}").json()["version"])


@pytest.fixture
def table(database_url: str, tmp_path: Path) -> Iterator[Table]:
    """The match service under uvicorn on the test's database, with one idle match."""
    with Instance(_settings(tmp_path, database_url)) as instance:
        table = Table(instance)
        yield table
        table.http.close()


def _recv(ws: ClientConnection) -> dict[str, Any]:
    """The next frame but the side ones (who is connected, a stamp), which come any time."""
    while (frame := json.loads(ws.recv(timeout=30)))["type"] in ("presence", "stamp"):
        pass
    return frame  # type: ignore[no-any-return]


def _caught_up(ws: ClientConnection) -> None:
    """Read the catch-up: batch frames of event frames, the last ending with the state."""
    while True:
        frame = _recv(ws)
        assert frame["type"] == "batch", frame
        assert {f["type"] for f in frame["frames"][:-1]} <= {"event"}, frame
        if frame["frames"][-1]["type"] == "state":
            return


@settings(
    max_examples=12,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(batch=st.lists(messages, min_size=1, max_size=100))
def test_any_message_gets_one_known_reply_and_changes_nothing(
    table: Table, batch: list[str | bytes]
) -> None:
    """Every fuzzed message is answered by one reply frame (never a 500), the socket stays
    open and the match's version does not move."""
    before = table.version()
    with connect(table.instance.ws(table.match_id), max_size=None) as ws:
        _caught_up(ws)
        for message in batch:
            ws.send(message)
            frame = _recv(ws)
            assert frame["type"] in REPLIES, (message, frame)
            if frame["type"] == "error":
                assert 400 <= frame["status"] < 500, (message, frame)
            size = len(message.encode() if isinstance(message, str) else message)
            if size > MAX_MESSAGE:
                assert frame["error"] == "too_large", (message, frame)
        ws.send('{"type": "ping"}')  # still open, still answering, nothing queued before
        assert _recv(ws) == {"type": "pong"}
    assert table.version() == before
