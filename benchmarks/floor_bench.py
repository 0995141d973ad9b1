"""`ludo bench floor`: what the WebSocket stack alone costs a socket command, beside
what the match service costs one, in the same run.

A command over the match socket is, for the stack (uvicorn, `websockets`, Litestar,
uvloop), one message in and three out: the `result` frame to the sender and a `batch`
frame to each of the match's two sockets. The floor app (`app`, below) does exactly that
and nothing else: no database, no rules, frames of a command's average sizes
(`RESULT_BYTES`, `BATCH_BYTES`), served under uvicorn with the match service's own
`UVICORN_ARGS`. K pairs of sockets play it as K matches play the service: one socket sends
a command and waits for its result and its batch, the other reads its batch.

The match service runs `ludo bench service --over socket`'s load (`service_bench.drive`),
on a scratch database, without its deadline worker. The two are loaded in turn, `--rounds`
times, the order swapped each round. The floor's CPU per command over the service's is the
share of a socket command that no change above the stack can remove, and the most that a
leaner socket server could.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import platform
import statistics
import time
from typing import Any, Final

from litestar import Litestar, WebSocket, get, websocket

from benchmarks.closed_loop import closed_loop, print_rounds
from benchmarks.common import BenchError, checkpoint, scratch_db
from benchmarks.harness import Bench, Figures, Say
from benchmarks.service_process import serve
from ludo_cli.arguments import positive_float, positive_int

__all__ = ["BATCH_BYTES", "BENCH", "RESULT_BYTES", "app"]

# A socket command's frames, on average over the commands of standard 2-seat matches
# (measured 2026-12-02 from the frames `ludo bench service --over socket` reads: 2,525
# results of 294-1,046 bytes, 5,068 batches of 1,558-2,405 bytes).
RESULT_BYTES: Final = 455
BATCH_BYTES: Final = 1722


def _frame(kind: str, size: int) -> str:
    head = f'{{"type":"{kind}","pad":"'
    return head + "x" * (size - len(head) - 2) + '"}'


def app() -> Litestar:
    """The floor app (a uvicorn factory): `/ws/floor/{pair}` answers each message with
    the result frame to its sender and the batch frame to every socket of `pair`."""
    pairs: dict[str, list[WebSocket[Any, Any, Any]]] = {}
    result, batch = _frame("result", RESULT_BYTES), _frame("batch", BATCH_BYTES)

    @websocket("/ws/floor/{pair:str}")
    async def floor_socket(socket: WebSocket[Any, Any, Any], pair: str) -> None:
        await socket.accept()
        sockets = pairs.setdefault(pair, [])
        sockets.append(socket)
        try:
            while True:
                await socket.receive_text()
                await socket.send_text(result)
                for other in list(sockets):
                    await other.send_text(batch)
        except Exception:  # the client went away (the ASGI disconnect)
            return
        finally:
            sockets.remove(socket)
            if not sockets:
                del pairs[pair]

    @get("/ready", sync_to_thread=False)
    def ready() -> str:
        return "ok"

    return Litestar([floor_socket, ready])


# ---------------------------------------------------------------------------- the load


async def _pair(url: str, until: float, window: tuple[float, float], count: list[int]) -> None:
    from websockets.asyncio.client import connect

    async with (
        connect(url, compression=None, ping_interval=None, max_size=None) as sender,
        connect(url, compression=None, ping_interval=None, max_size=None) as reader,
    ):

        async def read() -> None:
            while True:
                await reader.recv(decode=False)

        drain = asyncio.create_task(read())
        try:
            while time.time() < until:
                await sender.send('{"type":"roll","id":"b1"}')
                await sender.recv(decode=False)  # the result
                await sender.recv(decode=False)  # the batch
                if window[0] <= time.time() < window[1]:
                    count[0] += 1
        finally:
            drain.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await drain


def _generator(base: str, pairs: range, ready: Any, start: Any, results: Any) -> None:
    """One load process: its `pairs`, from the agreed instant to the window's end."""
    ready.put(os.getpid())
    ws = "ws" + base.removeprefix("http")
    begin, window_from, window_until = start.get(timeout=300)

    async def run() -> int:
        count = [0]
        await asyncio.sleep(max(0.0, begin - time.time()))
        await asyncio.gather(
            *(
                _pair(f"{ws}/ws/floor/p{i}", window_until, (window_from, window_until), count)
                for i in pairs
            )
        )
        return count[0]

    results.put(asyncio.run(run()))


# --------------------------------------------------------------------------- the bench


def bench(pairs: int, seconds: float, warmup: float, rounds: int, say: Say) -> Figures:
    """The floor and the match service over the socket in turn, `rounds` times."""
    from benchmarks import service_bench as sb
    from services.shared.database import database_url
    from services.shared.settings import Settings, SettingsError

    config = sb.Config(
        matches=pairs,
        over="socket",
        seconds=seconds,
        warmup=warmup,
        pgbench=False,
        progress=False,
    )
    try:
        settings = Settings.from_env()
    except SettingsError as exc:
        raise BenchError(str(exc)) from exc
    runs: list[dict[str, Any]] = []
    with database_url(settings) as server:
        for number in range(1, rounds + 1):
            row: dict[str, Any] = {"round": number}
            for label in ("floor", "service") if number % 2 else ("service", "floor"):
                say(f"round {number} of {rounds}: {label}")
                with contextlib.ExitStack() as run:
                    db_url = run.enter_context(scratch_db(server, "ludo_bench_floor"))
                    if label == "floor":
                        base, pid = run.enter_context(
                            serve(db_url, factory=f"{__name__}:app", ready="/ready")
                        )
                        row["floor"] = closed_loop(base, pid, pairs, seconds, warmup, _generator)
                    else:
                        base, pid = run.enter_context(
                            serve(db_url, env={"LUDO_SCHEDULER": "false"})
                        )
                        checkpoint(db_url)
                        load = sb.drive(base, config, pid, db_url)
                        row["service"] = {
                            "commands": load["commands"],
                            "commands_per_s": load["commands_per_s"],
                            "cpu_ms_per_command": load["cpu_ms_per_command"]["service"],
                        }
            runs.append(row)

    def median(label: str) -> float | None:
        values = [r[label]["cpu_ms_per_command"] for r in runs if r[label]["cpu_ms_per_command"]]
        return round(statistics.median(values), 3) if values else None

    shares = [
        r["floor"]["cpu_ms_per_command"] / r["service"]["cpu_ms_per_command"]
        for r in runs
        if r["floor"]["cpu_ms_per_command"] and r["service"]["cpu_ms_per_command"]
    ]
    return {
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "pairs": pairs,
        "seconds": seconds,
        "warmup": warmup,
        "result_bytes": RESULT_BYTES,
        "batch_bytes": BATCH_BYTES,
        "rounds": runs,
        "floor_cpu_ms": median("floor"),
        "service_cpu_ms": median("service"),
        # Each round's floor ÷ service, then their median (a drift between rounds cancels).
        "floor_share": round(statistics.median(shares), 3) if shares else None,
    }


def _options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--matches", type=positive_int, default=32, help="socket pairs (K)")
    parser.add_argument("--seconds", type=positive_float, default=15.0, help="measured seconds")
    parser.add_argument("--warmup", type=positive_float, default=3.0, help="unmeasured seconds")
    parser.add_argument("--rounds", type=positive_int, default=2, help="rounds of both")


def measure(args: argparse.Namespace, say: Say) -> Figures:
    return bench(args.matches, args.seconds, args.warmup, args.rounds, say)


def print_table(r: Figures) -> None:
    print(
        f"ludo bench floor — Python {r['python']}, {r['cpus']} CPUs, {r['pairs']} "
        f"socket pairs / matches, {r['seconds']:g} s measured after {r['warmup']:g} s, frames "
        f"of {r['result_bytes']} and {r['batch_bytes']} bytes"
    )
    print_rounds(r["rounds"], ("floor", "service"))
    print(
        f"medians: the stack alone {r['floor_cpu_ms']} ms, the match service "
        f"{r['service_cpu_ms']} ms per socket command; the stack's share (the median of "
        f"the rounds' own): {r['floor_share']}"
    )


BENCH = Bench(
    name="floor",
    help="CPU per socket command of the WebSocket stack alone (uvicorn, websockets, "
    "Litestar) beside the match service's, in turn",
    options=_options,
    measure=measure,
    table=print_table,
)
