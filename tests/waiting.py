"""Waiting for something another process or task will do: `wait_until(predicate, timeout)`.

The one way the tests wait for a condition they cannot be told about (a row another
process writes, a server coming up, a rating the ranking service makes on its own). It
asks `predicate` again and again, with a short pause between asks, until it returns a
truthy value (which it returns), and fails the test naming `what` after `timeout` seconds.
The timeout bounds a wait that went wrong; no test asserts how long a wait took.

Where the test can be told (an `asyncio.Event`, a socket frame, a lock another
transaction holds: `tests/pg_waits.py`), it waits on that instead of asking.

`wait_until` is for async tests (the predicate may be sync or async);
`wait_until_sync` is the same for the sync ones (Playwright's sync API, threads)."""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar, overload

__all__ = ["wait_until", "wait_until_sync"]

T = TypeVar("T")

# Between two asks: often enough that a test does not idle, seldom enough that asking
# (usually a query or a request) does not load the machine it waits on.
PAUSE = 0.02


@overload
async def wait_until(
    predicate: Callable[[], Awaitable[T | None]],
    timeout: float = ...,
    *,
    what: str = ...,
    pause: float = ...,
) -> T: ...


@overload
async def wait_until(
    predicate: Callable[[], T | None],
    timeout: float = ...,
    *,
    what: str = ...,
    pause: float = ...,
) -> T: ...


async def wait_until(
    predicate: Callable[[], Any],
    timeout: float = 30.0,
    *,
    what: str = "the condition",
    pause: float = PAUSE,
) -> Any:
    """The first truthy value of `predicate()`, asked until `timeout` seconds pass."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if inspect.isawaitable(value):
            value = await value
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout:g} s: {what}")
        await asyncio.sleep(pause)


def wait_until_sync(
    predicate: Callable[[], T | None],
    timeout: float = 30.0,
    *,
    what: str = "the condition",
    pause: float = PAUSE,
) -> T:
    """`wait_until` for sync code: the first truthy value of `predicate()`."""
    deadline = time.monotonic() + timeout
    while not (value := predicate()):
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout:g} s: {what}")
        time.sleep(pause)
    return value
