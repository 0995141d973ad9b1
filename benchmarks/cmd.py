"""`ludo bench ...`: benchmarks that print figures (docs/benchmarks.md records them)."""

from __future__ import annotations

import argparse

__all__ = ["register"]


def register(bench: argparse.ArgumentParser) -> None:
    """`ludo bench`'s parser (ludo_cli/main.py names the command)."""
    targets = bench.add_subparsers(dest="bench_target", metavar="TARGET", required=True)
    from benchmarks import (
        analysis_bench,
        analysis_served_bench,
        arena_bench,
        domain_bench,
        faults_bench,
        floor_bench,
        limits_bench,
        live_bench,
        oracle_bench,
        pairing_bench,
        ranking_bench,
        replay_bench,
        service_bench,
        site_bench,
        startup_bench,
        store_bench,
    )
    from benchmarks.harness import add

    for module in (
        analysis_bench,
        analysis_served_bench,
        arena_bench,
        domain_bench,
        faults_bench,
        floor_bench,
        limits_bench,
        live_bench,
        oracle_bench,
        pairing_bench,
        service_bench,
        ranking_bench,
        replay_bench,
        site_bench,
        startup_bench,
        store_bench,
    ):
        add(targets, module.BENCH)
