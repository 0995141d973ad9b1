"""`commands` is append-only, like `events`: a trigger refuses UPDATE, DELETE and TRUNCATE.

An idempotency record is written in its command's append transaction and never changed;
changing one would let a retried command be applied again, or answer with another
outcome. The triggers hold for every role, the owner included (only the owner could
disable them, and the services never connect as the owner: docs/event-store.md, Roles).

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-01
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

UPGRADE = [
    """
    CREATE FUNCTION commands_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        RAISE EXCEPTION 'commands are append-only: % on commands is not allowed', TG_OP
            USING ERRCODE = 'restrict_violation';
    END $$
    """,
    # Statement-level, as on events: fires even when no row matches.
    """
    CREATE TRIGGER commands_no_update_delete
        BEFORE UPDATE OR DELETE ON commands
        FOR EACH STATEMENT EXECUTE FUNCTION commands_append_only()
    """,
    """
    CREATE TRIGGER commands_no_truncate
        BEFORE TRUNCATE ON commands
        FOR EACH STATEMENT EXECUTE FUNCTION commands_append_only()
    """,
]

DOWNGRADE = [
    "DROP TRIGGER commands_no_truncate ON commands",
    "DROP TRIGGER commands_no_update_delete ON commands",
    "DROP FUNCTION commands_append_only()",
]


def upgrade() -> None:
    for statement in UPGRADE:
        op.execute(statement)


def downgrade() -> None:
    for statement in DOWNGRADE:
        op.execute(statement)
