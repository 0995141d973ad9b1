"""`ludo bench startup`: the CPU an offline `ludo` command spends starting, beside the
CPU of importing the rules engine alone, measured in the same run.

The offline tools (`replay verify|analyse|show`, `tournament verify`, `rules moves`) are
run by people and scripts on files, often many times in a row: their start-up is paid on
every run. `ludo` imports only the module of the command it is given (ludo_cli/main.py),
and those modules import the web stack, the database driver or the benches only inside
the commands that need them. The baseline is `python3 -c "import domain"`: the least any
of these commands needs. Each command is timed as a separate process, exactly as a shell
runs it: its `--help` (parsing, the command's own module) and `ludo rules moves` with
nothing on stdin (the oracle started and stopped). CPU time is the child's user + system
time (`getrusage`), not wall time, so a busy machine's waits do not count; every figure is
the median of `--rounds` runs, the commands and the baseline interleaved round by round.

Target (docs/benchmarks.md): each command's CPU ≤ 5× the baseline's.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys

from benchmarks.harness import Bench, Figures, Say
from ludo_cli.arguments import positive_int

__all__ = ["BENCH", "COMMANDS", "REFERENCE", "TARGET_RATIO", "child_cpu", "measure", "table"]

TARGET_RATIO = 5.0
BASELINE = ("-c", "import domain")
# What is timed: a name and the arguments after `python3` (each a process of its own).
COMMANDS: dict[str, tuple[str, ...]] = {
    "ludo replay verify --help": ("replay", "verify", "--help"),
    "ludo replay analyse --help": ("replay", "analyse", "--help"),
    "ludo replay show --help": ("replay", "show", "--help"),
    "ludo tournament verify --help": ("tournament", "verify", "--help"),
    "ludo rules moves < /dev/null": ("rules", "moves"),
}
# For comparison, not held to the target: a command that needs the web stack and the
# database driver (what every command paid when `ludo` imported them all to build its
# parser).
REFERENCE: dict[str, tuple[str, ...]] = {"ludo up --help": ("up", "--help")}


def _options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--rounds", type=positive_int, default=10, help="runs of each, interleaved (10)"
    )


def child_cpu(argv: list[str]) -> float:
    """CPU seconds (user + system) of `argv` run to its end, stdin empty, output dropped."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        check=True,
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def measure(args: argparse.Namespace, say: Say) -> Figures:
    ludo = [sys.executable, "-m", "ludo_cli.main"]
    timed = {**COMMANDS, **REFERENCE}
    runs: dict[str, list[float]] = {"baseline": [], **{name: [] for name in timed}}
    for round_ in range(args.rounds):
        say(f"round {round_ + 1} of {args.rounds}")
        runs["baseline"].append(child_cpu([sys.executable, *BASELINE]))
        for name, tail in timed.items():
            runs[name].append(child_cpu([*ludo, *tail]))
    baseline = statistics.median(runs["baseline"])

    def row(name: str) -> dict[str, float]:
        cpu = statistics.median(runs[name])
        return {"cpu_s": round(cpu, 4), "ratio": round(cpu / baseline, 2)}

    commands = {name: row(name) for name in COMMANDS}
    return {
        "rounds": args.rounds,
        "baseline": 'python3 -c "import domain"',
        "baseline_cpu_s": round(baseline, 4),
        "commands": commands,
        "reference": {name: row(name) for name in REFERENCE},
        "target_ratio": TARGET_RATIO,
        "worst_ratio": max(c["ratio"] for c in commands.values()),
    }


def table(figures: Figures) -> None:
    width = max(len(name) for name in [*figures["commands"], *figures["reference"]]) + 2
    print(f"start-up CPU, median of {figures['rounds']} runs each (user + system)")
    print(f"{'':<{width}}{'CPU s':>8}  {'× baseline':>10}")
    print(f"{figures['baseline']:<{width}}{figures['baseline_cpu_s']:>8.3f}  {1:>10.2f}")
    for name, row in figures["commands"].items():
        print(f"{name:<{width}}{row['cpu_s']:>8.3f}  {row['ratio']:>10.2f}")
    for name, row in figures["reference"].items():
        print(f"{name:<{width}}{row['cpu_s']:>8.3f}  {row['ratio']:>10.2f}  (for comparison)")
    met = "met" if figures["worst_ratio"] <= figures["target_ratio"] else "NOT met"
    print(
        f"\nworst {figures['worst_ratio']:.2f}× the baseline; "
        f"target ≤ {figures['target_ratio']:g}×: {met}"
    )


BENCH = Bench(
    name="startup",
    help="CPU of the offline commands' start-up beside `import domain`",
    options=_options,
    measure=measure,
    table=table,
)
