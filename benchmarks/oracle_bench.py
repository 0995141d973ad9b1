"""`ludo bench oracle`: wall time of `ludo rules moves` answering N queries through a pipe.

The queries are positions from real CPU matches (every roll of them, with its die) under
both presets, so they mix passes, entries, captures and blocks as play does. The timed run
is a separate process, start-up included, exactly as a user's pipeline would run it.
"""

from __future__ import annotations

import argparse
import hashlib
import subprocess
import sys
import tempfile
import time

import msgspec

from benchmarks.harness import Bench, Figures, Say
from domain.decider import MatchState, apply
from domain.events import DieRolled
from domain.notation import position_to_json
from domain.rules import PRESETS, ruleset_to_dict
from domain.selfplay import play_match
from ludo_cli.arguments import positive_int
from ludo_cli.progress import Progress

__all__ = ["BENCH", "make_queries", "measure", "table"]


def _options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--queries", type=positive_int, default=10_000)
    parser.add_argument("--seed", type=int, default=0)


def make_queries(count: int, seed: int = 0) -> list[bytes]:
    """`count` oracle query lines taken from the rolls of self-played matches."""
    encode = msgspec.json.Encoder().encode
    queries: list[bytes] = []
    match = 0
    with Progress(count, "making queries") as bar:
        while len(queries) < count:
            preset = tuple(PRESETS)[match % len(PRESETS)]
            players = 2 + match % 3
            server_seed = hashlib.sha256(f"oracle:{seed}:{match}".encode()).digest()
            record = play_match(PRESETS[preset], ["easy"] * players, server_seed=server_seed)
            rules = ruleset_to_dict(PRESETS[preset])
            state = MatchState()
            for event in record.events:
                if type(event) is DieRolled and len(queries) < count:
                    queries.append(
                        encode(
                            {
                                "rules": rules,
                                "position": position_to_json(state),
                                "die": event.value,
                            }
                        )
                    )
                    bar.advance()
                apply(state, event)
            match += 1
    return queries


def measure(args: argparse.Namespace, say: Say) -> Figures:
    queries = make_queries(args.queries, args.seed)
    with tempfile.TemporaryFile() as stdin:
        stdin.write(b"\n".join(queries) + b"\n")
        stdin.seek(0)
        start = time.perf_counter()
        result = subprocess.run(
            [sys.executable, "-m", "ludo_cli.main", "rules", "moves"],
            stdin=stdin,
            capture_output=True,
            check=True,
        )
        seconds = time.perf_counter() - start
    answers = result.stdout.splitlines()
    return {
        "queries": len(queries),
        "answers": len(answers),
        "seconds": round(seconds, 3),
        "queries_per_s": round(len(queries) / seconds),
        "moves": sum(len(msgspec.json.decode(line).get("moves", ())) for line in answers),
        "errors": sum(1 for line in answers if line.startswith(b'{"error"')),
    }


def table(result: Figures) -> None:
    print(
        f"ludo rules moves: {result['queries']:,} queries in {result['seconds']:.2f} s "
        f"({result['queries_per_s']:,} queries/s, process start-up included); "
        f"{result['moves']:,} moves listed, {result['errors']} errors"
    )


BENCH = Bench(
    name="oracle",
    help="queries/s of `ludo rules moves` over a pipe",
    options=_options,
    measure=measure,
    table=table,
    failed=lambda result: result["errors"] > 0 or result["answers"] != result["queries"],
)
