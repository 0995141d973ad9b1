"""`ludo simulate`: many CPU-only matches, then win rates per level with 95% intervals.

Every match is a pure function of (`--seed`, match number): its server seed and CPU seed
are derived with SHA-256, so a run is reproducible and gives the same table with any
`--jobs`. With `--rotate` (the default) match k seats the levels rotated k places, so
every level sits in every seat equally often and seat advantage cancels out.

Shared first places: when k players tie for first, each is credited 1/k of a win. The
table shows outright wins, shared wins (ties for first) and the credited win rate;
the interval is the Wilson score interval on the credited rate.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import sys
import time
from collections.abc import Iterator, Sequence
from typing import Any

from domain.events import CpuLevel
from domain.rules import Ruleset, RulesetError, parse_ruleset, ruleset_to_dict
from ludo_cli.arguments import positive_int, seats
from ludo_cli.progress import Progress

__all__ = ["match_seeds", "register", "run", "seat_layout", "wilson_interval"]

_Z95 = 1.959963984540054
_CREDIT_UNIT = 12  # a shared first place among k <= 4 players is 12/k units: exact integers


def register(parser: argparse.ArgumentParser) -> None:
    """`ludo simulate`'s parser (ludo_cli/main.py names the command)."""
    parser.description = __doc__.split("\n\n")[0] if __doc__ else None
    parser.add_argument("--matches", type=positive_int, default=1000, help="matches (default 1000)")
    parser.add_argument(
        "--seats",
        "--players",
        dest="seats",
        type=seats,
        default=("easy", "normal", "normal", "normal"),
        help="comma-separated CPU levels, one per seat, 2-4 seats "
        "(default easy,normal,normal,normal)",
    )
    parser.add_argument(
        "--rules",
        default=None,
        help='ruleset as JSON, e.g. \'{"preset": "bga", "goal_bonus": false}\' '
        "(default: the standard preset)",
    )
    parser.add_argument("--seed", type=int, default=0, help="run seed (default 0)")
    parser.add_argument(
        "--rotate",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="rotate the seat layout every match so each level sits in every seat (default on)",
    )
    parser.add_argument("--jobs", type=positive_int, default=1, help="worker processes (default 1)")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    parser.set_defaults(func=run)


# ------------------------------------------------------------------------------- the run


def match_seeds(run_seed: int, match: int) -> tuple[bytes, str]:
    """(server seed, CPU seed) of match number `match` in a run seeded `run_seed`."""
    base = f"ludo-simulate:{run_seed}:{match}"
    server = hashlib.sha256(f"{base}:server".encode()).digest()
    cpu = hashlib.sha256(f"{base}:cpu".encode()).hexdigest()[:16]
    return server, cpu


def seat_layout(levels: Sequence[CpuLevel], match: int, rotate: bool) -> tuple[CpuLevel, ...]:
    """The levels by seat in match `match`: rotated `match` places when `rotate`."""
    n = len(levels)
    shift = match % n if rotate else 0
    return tuple(levels[(seat + shift) % n] for seat in range(n))


# One task for a worker: (ruleset, levels, run seed, rotate, first match, match count).
_Task = tuple[Ruleset, tuple[CpuLevel, ...], int, bool, int, int]
# What it returns per match: (match number, placements by seat, events).
_Result = tuple[int, tuple[int, ...], int]


def _play_chunk(task: _Task) -> list[_Result]:
    from domain.selfplay import play_match

    ruleset, levels, run_seed, rotate, start, count = task
    out: list[_Result] = []
    for match in range(start, start + count):
        server_seed, cpu_seed = match_seeds(run_seed, match)
        record = play_match(
            ruleset,
            seat_layout(levels, match, rotate),
            server_seed=server_seed,
            cpu_seed=cpu_seed,
            keep_events=False,
        )
        placements = record.state.placements
        assert placements is not None
        out.append((match, placements, record.event_count))
    return out


def _results(tasks: list[_Task], jobs: int) -> Iterator[list[_Result]]:
    if jobs == 1:
        for task in tasks:
            yield _play_chunk(task)
        return
    import multiprocessing

    with multiprocessing.get_context("spawn").Pool(jobs) as pool:
        yield from pool.imap_unordered(_play_chunk, tasks)


def wilson_interval(successes: float, trials: int, z: float = _Z95) -> tuple[float, float]:
    """The Wilson score interval for a proportion (successes may be fractional)."""
    if trials == 0:
        return (0.0, 1.0)
    p = successes / trials
    denom = 1 + z * z / trials
    centre = (p + z * z / (2 * trials)) / denom
    half = z * math.sqrt(p * (1 - p) / trials + z * z / (4 * trials * trials)) / denom
    return (max(0.0, centre - half), min(1.0, centre + half))


class _Tally:
    __slots__ = ("credit", "seats", "shared", "wins")

    def __init__(self) -> None:
        self.seats = 0  # seat-matches played
        self.wins = 0  # outright first places
        self.shared = 0  # first places shared with others
        self.credit = 0  # win credit in 1/_CREDIT_UNIT units

    def add(self, place: int, firsts: int) -> None:
        self.seats += 1
        if place == 1:
            if firsts == 1:
                self.wins += 1
            else:
                self.shared += 1
            self.credit += _CREDIT_UNIT // firsts

    def as_dict(self) -> dict[str, Any]:
        credit = self.credit / _CREDIT_UNIT
        low, high = wilson_interval(credit, self.seats)
        return {
            "seat_matches": self.seats,
            "wins": self.wins,
            "shared_wins": self.shared,
            "win_credit": credit,
            "win_rate": credit / self.seats if self.seats else 0.0,
            "ci95": [low, high],
        }


def run(args: argparse.Namespace) -> int:
    try:
        spec = json.loads(args.rules) if args.rules is not None else None
    except json.JSONDecodeError as error:
        print(f"ludo simulate: --rules is not valid JSON: {error}", file=sys.stderr)
        return 2
    try:
        ruleset = parse_ruleset(spec)
        from domain.board import board_for

        board_for(ruleset, len(args.seats))
    except RulesetError as error:
        print(f"ludo simulate: bad --rules: {error}", file=sys.stderr)
        return 2
    levels: tuple[CpuLevel, ...] = args.seats
    total: int = args.matches
    jobs: int = min(args.jobs, total)
    chunk = max(1, min(50, total // (jobs * 20) or 1))
    tasks: list[_Task] = [
        (ruleset, levels, args.seed, args.rotate, start, min(chunk, total - start))
        for start in range(0, total, chunk)
    ]
    by_level: dict[str, _Tally] = {level: _Tally() for level in dict.fromkeys(levels)}
    by_seat = [_Tally() for _ in levels]
    events = 0
    started = time.perf_counter()
    with Progress(total, "simulate") as bar:
        for results in _results(tasks, jobs):
            for match, placements, count in results:
                layout = seat_layout(levels, match, args.rotate)
                firsts = placements.count(1)
                for seat, place in enumerate(placements):
                    by_level[layout[seat]].add(place, firsts)
                    by_seat[seat].add(place, firsts)
                events += count
            bar.advance(len(results))
    seconds = time.perf_counter() - started
    report: dict[str, Any] = {
        "matches": total,
        "seats": list(levels),
        "rotate": args.rotate,
        "seed": args.seed,
        "jobs": jobs,
        "rules": ruleset_to_dict(ruleset),
        "levels": {level: tally.as_dict() for level, tally in by_level.items()},
        "by_seat": [tally.as_dict() for tally in by_seat],
        "events_per_match": events / total,
        "seconds": seconds,
        "matches_per_s": total / seconds if seconds > 0 else 0.0,
        "tie_rule": "a first place shared by k players credits each 1/k of a win",
    }
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        _print_table(report)
    return 0


def _print_table(report: dict[str, Any]) -> None:
    rotate = "rotated" if report["rotate"] else "fixed"
    print(
        f"{report['matches']} matches, seats {','.join(report['seats'])} ({rotate}), "
        f"seed {report['seed']}"
    )
    header = f"{'':<8} {'seat-matches':>12} {'wins':>6} {'shared':>6} {'win rate':>9}  95% CI"
    print(header)
    rows = [(level, tally) for level, tally in report["levels"].items()]
    rows += [(f"seat {i}", tally) for i, tally in enumerate(report["by_seat"])]
    for name, tally in rows:
        low, high = tally["ci95"]
        print(
            f"{name:<8} {tally['seat_matches']:>12} {tally['wins']:>6} "
            f"{tally['shared_wins']:>6} {100 * tally['win_rate']:>8.1f}%  "
            f"[{100 * low:.1f}%, {100 * high:.1f}%]"
        )
    print(
        "shared first places credit each tied player 1/k of a win; "
        f"{report['events_per_match']:.0f} events/match, "
        f"{report['matches_per_s']:.1f} matches/s, {report['seconds']:.1f} s"
    )
