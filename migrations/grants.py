"""Privileges of the application role (docs/design.md#the-event-store: SELECT and INSERT only on
`events`).

Two roles (docs/event-store.md, Roles): the *migration owner* owns the tables and runs
`ludo db upgrade`; the *app role* (`LUDO_DB_APP_ROLE`) is what the services connect as.
With `LUDO_DB_APP_ROLE` set, `ludo db upgrade` runs `grant_app_role` after the migrations,
every time (it is idempotent: each table's privileges are revoked and granted afresh, so a
privilege granted by hand is taken back). The statements are the SQL in
docs/event-store.md. A role that owns `events`, or a superuser, could disable the
triggers: `grant_app_role` refuses to name one the app role, and the services must not
connect as one.
"""

from __future__ import annotations

import re

import sqlalchemy as sa

__all__ = ["AppRoleError", "app_role_sql", "grant_app_role"]

# Working tables of the services (0001: seeds, deadlines, lobby; 0002: players, matches;
# 0003: seat presence; 0004: ratings, their history and the consumer's checkpoint;
# 0008: lobby presence; 0009: reputation and reports; 0010: arenas; 0011: analyses;
# 0012: instance figures; 0013: the shared rate budgets).
# `ludo ranking recompute` renames the rating tables, which needs their owner: run it as
# the migrating role, not the app role.
_WORK_TABLES = (
    "turn_deadlines, parties, players, matches, seat_presence, lobby_presence, "
    "ratings, rating_changes, consumer_checkpoints, reputation_matches, reports, arenas, "
    "match_analyses, analysis_seats, instance_stats, rate_buckets"
)
# Read and append only: the log, the idempotency records (append-only triggers on both,
# 0001 and 0006), the connection log (0005), and the seeds, written once per match.
_APPEND_ONLY_TABLES = ("events", "commands", "seat_connections", "match_seeds")
_ROLE = re.compile(r"[A-Za-z_][A-Za-z0-9_$]{0,62}")


def app_role_sql(role: str) -> list[str]:
    """The GRANT/REVOKE statements that give `role` what the services need, no more."""
    if not _ROLE.fullmatch(role):
        raise ValueError(f"not a plain role name: {role!r}")
    r = f'"{role}"'
    return [
        f"GRANT USAGE ON SCHEMA public TO {r}",
        # The services check at start that the schema is at head (they do not migrate).
        f"REVOKE ALL ON alembic_version FROM {r}",
        f"GRANT SELECT ON alembic_version TO {r}",
        # Read and append, nothing else (no UPDATE, DELETE, TRUNCATE, TRIGGER, REFERENCES).
        *(
            statement
            for table in _APPEND_ONLY_TABLES
            for statement in (
                f"REVOKE ALL ON {table} FROM {r}",
                f"GRANT SELECT, INSERT ON {table} TO {r}",
            )
        ),
        # Working tables of the services: rows change, but no TRUNCATE and no triggers.
        f"REVOKE ALL ON {_WORK_TABLES} FROM {r}",
        f"GRANT SELECT, INSERT, UPDATE, DELETE ON {_WORK_TABLES} TO {r}",
    ]


class AppRoleError(ValueError):
    """`LUDO_DB_APP_ROLE` names a role that must not be the app role."""


def grant_app_role(connection: sa.Connection, role: str) -> None:
    """Run `app_role_sql(role)` on `connection` (the role must exist, and must be neither a
    superuser nor the owner of `events`: either could switch the triggers off)."""
    row = connection.execute(
        sa.text(
            "SELECT r.rolsuper, pg_has_role(r.oid, c.relowner, 'USAGE') FROM pg_roles r"
            " LEFT JOIN pg_class c ON c.oid = to_regclass('public.events')"
            " WHERE r.rolname = :role"
        ),
        {"role": role},
    ).one_or_none()
    if row is None:
        raise AppRoleError(f"LUDO_DB_APP_ROLE: role {role!r} does not exist; create it first")
    if row[0] or row[1]:
        raise AppRoleError(
            f"LUDO_DB_APP_ROLE: {role!r} is a superuser or owns the tables; the app role "
            "must be a separate role without them (docs/event-store.md, Roles)"
        )
    for statement in app_role_sql(role):
        connection.execute(sa.text(statement))
