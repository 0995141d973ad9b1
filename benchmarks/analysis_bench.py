"""`ludo bench analysis`: the CPU time of a match's analysis (`domain.analysis.analyse`,
docs/analysis.md) beside the time to verify the same replay file, per match, on one core.

It self-plays N matches between mixed CPU levels (not timed; by default four players under
the `standard` rules, where the learned network values positions, the levels `hard`,
`normal`, `easy` rotated over the seats), writes each as replay-file bytes, then for each
file measures with `time.process_time`:

- *analyse*: the file parsed, its events decoded and `analyse`d, as `ludo replay analyse
  FILE` computes it;
- *verify*: `replays.verify.verify_replay` of the file parsed, as `ludo replay verify`.

It prints p50, p90 and the maximum per match of each, the rolls, moves and choices (two or
more different moves) per match, and the ratio analyse / verify. The target (docs/
analysis.md): a 4-player match of about 300 decisions analysed within 2 s of CPU with the
compiled engine. Nothing here asserts a time; a file that does not verify is a failure.
"""

from __future__ import annotations

import argparse
import hashlib
import platform
import time
from typing import Any

import msgspec

from benchmarks.harness import Bench, Figures, Say
from domain.analysis import EVALUATOR, analyse
from domain.engine_form import engine_form
from domain.events import CpuLevel, PieceMoved, SeedRevealed
from domain.rules import parse_ruleset
from domain.selfplay import play_match
from ludo_cli.arguments import positive_int, rules_json, seats
from ludo_cli.progress import Progress
from replays.format import dump_replay, load_replay, replay_from_events
from replays.verify import verify_replay

__all__ = ["BENCH", "measure", "table"]


def _options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--matches", type=positive_int, default=30, help="matches to analyse")
    parser.add_argument(
        "--seats",
        type=seats,
        default=seats("hard,normal,easy,normal"),
        help="CPU levels, rotated over the seats match by match (2-4 of easy, normal, hard; "
        "default hard,normal,easy,normal)",
    )
    parser.add_argument(
        "--rules", type=rules_json, default='{"preset": "standard"}', help="ruleset JSON"
    )
    parser.add_argument("--seed", type=int, default=0)


def _files(args: argparse.Namespace) -> list[bytes]:
    ruleset = parse_ruleset(msgspec.json.decode(args.rules))
    levels: tuple[CpuLevel, ...] = args.seats
    n = len(levels)
    files = []
    with Progress(args.matches, "  play") as bar:
        for i in range(args.matches):
            seed = hashlib.sha256(f"bench-analysis:{args.seed}:{i}".encode()).digest()
            rotated = [levels[(s + i) % n] for s in range(n)]
            match = play_match(
                ruleset, rotated, server_seed=seed, cpu_seed=str(i), first_seat=i % n
            )
            events = [*match.events, SeedRevealed(server_seed=seed.hex())]
            match_id = f"00000000-0000-4000-8000-{i:012d}"
            files.append(dump_replay(replay_from_events(match_id, events)))
            bar.advance()
    return files


def _percentiles(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    n = len(ordered)

    def at(q: float) -> float:
        return ordered[min(n - 1, int(q * n))]

    return {"p50": round(at(0.5), 4), "p90": round(at(0.9), 4), "max": round(ordered[-1], 4)}


def measure(args: argparse.Namespace, say: Say) -> Figures:
    files = _files(args)
    analyse_s: list[float] = []
    verify_s: list[float] = []
    rolls: list[int] = []
    moves: list[int] = []
    choices: list[int] = []
    failures = 0
    with Progress(len(files), "  time") as bar:
        for raw in files:
            start = time.process_time()
            events = [e.event() for e in load_replay(raw).events]
            analysis = analyse(events)
            analyse_s.append(time.process_time() - start)
            start = time.process_time()
            failures += not verify_replay(load_replay(raw)).ok
            verify_s.append(time.process_time() - start)
            rolls.append(len(analysis.rolls))
            moves.append(sum(isinstance(e, PieceMoved) and e.die is not None for e in events))
            choices.append(len(analysis.decisions))
            bar.advance()
    n = len(files)
    result: dict[str, Any] = {
        "python": platform.python_version(),
        "engine": engine_form(),
        "machine": platform.machine(),
        "evaluator": EVALUATOR,
        "rules": args.rules,
        "seats": ",".join(args.seats),
        "matches": n,
        "failures": failures,
        "rolls_per_match": round(sum(rolls) / n, 1),
        "moves_per_match": round(sum(moves) / n, 1),
        "choices_per_match": round(sum(choices) / n, 1),
        "analyse_s": _percentiles(analyse_s),
        "verify_s": _percentiles(verify_s),
        "analyse_mean_s": round(sum(analyse_s) / n, 4),
        "verify_mean_s": round(sum(verify_s) / n, 4),
        "ratio": round(sum(analyse_s) / sum(verify_s), 1) if sum(verify_s) > 0 else None,
        "ms_per_roll": round(sum(analyse_s) / sum(rolls) * 1000, 3) if sum(rolls) else None,
    }
    return result


def table(result: Figures) -> None:
    pinned = result["pinned_to_one_core"]
    print(
        f"ludo bench analysis — Python {result['python']} ({result['machine']}), "
        f"{result['engine']} engine, {'pinned to one core' if pinned else 'not pinned'}, "
        f"rules {result['rules']}, seats {result['seats']} (rotated), "
        f"evaluator {result['evaluator']}"
    )
    print(
        f"{result['matches']} matches: {result['rolls_per_match']} rolls, "
        f"{result['moves_per_match']} moves, {result['choices_per_match']} choices per match; "
        f"{result['failures']} failed to verify"
    )
    print(f"{'CPU s per match':<18}{'p50':>9}{'p90':>9}{'max':>9}{'mean':>9}")
    for name in ("analyse", "verify"):
        p = result[f"{name}_s"]
        mean = result[f"{name}_mean_s"]
        print(f"{name:<18}{p['p50']:>9.3f}{p['p90']:>9.3f}{p['max']:>9.3f}{mean:>9.3f}")
    print(f"analyse / verify: {result['ratio']}x; {result['ms_per_roll']} ms of analysis per roll")


BENCH = Bench(
    name="analysis",
    help="CPU time of a match's analysis per match, beside verifying its replay file",
    options=_options,
    measure=measure,
    table=table,
    failed=lambda result: result["failures"] > 0,
    pin=True,
)
