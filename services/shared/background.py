"""Background tasks tied to a service's lifespan, and work run side by side."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Coroutine
from typing import Any

__all__ = ["first_of", "run_in_background"]


def run_in_background(
    stack: contextlib.AsyncExitStack, work: Coroutine[Any, Any, None], name: str
) -> asyncio.Task[None]:
    """Start `work` as a task; leaving `stack` cancels it and waits until it has stopped."""
    task = asyncio.create_task(work, name=name)

    async def stop() -> None:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    stack.push_async_callback(stop)
    return task


async def first_of(*work: Coroutine[Any, Any, None]) -> None:
    """Run `work` side by side until one ends; re-raise its error as is (not in a group:
    a socket's 503 frame needs to see a database error), cancel the rest."""
    tasks = [asyncio.ensure_future(w) for w in work]
    try:
        done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        for task in done:
            task.result()
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
