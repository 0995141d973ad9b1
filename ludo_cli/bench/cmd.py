"""`ludo bench ...`: benchmarks that print figures (docs/benchmarks.md records them)."""

from __future__ import annotations

from typing import Any

__all__ = ["register"]


def register(subparsers: Any) -> None:
    bench = subparsers.add_parser("bench", help="benchmarks (print figures with a baseline)")
    targets = bench.add_subparsers(dest="bench_target", metavar="TARGET", required=True)
    from ludo_cli.bench import (
        domain_bench,
        faults_bench,
        live_bench,
        oracle_bench,
        ranking_bench,
        replay_bench,
        service_bench,
        site_bench,
        store_bench,
    )

    domain_bench.register(targets)
    faults_bench.register(targets)
    live_bench.register(targets)
    oracle_bench.register(targets)
    service_bench.register(targets)
    ranking_bench.register(targets)
    replay_bench.register(targets)
    site_bench.register(targets)
    store_bench.register(targets)
