"""The one harness every `ludo bench …` command runs on.

A bench declares itself as a `Bench`: its name and help, the options it adds, `measure`
(parsed options and a `say` for progress lines, to a dict of figures), `table` (those figures
printed for people) and `failed` (whether the figures record a failure, such as a replay that
did not verify). The harness does the rest, the same way for every bench:

- adds `--json` (the figures as one JSON document on stdout, nothing else there);
- with `pin`, adds `--no-pin` and pins the process to one core before measuring (single-core
  figures stop depending on the scheduler moving the process); the figures say whether it was;
- sends progress lines to stderr, silenced under `--json`;
- turns a `BenchError` into one line on stderr, `ludo bench NAME: what to do next`, status 1;
- exits 0, or 1 when `failed(figures)`.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import msgspec

from benchmarks.common import BenchError

__all__ = ["Bench", "Figures", "Say", "add", "pin_to_one_core", "print_problems", "to_stderr"]

Figures = dict[str, Any]
Say = Callable[[str], None]


def _never(_figures: Figures) -> bool:
    return False


def _no_options(_parser: argparse.ArgumentParser) -> None:
    return None


@dataclass(frozen=True)
class Bench:
    name: str
    help: str
    measure: Callable[[argparse.Namespace, Say], Figures]
    table: Callable[[Figures], None]
    options: Callable[[argparse.ArgumentParser], None] = _no_options
    failed: Callable[[Figures], bool] = _never
    pin: bool = False


def add(targets: Any, bench: Bench) -> argparse.ArgumentParser:
    """Register `bench` as `ludo bench NAME` on the `bench` sub-command's parsers."""
    parser: argparse.ArgumentParser = targets.add_parser(bench.name, help=bench.help)
    bench.options(parser)
    if bench.pin:
        parser.add_argument("--no-pin", action="store_true", help="do not pin to one CPU core")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.set_defaults(func=lambda args: run(bench, args))
    return parser


def run(bench: Bench, args: argparse.Namespace) -> int:
    """Measure, print the figures, and return the exit status (see the module docstring)."""
    say: Say = _silent if args.json else to_stderr
    pinned = bench.pin and not args.no_pin and pin_to_one_core()
    try:
        figures = bench.measure(args, say)
    except BenchError as exc:
        print(f"ludo bench {bench.name}: {exc}", file=sys.stderr)
        return 1
    if bench.pin:
        figures["pinned_to_one_core"] = pinned
    if args.json:
        print(msgspec.json.encode(figures).decode())
    else:
        bench.table(figures)
    return 1 if bench.failed(figures) else 0


def pin_to_one_core() -> bool:
    """Pin this process to its lowest allowed core; False where the platform cannot."""
    if not hasattr(os, "sched_setaffinity"):
        return False
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    return True


def _silent(_line: str) -> None:
    return None


def to_stderr(line: str) -> None:
    """The `say` of a bench run for people: one progress line on stderr, flushed."""
    print(line, file=sys.stderr, flush=True)


def print_problems(problems: list[str], fine: str, most: int = 50) -> None:
    """The end of a checking bench's table: its problems (the first `most`), or, when
    there are none, `fine`, what every check found."""
    if problems:
        print(f"\n{len(problems)} PROBLEM(S):")
        for line in problems[:most]:
            print(f"  {line}")
    else:
        print(f"\nno problem: {fine}")
