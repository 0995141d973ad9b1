"""`ludo bench floor`: the floor app does a socket command's frames and nothing else,
and the bench loads it and the match service in turn. Figures are not checked (the machine
decides them), only that both carried commands and the report adds up."""

from __future__ import annotations

import asyncio

import pytest
from websockets.asyncio.client import connect

from benchmarks.floor_bench import BATCH_BYTES, RESULT_BYTES, bench, print_table
from benchmarks.service_process import serve


@pytest.mark.slow
def test_the_floor_answers_a_command_as_the_match_socket_does() -> None:
    """A message on one socket of a pair brings its sender a result frame and then a batch
    frame, and the pair's other socket the same batch frame, of a command's sizes."""
    # The floor has no database: the URL is passed on, never used.
    with serve("postgresql://unused", factory="benchmarks.floor_bench:app", ready="/ready") as (
        base,
        _pid,
    ):
        url = "ws" + base.removeprefix("http") + "/ws/floor/p0"

        async def command() -> tuple[list[bytes], bytes]:
            async with connect(url) as sender, connect(url) as other:
                await sender.send('{"type":"roll","id":"b1"}')
                frames = [await sender.recv(decode=False) for _ in range(2)]
                return frames, await other.recv(decode=False)

        (result, batch), seen = asyncio.run(command())
    assert result.startswith(b'{"type":"result"') and len(result) == RESULT_BYTES
    assert batch.startswith(b'{"type":"batch"') and len(batch) == BATCH_BYTES
    assert seen == batch


@pytest.mark.slow
def test_the_bench_loads_the_floor_and_the_service_in_turn(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """One round: both apps carry commands, and the stack's share is the round's floor
    CPU per command over the service's."""
    result = bench(pairs=2, seconds=1.5, warmup=0.5, rounds=1, say=lambda _line: None)
    (row,) = result["rounds"]
    for label in ("floor", "service"):
        assert row[label]["commands"] > 0
        assert row[label]["cpu_ms_per_command"] > 0
    floor, service = row["floor"]["cpu_ms_per_command"], row["service"]["cpu_ms_per_command"]
    assert result["floor_share"] == round(floor / service, 3)
    print_table(result)
    assert "the stack's share" in capsys.readouterr().out
