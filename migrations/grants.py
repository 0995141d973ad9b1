"""Privileges of the application role (DESIGN.md §3: SELECT and INSERT only on `events`).

Where roles are managed, the services connect as a role that does not own the tables, and
`ludo db upgrade` (with `LUDO_DB_APP_ROLE` set) runs `grant_app_role` after the migrations.
The statements are idempotent and are the same as the SQL in docs/event-store.md. A role
that owns `events`, or a superuser, could still disable the triggers: the services must
not connect as one.
"""

from __future__ import annotations

import re

import sqlalchemy as sa

__all__ = ["app_role_sql", "grant_app_role"]

# Working tables of the services (0001: seeds, deadlines, lobby; 0002: players, matches;
# 0003: seat presence; 0004: ratings, their history and the consumer's checkpoint).
# `ludo ranking recompute` renames the rating tables, which needs their owner: run it as
# the migrating role, not the app role.
_WORK_TABLES = (
    "match_seeds, turn_deadlines, parties, players, matches, seat_presence, "
    "ratings, rating_changes, consumer_checkpoints"
)
_ROLE = re.compile(r"[A-Za-z_][A-Za-z0-9_$]{0,62}")


def app_role_sql(role: str) -> list[str]:
    """The GRANT/REVOKE statements that give `role` what the services need, no more."""
    if not _ROLE.fullmatch(role):
        raise ValueError(f"not a plain role name: {role!r}")
    r = f'"{role}"'
    return [
        f"GRANT USAGE ON SCHEMA public TO {r}",
        # The log: read and append, nothing else.
        f"REVOKE ALL ON events FROM {r}",
        f"GRANT SELECT, INSERT ON events TO {r}",
        # Idempotency records: written with the events, never changed.
        f"REVOKE ALL ON commands FROM {r}",
        f"GRANT SELECT, INSERT ON commands TO {r}",
        # The connection log behind the dispute report (0005): append-only like events.
        f"REVOKE ALL ON seat_connections FROM {r}",
        f"GRANT SELECT, INSERT ON seat_connections TO {r}",
        # Working tables of the match service.
        f"GRANT SELECT, INSERT, UPDATE, DELETE ON {_WORK_TABLES} TO {r}",
        f"REVOKE TRUNCATE ON {_WORK_TABLES} FROM {r}",
    ]


def grant_app_role(connection: sa.Connection, role: str) -> None:
    """Run `app_role_sql(role)` on `connection` (the role must exist)."""
    for statement in app_role_sql(role):
        connection.execute(sa.text(statement))
