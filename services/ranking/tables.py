"""The ranking service's tables, declared once (made by the migrations 0004, 0007, 0009, 0011
and 0012; tests/migrations/test_catalog.py checks that the two agree). The service reads the event
log and these; no table of the match service (names come from `MatchCreated`, 0007).

`ludo ranking recompute` builds copies of `ratings` and `rating_changes` (CREATE TABLE …
LIKE) and swaps them in; indexes live in the migrations only.
"""

from __future__ import annotations

from typing import Final

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

__all__ = [
    "TABLES",
    "analysis_seats",
    "consumer_checkpoints",
    "instance_stats",
    "match_analyses",
    "rating_changes",
    "ratings",
    "reports",
    "reputation_matches",
]

_TIMESTAMPTZ: Final = sa.DateTime(timezone=True)

TABLES: Final = sa.MetaData()

# Current rating per (model, player); `rating` is the displayed number (1500 scale).
# `name`: the name the player played their latest rated match under (its MatchCreated);
# NULL only for a row written by a release before 0007 (docs/ranking.md, Names).
ratings: Final = sa.Table(
    "ratings",
    TABLES,
    sa.Column("model", sa.Text, primary_key=True),
    sa.Column("player_id", sa.Text, primary_key=True),
    sa.Column("mu", sa.Double, nullable=False),
    sa.Column("sigma", sa.Double, nullable=False),
    sa.Column("volatility", sa.Double, nullable=False, server_default=sa.text("0")),
    sa.Column("rating", sa.Double, nullable=False),
    sa.Column("provisional", sa.Boolean, nullable=False),
    sa.Column("matches", sa.Integer, nullable=False),
    sa.Column("last_match_at", _TIMESTAMPTZ, nullable=False),
    sa.Column("name", sa.Text, nullable=True),
)

# One row per rated player per finished ranked match per model.
rating_changes: Final = sa.Table(
    "rating_changes",
    TABLES,
    sa.Column("model", sa.Text, primary_key=True),
    sa.Column("match_stream", sa.Text, primary_key=True),
    sa.Column("player_id", sa.Text, primary_key=True),
    sa.Column("position", sa.BigInteger, nullable=False),
    sa.Column("place", sa.Integer, nullable=False),
    sa.Column("players", sa.Integer, nullable=False),
    sa.Column("left_match", sa.Boolean, nullable=False),
    sa.Column("mu_before", sa.Double, nullable=False),
    sa.Column("sigma_before", sa.Double, nullable=False),
    sa.Column("rating_before", sa.Double, nullable=False),
    sa.Column("mu_after", sa.Double, nullable=False),
    sa.Column("sigma_after", sa.Double, nullable=False),
    sa.Column("rating_after", sa.Double, nullable=False),
    sa.Column("params", postgresql.JSONB, nullable=False),
    sa.Column("library", sa.Text, nullable=False),
    sa.Column("finished_at", _TIMESTAMPTZ, nullable=False),
)

# Where a consumer is in the global order: (tx, position) of the last event it has taken
# into account, written in the same transaction as its effects.
consumer_checkpoints: Final = sa.Table(
    "consumer_checkpoints",
    TABLES,
    sa.Column("name", sa.Text, primary_key=True),
    sa.Column("tx", sa.BigInteger, nullable=False),
    sa.Column("position", sa.BigInteger, nullable=False),
    sa.Column("updated_at", _TIMESTAMPTZ, nullable=False, server_default=sa.text("now()")),
)

# The reputation fold (0009): one row per human player per ended match, casual or ranked,
# written with the checkpoint (exactly once) and rebuilt by `ludo ranking recompute`.
# `left_match`: the player left it (`domain.reputation.left_seats`). The match service
# reads it (services/shared/standing.py): a pool entry must not depend on this process.
reputation_matches: Final = sa.Table(
    "reputation_matches",
    TABLES,
    sa.Column("player_id", sa.Text, primary_key=True),
    sa.Column("match_stream", sa.Text, primary_key=True),
    sa.Column("position", sa.BigInteger, nullable=False),
    sa.Column("ended_at", _TIMESTAMPTZ, nullable=False),
    sa.Column("ranked", sa.Boolean, nullable=False),
    sa.Column("left_match", sa.Boolean, nullable=False),
)

# Reports of a player and their decisions (0009): the read model of the `report-<id>`
# streams (domain/reports.py), a side write of each append to one (services/shared/
# reports.py): the match service files, the ranking service's operator decides.
# `decision` NULL: open. `until`: the end of a suspension.
reports: Final = sa.Table(
    "reports",
    TABLES,
    sa.Column("report_id", sa.Text, primary_key=True),
    sa.Column("match_id", sa.Text, nullable=False),
    sa.Column("reporter_id", sa.Text, nullable=False),
    sa.Column("reported_id", sa.Text, nullable=False),
    sa.Column("reason", sa.Text, nullable=False),
    sa.Column("filed_at", _TIMESTAMPTZ, nullable=False),
    sa.Column("decision", sa.Text, nullable=True),
    sa.Column("decided_at", _TIMESTAMPTZ, nullable=True),
    sa.Column("hours", sa.Integer, nullable=True),
    sa.Column("until", _TIMESTAMPTZ, nullable=True),
    sa.Column("note", sa.Text, nullable=True),
)

# Match analysis (0011, docs/analysis.md): written by the analysis consumer
# (services/ranking/analysis/consumer.py) with its checkpoint. `body`: the analysis's bytes
# exactly as `domain.analysis.encode` made them; `luck_gap`: the largest difference of
# luck between two seats. `analysis_seats.faces[i]`: the seat's rolls of i + 1.
match_analyses: Final = sa.Table(
    "match_analyses",
    TABLES,
    sa.Column("match_id", sa.Text, primary_key=True),
    sa.Column("stream_id", sa.Text, nullable=False),
    sa.Column("position", sa.BigInteger, nullable=False),
    sa.Column("ended_at", _TIMESTAMPTZ, nullable=False),
    sa.Column("evaluator", sa.Text, nullable=False),
    sa.Column("players", sa.Integer, nullable=False),
    sa.Column("luck_gap", sa.Double, nullable=False),
    sa.Column("body", sa.LargeBinary, nullable=False),
    sa.Column("analysed_at", _TIMESTAMPTZ, nullable=False, server_default=sa.text("now()")),
)

analysis_seats: Final = sa.Table(
    "analysis_seats",
    TABLES,
    sa.Column("match_id", sa.Text, sa.ForeignKey("match_analyses.match_id"), primary_key=True),
    sa.Column("seat", sa.Integer, primary_key=True),
    sa.Column("player_id", sa.Text, nullable=True),
    sa.Column("name", sa.Text, nullable=False),
    sa.Column("ended_at", _TIMESTAMPTZ, nullable=False),
    sa.Column("ranked", sa.Boolean, nullable=False),
    sa.Column("place", sa.Integer, nullable=True),
    sa.Column("luck", sa.Double, nullable=False),
    sa.Column("error", sa.Double, nullable=False),
    sa.Column("choices", sa.Integer, nullable=False),
    sa.Column("own_error", sa.Double, nullable=False),
    sa.Column("best_choices", sa.Integer, nullable=False),
    sa.Column("faces", postgresql.ARRAY(sa.Integer), nullable=False),
)


# What each running instance of either service says of itself (0012, UNLOGGED): written by
# the instances (services/shared/instance_stats.py), read by the live view.
instance_stats: Final = sa.Table(
    "instance_stats",
    TABLES,
    sa.Column("name", sa.Text, primary_key=True),
    sa.Column("service", sa.Text, nullable=False),
    sa.Column("pid", sa.Integer, nullable=False),
    sa.Column("started_at", _TIMESTAMPTZ, nullable=False),
    sa.Column("seen_at", _TIMESTAMPTZ, nullable=False, server_default=sa.text("now()")),
    sa.Column("figures", postgresql.JSONB, nullable=False),
)
