"""`ludo bench replay`: how many replay files `ludo replay verify` checks per second, on one
core, and where the time goes.

It self-plays N matches (not timed), writes each as replay-file bytes, then times the full
verification of each file from its bytes (parse, hash chain, decode, dice, re-deciding
every command, placements) exactly as `ludo replay verify` runs it. In the same run it
times each stage alone, and as a floor, one sha256 over each whole file: the least any
integrity check of the same bytes must cost. Nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import hashlib
import platform
import time
from collections.abc import Callable
from typing import Any

import msgspec

from benchmarks.harness import Bench, Figures, Say
from domain.chain import first_break
from domain.engine_form import engine_form
from domain.events import CpuLevel, SeedRevealed
from domain.rules import parse_ruleset
from domain.selfplay import play_match
from ludo_cli.arguments import positive_int, rules_json, seats
from ludo_cli.progress import Progress
from replays.format import ReplayFile, dump_replay, load_replay, replay_from_events
from replays.verify import verify_replay

__all__ = ["BENCH", "measure", "table"]


def _options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--matches", type=positive_int, default=200, help="replay files to verify")
    parser.add_argument(
        "--seats",
        type=seats,
        default=seats("easy,easy,easy,easy"),
        help="CPU level per seat (2-4 of easy, normal, hard; default four easy)",
    )
    parser.add_argument(
        "--rules", type=rules_json, default='{"preset": "standard"}', help="ruleset JSON"
    )
    parser.add_argument("--seed", type=int, default=0)


def _files(args: argparse.Namespace) -> list[bytes]:
    ruleset = parse_ruleset(msgspec.json.decode(args.rules))
    levels: tuple[CpuLevel, ...] = args.seats
    files = []
    with Progress(args.matches, "  play") as bar:
        for i in range(args.matches):
            seed = hashlib.sha256(f"bench-replay:{args.seed}:{i}".encode()).digest()
            match = play_match(ruleset, levels, server_seed=seed, cpu_seed=str(i))
            events = [*match.events, SeedRevealed(server_seed=seed.hex())]
            match_id = f"00000000-0000-4000-8000-{i:012d}"
            files.append(dump_replay(replay_from_events(match_id, events)))
            bar.advance()
    return files


def _time(label: str, files: list[bytes], work: Callable[[bytes], object]) -> float:
    with Progress(len(files), f"{label:>6}") as bar:
        start = time.perf_counter()
        for raw in files:
            work(raw)
            bar.advance()
        return time.perf_counter() - start


def measure(args: argparse.Namespace, say: Say) -> Figures:
    files = _files(args)
    replays = [load_replay(raw) for raw in files]
    events = sum(len(r.events) for r in replays)
    failures = 0

    def verify(raw: bytes) -> None:
        nonlocal failures
        failures += not verify_replay(load_replay(raw)).ok

    full = _time("verify", files, verify)
    by_raw = dict(zip(map(id, files), replays, strict=True))
    stages = {
        "parse": _time("parse", files, load_replay),
        "hash chain": _time("chain", files, lambda raw: _chain_only(by_raw[id(raw)])),
        "sha256 of the file (floor)": _time("sha256", files, hashlib.sha256),
    }
    n = len(files)
    result: dict[str, Any] = {
        "python": platform.python_version(),
        "engine": engine_form(),
        "machine": platform.machine(),
        "rules": args.rules,
        "seats": ",".join(args.seats),
        "matches": n,
        "events": events,
        "failures": failures,
        "matches_per_s": round(n / full, 1),
        "events_per_s": round(events / full),
        "ms_per_match": round(full / n * 1000, 2),
        "stages_ms_per_match": {k: round(v / n * 1000, 3) for k, v in stages.items()},
    }
    return result


def table(result: Figures) -> None:
    pinned = result["pinned_to_one_core"]
    n, events = result["matches"], result["events"]
    print(
        f"ludo bench replay — Python {result['python']} ({result['machine']}), "
        f"{result['engine']} engine, "
        f"{'pinned to one core' if pinned else 'not pinned'}, rules {result['rules']}, "
        f"seats {result['seats']}"
    )
    print(
        f"verified {n} files ({events / n:,.0f} events each): {result['matches_per_s']:,} "
        f"matches/s, {result['events_per_s']:,} events/s, {result['ms_per_match']} ms per "
        f"match; {result['failures']} failed"
    )
    for stage, ms in result["stages_ms_per_match"].items():
        print(f"  {stage:<28}{ms:>9.3f} ms per match")


BENCH = Bench(
    name="replay",
    help="replay files verified per second on one core, by stage, vs sha256",
    options=_options,
    measure=measure,
    table=table,
    failed=lambda result: result["failures"] > 0,
    pin=True,
)


def _chain_only(replay: ReplayFile) -> object:
    return first_break(e.link(replay.stream_id) for e in replay.events)
