"""Coalesced writes (services/shared/transport.py): what is written in one turn of the
loop goes out as one write, in order, and nothing written is lost or reordered by a
close."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from services.shared.transport import CoalescedTransport

pytestmark = pytest.mark.anyio


class _Recording:
    """A transport that records each write and close."""

    def __init__(self) -> None:
        self.calls: list[Any] = []
        self.closing = False

    def write(self, data: bytes) -> None:
        self.calls.append(bytes(data))

    def close(self) -> None:
        self.calls.append("close")
        self.closing = True

    def abort(self) -> None:
        self.calls.append("abort")
        self.closing = True

    def is_closing(self) -> bool:
        return self.closing

    def get_write_buffer_size(self) -> int:
        return 0

    def get_extra_info(self, name: str) -> str:
        return f"extra:{name}"


async def _next_turn() -> None:
    """Returns after the callbacks scheduled so far have run (the flush among them)."""
    done = asyncio.get_running_loop().create_future()
    asyncio.get_running_loop().call_soon(done.set_result, None)
    await done


async def test_writes_of_one_turn_go_out_as_one() -> None:
    """Three writes in one turn: one write of the three, in order, at the turn's end."""
    real = _Recording()
    corked = CoalescedTransport(real, asyncio.get_running_loop())
    corked.write(b"head ")
    corked.writelines([b"body ", memoryview(b"tail")])
    assert real.calls == []
    assert corked.get_write_buffer_size() == len(b"head body tail")
    await _next_turn()
    assert real.calls == [b"head body tail"]
    corked.write(b"next")
    await _next_turn()
    assert real.calls == [b"head body tail", b"next"]


async def test_close_sends_what_was_written_first() -> None:
    """A close in the same turn as writes sends them, then closes; abort drops them."""
    real = _Recording()
    corked = CoalescedTransport(real, asyncio.get_running_loop())
    corked.write(b"last words")
    corked.close()
    await _next_turn()
    assert real.calls == [b"last words", "close"]

    other = _Recording()
    aborted = CoalescedTransport(other, asyncio.get_running_loop())
    aborted.write(b"dropped")
    aborted.abort()
    await _next_turn()
    assert other.calls == ["abort"]


async def test_everything_else_is_the_transports_own() -> None:
    """Attributes it does not define are the wrapped transport's."""
    corked = CoalescedTransport(_Recording(), asyncio.get_running_loop())
    assert corked.get_extra_info("peername") == "extra:peername"
