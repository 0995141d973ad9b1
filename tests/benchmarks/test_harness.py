"""The one harness under every `ludo bench …`: the same options, output and exit statuses
for every bench (benchmarks/harness.py)."""

from __future__ import annotations

import argparse
import importlib
import json
import os

import pytest

from benchmarks.common import BenchError
from benchmarks.harness import Bench, Figures, Say, add
from ludo_cli.main import main


def _parser(bench: Bench) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser()
    add(parser.add_subparsers(), bench)
    return parser


def _measure(args: argparse.Namespace, say: Say) -> Figures:
    say("measuring")
    if args.broken:
        raise BenchError("the server is away; start it with `ludo db start`")
    return {"value": 3, "bad": args.bad}


def _table(figures: Figures) -> None:
    print(f"value {figures['value']}")


def _options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--broken", action="store_true")
    parser.add_argument("--bad", action="store_true")


TOY = Bench(
    name="toy",
    help="a bench for the harness's own test",
    options=_options,
    measure=_measure,
    table=_table,
    failed=lambda figures: bool(figures["bad"]),
    pin=True,
)


def _run(argv: list[str]) -> int:
    args = _parser(TOY).parse_args(argv)
    status: int = args.func(args)
    return status


class TestHarness:
    def test_the_table_for_people_with_progress_on_stderr(
        self, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """Without --json the table goes to stdout and progress lines to stderr; status 0."""
        assert _run(["toy", "--no-pin"]) == 0
        out, err = capsys.readouterr()
        assert out == "value 3\n"
        assert err == "measuring\n"

    def test_json_is_the_only_thing_on_stdout(self, capsys: pytest.CaptureFixture[str]) -> None:
        """--json prints the figures as one JSON document, with no progress anywhere."""
        assert _run(["toy", "--json", "--no-pin"]) == 0
        out, err = capsys.readouterr()
        assert json.loads(out) == {"value": 3, "bad": False, "pinned_to_one_core": False}
        assert err == ""

    def test_a_bench_error_is_one_line_saying_what_to_do(
        self, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """A BenchError exits 1 with `ludo bench NAME: message` on stderr and no figures."""
        assert _run(["toy", "--broken", "--no-pin"]) == 1
        out, err = capsys.readouterr()
        assert out == ""
        assert err.splitlines()[-1] == (
            "ludo bench toy: the server is away; start it with `ludo db start`"
        )

    def test_figures_recording_a_failure_exit_1(self, capsys: pytest.CaptureFixture[str]) -> None:
        """When `failed(figures)` holds, the figures are printed and the status is 1."""
        assert _run(["toy", "--bad", "--json", "--no-pin"]) == 1
        assert json.loads(capsys.readouterr().out)["bad"] is True

    @pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="no CPU affinity here")
    def test_pinning_is_done_and_reported(self, capsys: pytest.CaptureFixture[str]) -> None:
        """A pinned bench runs on one core, and its figures say so."""
        before = os.sched_getaffinity(0)
        try:
            assert _run(["toy", "--json"]) == 0
            assert len(os.sched_getaffinity(0)) == 1
        finally:
            os.sched_setaffinity(0, before)
        assert json.loads(capsys.readouterr().out)["pinned_to_one_core"] is True

    def test_every_ludo_bench_runs_on_the_harness(self, capsys: pytest.CaptureFixture[str]) -> None:
        """Each `ludo bench` target is a module's `BENCH`, and each has the harness's --json."""
        with pytest.raises(SystemExit):
            main(["bench", "--help"])
        listing = capsys.readouterr().out
        # argparse lists each target as "    NAME  help" under "positional arguments"
        targets = [
            line.split()[0]
            for line in listing.splitlines()
            if line.startswith("    ") and line[4] != " "
        ]
        assert len(targets) >= 8
        for target in targets:
            # a target of two words is spelled with a hyphen, its module with an underscore
            module = importlib.import_module(f"benchmarks.{target.replace('-', '_')}_bench")
            assert isinstance(module.BENCH, Bench)
            assert module.BENCH.name == target
            with pytest.raises(SystemExit) as exit_:
                main(["bench", target, "--help"])
            assert exit_.value.code == 0
            assert "--json" in capsys.readouterr().out
