"""`ludo ranking`: the ranking service's operator commands.

- `ludo ranking recompute` rebuilds every rating from the event log from scratch into new
  tables and swaps them in (the live tables serve until the new ones are complete), then
  prints the hash of all ratings: the same log always gives the same hash, whether the
  ratings came from a recompute or from the live consumer.
- `ludo ranking hash` prints the hash of the live ratings without changing anything.
- `ludo ranking consume` runs the consumer alone (no HTTP), until Ctrl-C.

`DATABASE_URL` selects the database (unset: the embedded PostgreSQL).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import Any

__all__ = ["register"]


def register(ranking: argparse.ArgumentParser) -> None:
    """`ludo ranking`'s parser (ludo_cli/main.py names the command)."""
    ranking.description = (
        "Operator commands of the ranking service (DATABASE_URL selects the database)."
    )
    sub = ranking.add_subparsers(dest="ranking_command", metavar="SUBCOMMAND", required=True)
    recompute = sub.add_parser(
        "recompute", help="rebuild all ratings from the log (blue/green) and print their hash"
    )
    recompute.set_defaults(func=lambda a: _run(a, "recompute"))
    digest = sub.add_parser("hash", help="print the hash of the live ratings")
    digest.set_defaults(func=lambda a: _run(a, "hash"))
    consume = sub.add_parser("consume", help="run the rating consumer until Ctrl-C")
    consume.set_defaults(func=lambda a: _run(a, "consume"))


def _run(args: argparse.Namespace, what: str) -> int:
    from services.shared.database import database_url, prepare_schema
    from services.shared.settings import Settings, SettingsError

    try:
        settings = Settings.from_env()
    except SettingsError as error:
        print(f"ludo ranking: {error}", file=sys.stderr)
        return 2
    with database_url(settings) as url:
        prepare_schema(url, app_role=settings.db_app_role)
        return asyncio.run(_main(url, settings, what))


async def _main(url: str, settings: Any, what: str) -> int:
    from services.ranking.ratings.consumer import (
        RankingConsumer,
        RecomputeBusy,
        RecomputeNotPermitted,
        ratings_hash,
        recompute,
    )
    from services.shared.database import create_engine
    from services.shared.logging import configure_logging

    # Log lines go to stderr: stdout carries only the hash.
    configure_logging(settings, stream=sys.stderr)
    engine = create_engine(url, pool_size=4, max_overflow=2)
    try:
        if what == "recompute":
            try:
                digest = await recompute(engine)
            except (RecomputeBusy, RecomputeNotPermitted) as exc:
                print(f"ludo ranking: {exc}", file=sys.stderr)
                return 1
            _, rows = await ratings_hash(engine)
            print(f"{digest}  ({rows} ratings)")
        elif what == "hash":
            digest, rows = await ratings_hash(engine)
            print(f"{digest}  ({rows} ratings)")
        else:
            await RankingConsumer(engine, poll=settings.ranking_poll).run()
        return 0
    finally:
        await engine.dispose()
