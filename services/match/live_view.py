"""One re-read per change for every socket that shows the same view (the lobby's listing).

A `LiveView` is one task per view and process: it calls `load()` at once, then again after
each hint for a stream whose id starts with its prefix (or `poll_seconds` without one, for
lost hints), at most once per `min_interval` however many hints arrive, and never missing
the last (a hint during the wait or the load sets the wake-up again, so one more round
follows). Each socket of the view gets the latest value: at once when it joins, then each
new one; a socket that is slow to send skips to the latest, which is all a listing needs.

A load that fails fails every socket of the view (a 503 frame and a close, as for the
streams' followers) and ends the view; the next socket starts a new one.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import time
from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import Any

__all__ = ["LiveView"]


class LiveView:
    """The shared value of one view, and the task that keeps it fresh."""

    def __init__(
        self,
        prefix: str,
        load: Callable[[], Awaitable[Any]],
        min_interval: float,
        poll_seconds: float,
        on_end: Callable[[LiveView], None],
    ) -> None:
        self.prefix = prefix
        self.loads = 0
        self.watchers = 0
        self._load = load
        self._min_interval = min_interval
        self._poll_seconds = poll_seconds
        self._on_end = on_end
        self._value: Any = None
        self._generation = 0  # bumped by each load; 0: nothing loaded yet
        self._error: Exception | None = None
        self._changed = asyncio.Condition()
        self._wake = asyncio.Event()
        self._task = asyncio.create_task(self._run(), name=f"view-{prefix}")

    def wake(self) -> None:
        self._wake.set()

    async def stop(self) -> None:
        self._task.cancel()
        await asyncio.gather(self._task, return_exceptions=True)

    async def values(self) -> AsyncGenerator[Any, None]:
        """The latest value now (after the first load), then each newer one."""
        seen = 0
        self.watchers += 1
        try:
            while True:
                async with self._changed:
                    while self._error is None and self._generation <= seen:
                        await self._changed.wait()
                    if self._error is not None:
                        raise self._error
                    seen, value = self._generation, self._value
                yield value
        finally:
            self.watchers -= 1
            if not self.watchers:
                self._task.cancel()
                self._on_end(self)  # at once: no socket may join a view that is ending

    async def _run(self) -> None:
        try:
            while True:
                started = time.monotonic()
                self._wake.clear()
                self.loads += 1
                value = await self._load()
                async with self._changed:
                    self._value, self._generation = value, self._generation + 1
                    self._changed.notify_all()
                # Rate limit, not synchronisation: hints meanwhile coalesce into one round.
                await asyncio.sleep(max(0.0, started + self._min_interval - time.monotonic()))
                # An infinite poll: hints only (the hub wakes every view when its
                # listener reconnects, the one time hints may have been missed).
                poll = None if math.isinf(self._poll_seconds) else self._poll_seconds
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), poll)
        except Exception as error:  # the database: every socket of the view reconnects
            async with self._changed:
                self._error = error
                self._changed.notify_all()
        finally:
            self._on_end(self)
