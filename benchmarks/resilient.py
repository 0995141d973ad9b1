"""Clients that carry on through faults, and the books that say what they were told.

What docs/api.md asks of a client, done strictly: every command carries an
`Idempotency-Key` of its own and is sent again with the same key after a connection error,
a 502/503/504 or a timeout, until an answer below 500 comes (after the seconds of the
answer's `Retry-After` when `Books.honour_retry_after`, as a browser's page does; else
at once, then backing off from 50 ms to 1 s); a match socket that closes or drops is
opened again from `?from=<last + 1>`. The balancer test
(tests/test_balancer.py) and `ludo bench faults` play through these, then check
the books against PostgreSQL (`check_matches`): every acknowledged command's events are in
its stream, at the versions the answer gave, every other event of the stream came from a
deadline (none applied twice, none lost), every socket saw each version once and in order,
every hash chain and every audit holds, and each finished ranked match is rated exactly once.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import httpx
import websockets

__all__ = [
    "RETRY_STATUSES",
    "Ack",
    "Books",
    "Follower",
    "MatchPlay",
    "call",
    "check_matches",
    "new_guest",
]

# Answers after which a command may be sent again with its key: the balancer could not
# reach an instance, or one died before answering (502), or the database is away (503).
RETRY_STATUSES = frozenset({502, 503, 504})
DEADLINE_EVENTS = frozenset({"TurnTimedOut", "SeatStoodIn"})


@dataclass
class Ack:
    """One command the service acknowledged (200): its key and the versions it appended."""

    match_id: str
    key: str
    command: str
    versions: list[int]
    hashes: list[str]
    duplicate: bool
    at: float  # time.monotonic() of the acknowledgement
    sent: float = 0.0  # time.monotonic() when it was first sent (retries after it)


@dataclass
class Books:
    """What the clients were told, and how often they had to try again; and whether they
    wait for an answer's `Retry-After` before sending again (`honour_retry_after`)."""

    honour_retry_after: bool = False
    acks: list[Ack] = field(default_factory=list)
    retries: Counter[str] = field(default_factory=Counter)
    served_by: Counter[str] = field(default_factory=Counter)
    latencies: list[float] = field(default_factory=list)
    finished: list[str] = field(default_factory=list)

    def served(self, response: httpx.Response) -> None:
        name = response.headers.get("x-served-by")
        if name:
            self.served_by[name] += 1


async def call(
    http: httpx.AsyncClient,
    books: Books,
    method: str,
    url: str,
    *,
    seconds: float = 90.0,
    **kwargs: Any,
) -> httpx.Response:
    """`method url` until it answers below 500 or not in `RETRY_STATUSES` (with the same
    headers, so a command keeps its Idempotency-Key), for at most `seconds`."""
    deadline = time.monotonic() + seconds
    pause = 0.05
    while True:
        try:
            response = await http.request(method, url, **kwargs)
        except httpx.TransportError as error:
            books.retries[type(error).__name__] += 1
            if time.monotonic() > deadline:
                raise
        else:
            books.served(response)
            if response.status_code not in RETRY_STATUSES or time.monotonic() > deadline:
                return response
            books.retries[str(response.status_code)] += 1
            told = _retry_after(response) if books.honour_retry_after else None
            if told is not None:
                await asyncio.sleep(told)
                continue
        await asyncio.sleep(pause)
        pause = min(pause * 2, 1.0)


def _retry_after(response: httpx.Response) -> float | None:
    """The seconds of the answer's `Retry-After` (delay-seconds), None without one."""
    value = response.headers.get("retry-after", "")
    return float(value) if value.isdigit() else None


async def new_guest(http: httpx.AsyncClient, books: Books, name: str) -> dict[str, str]:
    r = await call(http, books, "POST", "/api/players", json={"name": name})
    if r.status_code != 201:
        raise AssertionError(f"a guest was refused: {r.status_code} {r.text}")
    body = r.json()
    return {"Authorization": f"Bearer {body['token']}", "player_id": body["id"]}


class MatchPlay:
    """A party of `guests` people (and `cpus` CPU seats) played to the end over HTTP:
    the seat to act rolls or plays its first legal move, each command with a new key."""

    def __init__(
        self,
        http: httpx.AsyncClient,
        books: Books,
        *,
        guests: int = 2,
        cpus: int = 0,
        ranked: bool = False,
        rules: dict[str, Any] | None = None,
    ) -> None:
        self.http = http
        self.books = books
        self.guests = guests
        self.cpus = cpus
        self.ranked = ranked
        self.rules = rules or {"preset": "bga"}
        self.players: list[dict[str, str]] = []
        self.match_id = ""
        self.commands = 0

    async def open(self) -> MatchPlay:
        tag = uuid.uuid4().hex[:6]
        for i in range(self.guests):
            self.players.append(await new_guest(self.http, self.books, f"g{i}-{tag}"))
        host = self._auth(self.players[0])
        body = {
            "seats": self.guests + self.cpus,
            "rules": self.rules,
            "ranked": self.ranked,
            "client_seed": tag,
        }
        r = await self._command("POST", "/api/parties", host, json=body)
        party = r.json()["id"]
        for guest in self.players[1:]:
            seed = uuid.uuid4().hex[:8]
            url = f"/api/parties/{party}/join"
            await self._command("POST", url, self._auth(guest), json={"client_seed": seed})
        for _ in range(self.cpus):
            url = f"/api/parties/{party}/cpus"
            await self._command("POST", url, host, json={"level": "easy"})
        r = await self._command("POST", f"/api/parties/{party}/start", host)
        self.match_id = r.json()["match_id"]
        return self

    @staticmethod
    def _auth(player: dict[str, str]) -> dict[str, str]:
        return {"Authorization": player["Authorization"]}

    async def _command(
        self, method: str, url: str, headers: dict[str, str], **kwargs: Any
    ) -> httpx.Response:
        key = uuid.uuid4().hex
        started = time.monotonic()
        r = await call(
            self.http,
            self.books,
            method,
            url,
            headers={**headers, "Idempotency-Key": key},
            **kwargs,
        )
        if r.status_code not in (200, 201):
            raise AssertionError(f"{method} {url}: {r.status_code} {r.text}")
        self.books.latencies.append(time.monotonic() - started)
        body = r.json()
        if self.match_id and "events" in body:
            events = body["events"]
            self.books.acks.append(
                Ack(
                    match_id=self.match_id,
                    key=key,
                    command=url.rsplit("/", 1)[-1],
                    versions=[e["version"] for e in events],
                    hashes=[e["hash"] for e in events],
                    duplicate=bool(body.get("duplicate")),
                    at=time.monotonic(),
                    sent=started,
                )
            )
        return r

    async def step(self) -> bool:
        """One command of the seat to act; False once the match is over."""
        url = f"/api/matches/{self.match_id}"
        state = (await call(self.http, self.books, "GET", url)).json()
        if state["phase"] == "over":
            self.books.finished.append(self.match_id)
            return False
        seat = state["seats"][state["turn"]]
        mine = next((p for p in self.players if p["player_id"] == seat["player_id"]), None)
        if mine is None or seat["cpu"] or seat["stood_in"]:
            # A CPU's (or a stand-in's) turn: the deadline scheduler plays it.
            await asyncio.sleep(0.02)
            return True
        try:
            if state["phase"] == "roll":
                await self._command("POST", f"{url}/roll", self._auth(mine))
            else:
                moves = (await call(self.http, self.books, "GET", f"{url}/moves")).json()
                if moves["version"] != state["version"] or not moves["moves"]:
                    return True  # the match moved on in between: look again
                body = {"piece": moves["moves"][0]["piece"]}
                await self._command("POST", f"{url}/move", self._auth(mine), json=body)
        except AssertionError as refused:
            # Out of turn or stale (a CPU or a deadline acted first): look again.
            if '"conflict"' in str(refused) or "not_your_turn" in str(refused):
                return True
            raise
        self.commands += 1
        return True

    async def play(self, stop: asyncio.Event | None = None) -> None:
        while await self.step():
            if stop is not None and stop.is_set():
                return


class Follower:
    """A match socket through `ws_base` that reconnects from `last + 1` until it has seen
    the end of the match (or `stop()`): `versions` every event version received, in order."""

    def __init__(self, ws_base: str, match_id: str) -> None:
        self.url = f"{ws_base}/ws/matches/{match_id}"
        self.versions: list[int] = []
        self.hashes: dict[int, str] = {}
        self.reconnects = 0
        self.drops: Counter[str] = Counter()  # why each connection ended or failed
        self.served_by: list[str] = []  # the instance of each connection, in order
        self.over = asyncio.Event()
        self._stopped = False
        self._task: asyncio.Task[None] | None = None

    def start(self) -> Follower:
        self._task = asyncio.create_task(self._run())
        return self

    async def _run(self) -> None:
        pause = 0.1  # doubled after each failed attempt, up to 2 s (as the page does)
        while not self._stopped:
            since = self.versions[-1] + 1 if self.versions else 0
            try:
                async with websockets.connect(f"{self.url}?from={since}") as ws:
                    if ws.response is not None:
                        self.served_by.append(ws.response.headers.get("X-Served-By", "?"))
                    async for raw in ws:
                        outer = json.loads(raw)
                        if outer["type"] != "error":
                            pause = 0.1  # as the page: only a socket that carries resets it
                        for frame in outer["frames"] if outer["type"] == "batch" else [outer]:
                            if frame["type"] == "event":
                                self.versions.append(frame["version"])
                                self.hashes[frame["version"]] = frame["hash"]
                            elif frame["type"] == "state" and frame["match"]["phase"] == "over":
                                self.over.set()
                                return
                self.drops[f"closed {ws.close_code}"] += 1
            except websockets.InvalidStatus as refused:
                self.drops[f"refused {refused.response.status_code}"] += 1
            except websockets.ConnectionClosed as closed:
                self.drops[f"dropped {closed.rcvd.code if closed.rcvd else 'without close'}"] += 1
            except (TimeoutError, OSError, websockets.WebSocketException) as error:
                self.drops[type(error).__name__] += 1
            if self._stopped:
                return
            self.reconnects += 1
            await asyncio.sleep(pause)
            pause = min(pause * 2, 2.0)

    async def stop(self) -> None:
        self._stopped = True
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task


async def check_matches(
    http: httpx.AsyncClient,
    books: Books,
    followers: list[Follower] | None = None,
) -> dict[str, Any]:
    """The books against the service's own record; returns the figures, and a list of
    `problems` (empty when every acknowledged command is in its stream once, every other
    command-made event is absent, every follower saw each version once and in order, and
    every match's audit holds)."""
    problems: list[str] = []
    by_match: dict[str, list[Ack]] = {}
    for ack in books.acks:
        by_match.setdefault(ack.match_id, []).append(ack)
    audited = 0
    for match_id, acks in by_match.items():
        r = await call(http, books, "GET", f"/api/matches/{match_id}/events")
        stored = {e["version"]: e for e in r.json()["events"]}
        claimed: dict[int, str] = {}
        keys = Counter(a.key for a in acks)
        problems += [
            f"{match_id}: key {k} acknowledged {n} times" for k, n in keys.items() if n > 1
        ]
        for ack in acks:
            for version, digest in zip(ack.versions, ack.hashes, strict=True):
                if version in claimed:
                    problems.append(f"{match_id} v{version}: claimed by two commands")
                claimed[version] = ack.key
                if version not in stored:
                    problems.append(f"{match_id} v{version}: acknowledged, not stored (lost)")
                elif stored[version]["hash"] != digest:
                    problems.append(f"{match_id} v{version}: stored event differs from the ack")
        problems += _unclaimed(match_id, stored, claimed)
        audit = (await call(http, books, "GET", f"/api/matches/{match_id}/audit")).json()
        audited += 1
        if not audit.get("ok"):
            problems.append(f"{match_id}: audit failed: {audit.get('failure')}")
    reconnects = 0
    drops: Counter[str] = Counter()
    for follower in followers or []:
        reconnects += follower.reconnects
        drops.update(follower.drops)
        expected = list(range(len(follower.versions)))
        if follower.versions != expected:
            seen = Counter(follower.versions)
            twice = sorted(v for v, n in seen.items() if n > 1)
            missing = sorted(set(expected) - set(follower.versions))
            problems.append(f"{follower.url}: versions twice {twice[:5]}, missing {missing[:5]}")
    return {
        "matches": len(by_match),
        "acknowledged": len(books.acks),
        "duplicates_answered": sum(a.duplicate for a in books.acks),
        "audited": audited,
        "reconnects": reconnects,
        "socket_drops": dict(drops),
        "retries": dict(books.retries),
        "problems": problems,
    }


def _unclaimed(match_id: str, stored: dict[int, Any], claimed: dict[int, str]) -> list[str]:
    """Events no acknowledged command claims, other than the scheduler's: a CPU's (or a
    stand-in's) actions, timeouts, and what ends a turn or the match after them. A human's
    command's events always reach an acknowledgement, or the client would have retried."""
    if not claimed:
        return []
    first = min(claimed)
    created = stored.get(0, {}).get("data", {})
    machine = {i for i, seat in enumerate(created.get("seats", [])) if seat.get("cpu")}
    problems = []
    scheduled = False  # the last unclaimed event was the scheduler's
    for version in sorted(stored):
        event = stored[version]
        kind, seat = event["type"], event["data"].get("seat")
        if kind == "SeatStoodIn":
            machine.add(seat)
        elif kind == "SeatReclaimed":
            machine.discard(seat)
        if version <= first or version in claimed:
            scheduled = False
            continue
        if kind in DEADLINE_EVENTS or seat in machine or (seat is None and scheduled):
            scheduled = True
        else:
            problems.append(f"{match_id} v{version} {kind}: no command claims it")
    return problems
