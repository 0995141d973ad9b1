"""A closed-loop load of a bare app, for the benches that set one beside the match
service (`ludo bench floor`'s socket pairs, `ludo bench service`'s stack floor): two load
processes start together at an agreed instant, each client sends one command at a time,
and the server's own CPU over the window is divided by the commands answered in it."""

from __future__ import annotations

import multiprocessing
import queue
import time
from collections.abc import Callable
from typing import Any

from benchmarks.common import BenchError, reap
from benchmarks.service_process import cpu_seconds

__all__ = ["closed_loop", "print_rounds"]


def closed_loop(
    base: str,
    pid: int,
    pairs: int,
    seconds: float,
    warmup: float,
    generator: Callable[[str, range, Any, Any, Any], None],
) -> dict[str, Any]:
    """Commands/s and the server's CPU per command, `pairs` pairs (or clients) from two
    processes, each a `generator` (base URL, its share, then the queues: it says it is
    ready, takes the instants, puts the commands it counted in the window)."""
    if not cpu_seconds({"server": [pid]}):
        raise BenchError("the bench needs psutil, for the server's CPU: pip install psutil")
    ctx = multiprocessing.get_context("spawn")
    ready, starts, results = ctx.Queue(), [ctx.Queue(), ctx.Queue()], ctx.Queue()
    half = (pairs + 1) // 2
    shares = [range(half), range(half, pairs)]
    procs = [
        ctx.Process(target=generator, args=(base, share, ready, start, results), daemon=True)
        for share, start in zip(shares, starts, strict=True)
        if share
    ]
    for proc in procs:
        proc.start()
    try:
        for _ in procs:
            ready.get(timeout=120)  # imported and waiting
        begin = time.time() + 0.2
        window_from, window_until = begin + warmup, begin + warmup + seconds
        for start in starts[: len(procs)]:
            start.put((begin, window_from, window_until))
        time.sleep(max(0.0, window_from - time.time()))
        before = cpu_seconds({"server": [pid]})["server"]
        time.sleep(max(0.0, window_until - time.time()))
        after = cpu_seconds({"server": [pid]})["server"]
        commands = sum(results.get(timeout=seconds + 60) for _ in procs)
    except queue.Empty:
        raise BenchError("a load process did not answer in time") from None
    finally:
        reap(procs)
    cpu = after - before
    return {
        "commands": commands,
        "commands_per_s": round(commands / seconds, 1),
        "cpu_ms_per_command": round(cpu / commands * 1000, 3) if commands else None,
    }


def print_rounds(rows: list[dict[str, Any]], labels: tuple[str, ...]) -> None:
    """One line per run of each round: its commands/s and server CPU per command."""
    print(f"{'round':<6}{'app':<9}{'commands/s':>11}  {'server CPU ms per command':>26}")
    for row in rows:
        for label in labels:
            run = row[label]
            cpu = run["cpu_ms_per_command"]
            print(
                f"{row['round']:<6}{label:<9}{run['commands_per_s']:>11,.1f}  "
                f"{'-' if cpu is None else f'{cpu:.3f}':>26}"
            )
