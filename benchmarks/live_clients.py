"""The socket holders of `ludo bench live`: one process each, a lean asyncio client.

The bench (`live_bench.py`) starts several of these (`spawn`) and talks to each over a
pipe, one request and one answer at a time:

    ("open", kind, urls, concurrency) -> {"opened": n, "failed": n}   kind: follower | idle
    ("mark",)                         -> {}   the delivery figures start over
    ("wait", version, seconds)        -> {"ok": bool}   every follower has had `version`
                                                        (an event, or a state frame past it)
    ("settled", seconds)              -> {"ok": bool}   every idle socket has had a frame
    ("stats",)                        -> {"frames", "events", "latencies_ms", "cpu_s",
                                          "open", "closed", "close_codes"}
    ("close", kind)                   -> {}   close the sockets of `kind`
    ("exit",)                         -> {}

A follower decodes only what it measures from each frame (type, version, recorded_at):
the delivery latency of an event is its arrival here (`time.time()`) minus its
`recorded_at` (PostgreSQL's `now()` of the appending transaction, same machine clock).
An idle socket reads and drops its frames.
"""

from __future__ import annotations

import asyncio
import contextlib
import resource
import time
from datetime import datetime
from typing import Any

import msgspec

__all__ = ["raise_open_files", "serve"]


class _Frame(msgspec.Struct):
    type: str
    version: int | None = None
    recorded_at: datetime | None = None
    # A batch frame's event frames and state frame (a baseline checkout from before batch
    # frames sends those one by one).
    frames: list[_Frame] = []


_decode = msgspec.json.Decoder(_Frame).decode


def raise_open_files() -> int:
    """Raise the soft limit of open files to the hard one; the new soft limit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


class _Holder:
    def __init__(self) -> None:
        self.sockets: dict[str, list[Any]] = {"follower": [], "idle": []}
        self.tasks: dict[str, list[asyncio.Task[None]]] = {"follower": [], "idle": []}
        self.last: dict[int, int] = {}  # follower index -> last event version seen
        self.progress = asyncio.Event()
        self.frames = 0
        self.events = 0
        self.latencies: list[float] = []
        self.closed = {"follower": 0, "idle": 0}  # closed by the server (or the link)
        self.frames_of: dict[int, int] = {}  # idle sockets that have had their first frame
        self.close_codes: dict[str, int] = {}  # of the sockets the server closed

    async def open(self, kind: str, urls: list[str], concurrency: int) -> dict[str, Any]:
        from websockets.asyncio.client import connect

        gate = asyncio.Semaphore(concurrency)
        failed = 0

        async def one(url: str) -> None:
            nonlocal failed
            async with gate:
                try:
                    ws = await connect(
                        url, compression=None, ping_interval=None, open_timeout=60, max_queue=None
                    )
                except Exception:
                    failed += 1
                    return
            index = len(self.sockets[kind])
            self.sockets[kind].append(ws)
            reader = self._follow(ws, index) if kind == "follower" else self._drain(ws)
            self.tasks[kind].append(asyncio.create_task(reader))

        await asyncio.gather(*(one(url) for url in urls))
        return {"opened": len(urls) - failed, "failed": failed}

    async def _follow(self, ws: Any, index: int) -> None:
        self.last[index] = -1
        try:
            async for message in ws:
                now = time.time()
                outer = _decode(message)
                self.frames += 1
                for frame in outer.frames if outer.type == "batch" else (outer,):
                    if frame.type == "event" and frame.version is not None:
                        self.events += 1
                        if frame.recorded_at is not None:
                            self.latencies.append((now - frame.recorded_at.timestamp()) * 1000)
                        self.last[index] = frame.version
                        self.progress.set()
                    elif frame.type == "state" and frame.version is not None:
                        # After the catch-up: the match as of `version` events.
                        self.last[index] = max(self.last[index], frame.version - 1)
                        self.progress.set()
        except Exception:
            pass
        self.last.pop(index, None)  # a closed socket holds no wait back: it is counted
        self.closed["follower"] += 1
        self._closed_with(ws)
        self.progress.set()

    async def _drain(self, ws: Any) -> None:
        with contextlib.suppress(Exception):
            async for _ in ws:
                if not self.frames_of.get(id(ws)):
                    self.frames_of[id(ws)] = 1
                    self.progress.set()
                self.frames += 1
        self.closed["idle"] += 1
        self._closed_with(ws)
        self.frames_of[id(ws)] = 1  # closed: nothing more to wait for
        self.progress.set()

    def _closed_with(self, ws: Any) -> None:
        key = f"{ws.close_code} {ws.close_reason or ''}".strip()
        self.close_codes[key] = self.close_codes.get(key, 0) + 1

    async def settled(self, seconds: float) -> dict[str, Any]:
        """Every idle socket has had a frame (its catch-up: the server is done with it)."""
        deadline = time.monotonic() + seconds
        while len(self.frames_of) < len(self.sockets["idle"]):
            left = deadline - time.monotonic()
            if left <= 0:
                return {"ok": False}
            self.progress.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.progress.wait(), left)
        return {"ok": True}

    async def wait(self, version: int, seconds: float) -> dict[str, Any]:
        deadline = time.monotonic() + seconds
        while any(v < version for v in self.last.values()):
            left = deadline - time.monotonic()
            if left <= 0:
                return {"ok": False}
            self.progress.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.progress.wait(), left)
        return {"ok": True}

    def mark(self) -> dict[str, Any]:
        self.frames = self.events = 0
        self.latencies = []
        return {}

    def stats(self) -> dict[str, Any]:
        usage = resource.getrusage(resource.RUSAGE_SELF)
        return {
            "frames": self.frames,
            "events": self.events,
            "latencies_ms": self.latencies,
            "cpu_s": usage.ru_utime + usage.ru_stime,
            "open": sum(len(s) for s in self.sockets.values()) - sum(self.closed.values()),
            "closed": dict(self.closed),
            "close_codes": dict(self.close_codes),
        }

    async def close(self, kind: str) -> dict[str, Any]:
        for ws in self.sockets[kind]:
            with contextlib.suppress(Exception):
                await ws.close()
        for task in self.tasks[kind]:
            task.cancel()
        await asyncio.gather(*self.tasks[kind], return_exceptions=True)
        self.sockets[kind], self.tasks[kind] = [], []
        self.closed[kind] = 0
        self.close_codes = {}
        if kind == "follower":
            self.last = {}
        else:
            self.frames_of = {}
        return {}


async def _serve(conn: Any) -> None:
    holder = _Holder()
    loop = asyncio.get_running_loop()
    while True:
        request = await loop.run_in_executor(None, conn.recv)
        verb, *args = request
        if verb == "open":
            answer = await holder.open(*args)
        elif verb == "mark":
            answer = holder.mark()
        elif verb == "wait":
            answer = await holder.wait(*args)
        elif verb == "settled":
            answer = await holder.settled(*args)
        elif verb == "stats":
            answer = holder.stats()
        elif verb == "close":
            answer = await holder.close(*args)
        else:
            for kind in holder.sockets:
                await holder.close(kind)
            conn.send({})
            return
        conn.send(answer)


def serve(conn: Any) -> None:
    """A holder process's main: answer the bench's requests on `conn` until "exit"."""
    raise_open_files()
    asyncio.run(_serve(conn))
