"""`ludo db`: the database behind the services
(docs/operations.md#the-database-your-own-or-the-embedded-one).

- `ludo db upgrade` migrates the database to the newest schema (Alembic, `migrations/`).
- `ludo db url` prints the database URL with the password masked.
- `ludo db stop` stops the embedded PostgreSQL.

With `DATABASE_URL` set, they use that database. Without it they use the embedded
PostgreSQL in `LUDO_DATA_DIR/pg`: reused if it is running. `upgrade` stops a server it
had to start itself; `url` leaves it running, since its URL is only useful while it runs.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

__all__ = ["register"]


def register(db: argparse.ArgumentParser) -> None:
    """`ludo db`'s parser (ludo_cli/main.py names the command)."""
    db.description = (
        "DATABASE_URL selects the database; unset, an embedded PostgreSQL "
        "with its data in LUDO_DATA_DIR/pg is used."
    )
    sub = db.add_subparsers(dest="db_command", metavar="SUBCOMMAND", required=True)
    upgrade = sub.add_parser("upgrade", help="migrate the schema (default: to the newest)")
    upgrade.add_argument("revision", nargs="?", default="head", help="target revision")
    upgrade.set_defaults(func=run_upgrade)
    url = sub.add_parser("url", help="print the database URL, password masked")
    url.set_defaults(func=run_url)
    stop = sub.add_parser("stop", help="stop the embedded PostgreSQL")
    stop.set_defaults(func=run_stop)


def _settings() -> Any:
    from services.shared.settings import Settings, SettingsError

    try:
        return Settings.from_env()
    except SettingsError as error:
        print(f"ludo db: {error}", file=sys.stderr)
        raise SystemExit(2) from error


def run_upgrade(args: argparse.Namespace) -> int:
    from services.shared.database import database_url, mask_url, migrate

    settings = _settings()
    with database_url(settings) as url:
        revision = migrate(url, args.revision, app_role=settings.db_app_role)
        print(f"{mask_url(url)} is at revision {revision}")
    return 0


def run_url(args: argparse.Namespace) -> int:
    from services.shared.database import EmbeddedPostgres, mask_url, normalize_url

    settings = _settings()
    if settings.database_url:
        print(mask_url(normalize_url(settings.database_url)))
        return 0
    pg = EmbeddedPostgres.start(settings.embedded_pgdata, keep_running=True)
    try:
        print(mask_url(pg.url))
        if pg.started:
            print("started the embedded PostgreSQL; `ludo db stop` stops it", file=sys.stderr)
    finally:
        pg.close()
    return 0


def run_stop(args: argparse.Namespace) -> int:
    from services.shared.database import stop_embedded

    settings = _settings()
    if stop_embedded(settings.embedded_pgdata):
        print(f"stopped the embedded PostgreSQL in {settings.embedded_pgdata}")
    else:
        print(f"no embedded PostgreSQL is running in {settings.embedded_pgdata}")
    if settings.database_url:
        # `stop` only ever manages the embedded server; say so rather than let it look
        # as if the DATABASE_URL server had been checked or stopped.
        print(
            "DATABASE_URL is set: `ludo db stop` only stops the embedded PostgreSQL; "
            "the server DATABASE_URL names is not this command's to stop",
            file=sys.stderr,
        )
    return 0
