"""What a match task of `ludo bench service` does over HTTP in either mode (`--over http`
in service_bench.py, `--over socket` in service_socket.py): its record of the load, one
request, a new match's set-up (two guests, a 2-seat party, started) and the fold of the
events an answer holds."""

from __future__ import annotations

import time
from collections import Counter
from typing import Any

import msgspec

from benchmarks.http1 import Http1, Http1Error
from domain.decider import MatchState, apply
from domain.events import Event

__all__ = ["Load", "SetupFailed", "fold_events", "new_match", "request"]


class SetupFailed(Exception):
    """A match could not be set up (the message says which request and its answer)."""


class Load:
    """What the match tasks record."""

    def __init__(self) -> None:
        self.measuring = False
        self.stop = False
        self.latencies: list[float] = []  # seconds, 200 roll/move POSTs in the window
        self.errors: Counter[str] = Counter()  # roll/move POSTs that failed, by reason
        self.setup_errors: Counter[str] = Counter()
        self.commands_total = 0  # 200 roll/move POSTs, warm-up included
        self.requests = 0  # every request in the window (GETs and set-up too)
        self.matches_started = 0
        self.matches_finished = 0
        self.finished_ids: list[str] = []
        self.window = 0.0
        self.cpu: dict[str, Any] = {}


async def request(
    client: Http1, load: Load, method: str, url: str, **kwargs: Any
) -> tuple[int, Any, float]:
    """(status, JSON body or None, seconds); status 0 for a transport error."""
    start = time.perf_counter()
    try:
        status, raw = await client.request(method, url, **kwargs)
    except Http1Error:
        return 0, "transport error", time.perf_counter() - start
    elapsed = time.perf_counter() - start
    if load.measuring:
        load.requests += 1
    try:
        body = msgspec.json.decode(raw) if raw else None
    except msgspec.DecodeError:
        body = None
    return status, body, elapsed


async def new_match(client: Any, load: Load, rules: dict[str, Any]) -> tuple[str, list[str]]:
    """Two guests at a 2-seat party, started: (match_id, [auth of seat 0, seat 1])."""
    auths = []
    for name in ("bench-a", "bench-b"):
        status, body, _ = await request(client, load, "POST", "/api/players", json={"name": name})
        if status != 201:
            raise SetupFailed(f"POST /api/players: {status} {body}")
        auths.append(f"Bearer {body['token']}")
    status, body, _ = await request(
        client,
        load,
        "POST",
        "/api/parties",
        json={"seats": 2, "rules": rules, "client_seed": "bench-a"},
        headers={"Authorization": auths[0]},
    )
    if status != 201:
        raise SetupFailed(f"POST /api/parties: {status} {body}")
    party = body["id"]
    status, body, _ = await request(
        client,
        load,
        "POST",
        f"/api/parties/{party}/join",
        json={"client_seed": "bench-b"},
        headers={"Authorization": auths[1]},
    )
    if status != 200:
        raise SetupFailed(f"POST /api/parties/…/join: {status} {body}")
    status, body, _ = await request(
        client, load, "POST", f"/api/parties/{party}/start", headers={"Authorization": auths[0]}
    )
    if status != 201:
        raise SetupFailed(f"POST /api/parties/…/start: {status} {body}")
    return body["match_id"], auths


def fold_events(events: list[dict[str, Any]], state: MatchState | None = None) -> MatchState:
    """`state` (a new one when None) after the events of an API answer."""
    state = MatchState() if state is None else state
    for event in events:
        apply(state, msgspec.convert(event["data"], Event))
    return state
