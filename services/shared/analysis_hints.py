"""How a match's analysis, once written, reaches the table that waits for it (docs/analysis.md,
"On the end card within seconds").

The ranking service's analysis consumer writes `match_analyses`; right after its commit it
sends a NOTIFY hint on the event store's channel for the pseudo-stream `analysis-<match id>`
(no events: a wake-up only, as the presence hints). The match socket of a finished match
follows that prefix (`live_hub.view`) and re-reads `analysed` on each hint: when it turns
true the socket sends `{"type": "analysis"}`, and the end card reads the analysis at once.
A lost hint only delays the card until its next safety ask; nothing is lost.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import msgspec
import sqlalchemy as sa
import structlog
from sqlalchemy.ext.asyncio import AsyncEngine

from services.shared.eventstore import CHANNEL, Notification
from services.shared.logging import describe_exception

__all__ = ["ANALYSIS_PREFIX", "analysed", "analysis_hint_stream", "hint_analysed"]

_log = structlog.get_logger(__name__)

ANALYSIS_PREFIX: Final = "analysis-"

_ANALYSED: Final = sa.text("SELECT 1 FROM match_analyses WHERE match_id = :match_id")
# One statement for the hints of a whole page of analysed matches.
_HINT_MANY: Final = sa.text(
    "SELECT pg_notify(:channel, payload) FROM unnest(CAST(:payloads AS text[])) AS payload"
)


def analysis_hint_stream(match_id: str) -> str:
    """The id an analysis hint of the match names (no stream holds events under it)."""
    return f"{ANALYSIS_PREFIX}{match_id}"


async def analysed(engine: AsyncEngine, match_id: str) -> bool:
    """Whether the match's analysis is written (one primary-key lookup)."""
    async with engine.connect() as conn:
        return (await conn.scalar(_ANALYSED, {"match_id": match_id})) is not None


async def hint_analysed(engine: AsyncEngine, match_ids: Sequence[str]) -> None:
    """The hints that these matches' analyses are written: after their commit, in their own
    autocommit statement (like the event store's). A failure is logged, never raised: the
    rows are committed whatever happens here."""
    if not match_ids:
        return
    payloads = [
        msgspec.json.encode(Notification(analysis_hint_stream(m), 0)).decode() for m in match_ids
    ]
    try:
        async with engine.connect() as conn:
            auto = await conn.execution_options(isolation_level="AUTOCOMMIT")
            await auto.execute(_HINT_MANY, {"channel": CHANNEL, "payloads": payloads})
    except sa.exc.SQLAlchemyError as exc:
        _log.warning("analysis_hint_failed", matches=len(match_ids), **describe_exception(exc))
