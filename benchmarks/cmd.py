"""`ludo bench ...`: benchmarks that print figures (docs/benchmarks.md records them)."""

from __future__ import annotations

from typing import Any

__all__ = ["register"]


def register(subparsers: Any) -> None:
    bench = subparsers.add_parser("bench", help="benchmarks (print figures with a baseline)")
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
        store_bench,
    ):
        add(targets, module.BENCH)
