"""Background tasks tied to a service's lifespan."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Coroutine
from typing import Any

__all__ = ["run_in_background"]


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
