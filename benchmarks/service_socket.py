"""`ludo bench service --over socket`: a match task that plays over the match socket.

The set-up is over HTTP, as in the HTTP mode (two guests, a 2-seat party, started). Then
the task opens `/ws/matches/{id}?from=0` once per seat and says `hello` with that seat's
token, as the table page does. It sends the seat to act's `roll`, or its first legal
`move`, on that seat's socket with an `id` (the page sends one with every command, so the
service records it for idempotency), and waits for the `result` frame: the latency is send
to result. It follows the match from the event frames of seat 0's socket (each batch frame
holds the event frames of one read and the state frame after them), folded with the
domain's `apply`; seat 1's socket is read as well (the service fans every batch out to
both) and its batches are dropped. Before the next command it waits until
the fold has reached the result's version. After an error frame, or a fold that does not
catch up in time, it reads the events again over HTTP, as the HTTP mode does.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from typing import Any

import msgspec

from benchmarks.match_load import Load, SetupFailed, fold_events, new_match, request
from domain.decider import MatchState, apply, current_legal_moves
from domain.events import Event

__all__ = ["play_over_socket"]

_WAIT_S = 30.0  # for a reply or the fold to catch up; past it the task reads over HTTP


class _Frame(msgspec.Struct):
    """What the task reads of a frame; the rest (a state frame's match) is skipped."""

    type: str
    version: int | None = None
    id: str | None = None
    status: int | None = None
    error: str | None = None
    data: msgspec.Raw = msgspec.Raw(b"")
    frames: list[_Frame] = []  # a batch frame's event frames and state frame


_decode_frame = msgspec.json.Decoder(_Frame).decode
# The frames of the match's feed: batch frames, or (a baseline checkout from before them)
# event and state frames one by one.
_FEED = ("batch", "event", "state")
# The match socket's side frames (quick-chat stamps, who is connected): not the feed, and
# no answer to a command.
_SIDE = ("presence", "stamp")
_decode_event = msgspec.json.Decoder(Event).decode


class _Closed(Exception):
    pass


class _Seats:
    """The two sockets of one match, their readers, and the fold of seat 0's events."""

    def __init__(self) -> None:
        self.state = MatchState()
        self.head: int | None = None  # the version of the last state frame on seat 0
        self.changed = asyncio.Event()
        self.sockets: list[Any] = []
        self.replies: list[asyncio.Queue[_Frame]] = []
        self.readers: list[asyncio.Task[None]] = []

    async def open(self, url: str, tokens: list[str]) -> None:
        from websockets.asyncio.client import connect

        for seat, token in enumerate(tokens):
            try:
                # Offering permessage-deflate as every browser does: a server that took
                # it would compress each frame for each socket, and the figures say so.
                ws = await connect(
                    url, compression="deflate", ping_interval=None, max_size=None, open_timeout=30
                )
            except Exception as exc:
                raise SetupFailed(f"connect {url}: {type(exc).__name__}") from exc
            self.sockets.append(ws)
            self.replies.append(asyncio.Queue())
            self.readers.append(asyncio.create_task(self._read(seat, ws)))
            await ws.send(msgspec.json.encode({"type": "hello", "token": token}).decode())
        for seat in range(len(tokens)):
            try:
                frame = await self.reply(seat, None)
            except _Closed as exc:
                raise SetupFailed(f"hello: {exc}") from exc
            if frame.type != "hello":
                raise SetupFailed(f"hello: {frame.type} {frame.status} {frame.error}")
        if not await self.wait(lambda: self.head is not None and self.state.version >= self.head):
            raise SetupFailed("no state frame after the catch-up")

    async def _read(self, seat: int, ws: Any) -> None:
        follow = seat == 0
        with contextlib.suppress(Exception):
            while True:
                frame = _decode_frame(await ws.recv(decode=False))
                if frame.type in _SIDE:
                    continue
                if frame.type not in _FEED:
                    self.replies[seat].put_nowait(frame)
                    continue
                if not follow:
                    continue
                for inner in frame.frames if frame.type == "batch" else (frame,):
                    if inner.type == "event" and inner.version == self.state.version:
                        apply(self.state, _decode_event(inner.data))
                    elif inner.type == "state" and inner.version is not None:
                        self.head = inner.version
                self.changed.set()

    async def wait(self, ready: Callable[[], bool]) -> bool:
        """Until `ready()` holds (True) or `_WAIT_S` passed (False)."""
        deadline = time.monotonic() + _WAIT_S
        while not ready():
            self.changed.clear()
            try:
                await asyncio.wait_for(self.changed.wait(), deadline - time.monotonic())
            except TimeoutError:
                return False
        return True

    async def reach(self, version: int) -> bool:
        """Until the fold has `version` events (True) or `_WAIT_S` passed (False)."""
        return await self.wait(lambda: self.state.version >= version)

    async def reply(self, seat: int, key: str | None) -> _Frame:
        """The next hello, result or error frame on `seat`'s socket answering `key`
        (a late answer to an earlier command is dropped)."""
        deadline = time.monotonic() + _WAIT_S
        while True:
            if self.readers[seat].done() and self.replies[seat].empty():
                raise _Closed("the socket closed")
            try:
                frame = await asyncio.wait_for(
                    self.replies[seat].get(), min(1.0, deadline - time.monotonic())
                )
            except TimeoutError:
                if time.monotonic() >= deadline:
                    raise _Closed("no answer in time") from None
                continue
            if frame.type == "hello" or frame.id == key:
                return frame

    async def close(self) -> None:
        for ws in self.sockets:
            with contextlib.suppress(Exception):
                await ws.close()
        for reader in self.readers:
            reader.cancel()
        await asyncio.gather(*self.readers, return_exceptions=True)


async def play_over_socket(
    client: Any,
    ws_base: str,
    load: Load,
    rules: dict[str, Any],
    budget: int,
    on_command: Callable[[], None],
) -> None:
    """One match after another until `load.stop`, each played over its two sockets."""
    while not load.stop:
        seats = _Seats()
        try:
            match_id, auths = await new_match(client, load, rules)
            await seats.open(
                f"{ws_base}/ws/matches/{match_id}?from=0",
                [auth.removeprefix("Bearer ") for auth in auths],
            )
        except SetupFailed as exc:
            await seats.close()
            load.setup_errors[str(exc)[:120]] += 1
            await asyncio.sleep(0.1)
            continue
        load.matches_started += 1
        try:
            if await _play_match(
                client, f"/api/matches/{match_id}", seats, load, budget, on_command
            ):
                load.matches_finished += 1
                load.finished_ids.append(match_id)
        finally:
            await seats.close()


async def _play_match(
    client: Any,
    base: str,
    seats: _Seats,
    load: Load,
    budget: int,
    on_command: Callable[[], None],
) -> bool:
    """Commands until the match ends (True), the budget is spent or the time is up."""
    for n in range(budget):
        if load.stop:
            return False
        state = seats.state
        if state.status == "finished":
            return True
        moves = current_legal_moves(state)
        key = f"b{n}"
        message: dict[str, Any] = (
            {"type": "move", "piece": moves[0].piece, "id": key}
            if moves
            else {"type": "roll", "id": key}
        )
        seat = state.turn
        start = time.perf_counter()
        await seats.sockets[seat].send(msgspec.json.encode(message).decode())
        if load.measuring:
            load.requests += 1
        try:
            frame = await seats.reply(seat, key)
        except _Closed as exc:
            load.errors[f"{message['type']} {exc}"] += 1
            return False
        elapsed = time.perf_counter() - start
        if frame.type == "result" and frame.version is not None:
            load.commands_total += 1
            if load.measuring:
                load.latencies.append(elapsed)
                on_command()
            if await seats.reach(frame.version):
                continue
            reason = "the event frames did not catch up"
        elif frame.error == "match_finished":
            return True
        else:
            reason = f"{frame.status} {frame.error}"
        if load.measuring:
            load.errors[f"{message['type']} {reason}"] += 1
        if not await _reread(client, base, seats, load):
            return False
    return False


async def _reread(client: Any, base: str, seats: _Seats, load: Load) -> bool:
    """The fold again from `GET /events` (the socket's later frames continue it)."""
    status, body, _ = await request(client, load, "GET", f"{base}/events")
    if status != 200:
        load.errors[f"GET /events {status}"] += 1
        return False
    seats.state = fold_events(body["events"])
    return True
