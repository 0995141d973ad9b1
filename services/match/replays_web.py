"""Replays on the web: the replay file, the audit, the viewer's model and the operator's
dispute report (`/api/matches/{id}/replay|audit|steps|report`), and the two pages that
show them: the public replay viewer `/replay/{id}` and the operator's dispute report
`/report/{id}`.

Everything here reads the event store through `replays.store` and `replays.steps.walk`
(the same walk as `ludo replay show`); nothing is written. The report also reads
`seat_connections` (migration 0005), the log of live connections the match service keeps.
What the viewer and the report show is built by the pure `services.match.replay_views`
from what this module reads.

The pages are self-contained HTML files next to this module (`replay_viewer.html`,
`dispute_report.html`): inline script and style only, no external request. They are
served under a Content-Security-Policy that allows exactly their inline blocks (by
SHA-256 hash) and `connect-src 'self'`.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
import structlog
from litestar import Controller, MediaType, Response, get
from litestar.connection import ASGIConnection
from litestar.handlers.base import BaseRouteHandler
from litestar.openapi.datastructures import ResponseSpec
from litestar.params import FromPath

from domain.board import Board, board_for
from domain.events import (
    MatchCreated,
    MatchStarted,
)
from domain.rules import RulesetError, parse_ruleset
from replays.format import ReplayFile, dump_replay
from replays.steps import walk
from replays.store import ReplayNotFound, actor_of, audit_match, export_match
from replays.verify import Verdict
from services.match.players import Service
from services.match.replay_views import (
    ConnectionLogEntry,
    ReportOut,
    StepsOut,
    WalkedMatch,
    report_view,
    steps_view,
)
from services.match.service import MatchService, check_id, match_stream
from services.match.site import stream_page
from services.shared.errors import AppError, error_responses
from services.shared.operator import is_operator

__all__ = [
    "OPERATOR",
    "ReplaysController",
    "dispute_report_page",
    "replay_viewer_page",
]

OPERATOR: list[dict[str, list[str]]] = [{"operator": []}]


async def _load(service: MatchService, match_id: str) -> WalkedMatch:
    """The walked match, or 404 for a malformed or unknown id."""
    match_id = check_id(match_id, "match")
    structlog.contextvars.bind_contextvars(match_id=match_id)
    stored = await service.store.read_stream(match_stream(match_id))
    if not stored:
        raise AppError(404, "not_found", "no such match")
    events = [e.event for e in stored]
    created = events[0]
    if not isinstance(created, MatchCreated):  # pragma: no cover - the decider's invariant
        raise AppError(404, "not_found", "no such match")
    started = next((e for e in events if isinstance(e, MatchStarted)), None)
    try:
        board: Board | None = board_for(parse_ruleset(created.ruleset), len(created.seats))
    except RulesetError:  # pragma: no cover - a stored match had a valid ruleset
        board = None
    actors = [actor_of(e) for e in stored]
    times = [e.recorded_at.isoformat() for e in stored]
    steps = list(walk(events, actors=actors, times=times))
    return WalkedMatch(
        match_id=match_id,
        stored=stored,
        events=events,
        created=created,
        started=started,
        board=board,
        steps=steps,
    )


async def _connections(service: MatchService, stream: str) -> list[ConnectionLogEntry]:
    async with service.engine.connect() as conn:
        rows = await conn.execute(
            sa.text(
                "SELECT seat, kind, at FROM seat_connections WHERE stream_id = :s ORDER BY at, id"
            ),
            {"s": stream},
        )
        return [ConnectionLogEntry(r.seat, r.kind, r.at) for r in rows]


# ------------------------------------------------------------------------ operator token


def _operator_guard(connection: ASGIConnection[Any, Any, Any, Any], _: BaseRouteHandler) -> None:
    """The dispute report is the operator's: `Authorization: Bearer $LUDO_OPERATOR_TOKEN`,
    checked exactly as the ranking API does (401 without it; refused when it is unset)."""
    service: MatchService = connection.app.state.service
    authorization = connection.headers.get("authorization", "")
    if not is_operator(authorization, service.settings.operator_token):
        raise AppError(401, "unauthorized", "send Authorization: Bearer <operator token>")


# ---------------------------------------------------------------------------- endpoints


class ReplaysController(Controller):
    path = "/api/matches"
    tags = ("replays",)

    @get(
        "/{match_id:str}/replay",
        operation_id="exportReplay",
        summary="The match's replay file (verifiable offline with `ludo replay verify`)",
        description="The `ludo-replay` JSON file of the match (format in replays/format.py): "
        "ruleset, seats, dice commitment, the revealed seed (null before the end) and every "
        "event with its exact bytes and hash. Sent as an attachment "
        "`match-<id>.ludo-replay.json`.",
        media_type=MediaType.JSON,
        responses={
            200: ResponseSpec(
                data_container=ReplayFile,
                description="the replay file (`replays.format.ReplayFile`)",
                generate_examples=False,
            ),
            **error_responses(404),
        },
    )
    async def replay(self, match_id: FromPath[str], service: Service) -> Response[bytes]:
        match_id = check_id(match_id, "match")
        structlog.contextvars.bind_contextvars(match_id=match_id)
        try:
            replay = await export_match(service.store, match_id)
        except ReplayNotFound:
            raise AppError(404, "not_found", "no such match") from None
        return Response(
            dump_replay(replay),
            media_type=MediaType.JSON,
            headers={
                "Content-Disposition": f'attachment; filename="match-{match_id}.ludo-replay.json"'
            },
        )

    @get(
        "/{match_id:str}/audit",
        operation_id="auditMatch",
        summary="Verify the match as stored: hash chain, seed, every die, every move, result",
        description="`ok` only when every check holds; otherwise `failure` names the check, "
        "the event (stream version and type) and why. A match still being played is "
        "audited up to its last event (its dice against the seed the server keeps).",
        responses=error_responses(404),
    )
    async def audit(self, match_id: FromPath[str], service: Service) -> Verdict:
        match_id = check_id(match_id, "match")
        structlog.contextvars.bind_contextvars(match_id=match_id)
        try:
            return await audit_match(service.store, match_id)
        except ReplayNotFound:
            raise AppError(404, "not_found", "no such match") from None

    @get(
        "/{match_id:str}/steps",
        operation_id="getReplaySteps",
        summary="The replay viewer's model: board geometry, seats, fairness, every event",
        responses=error_responses(404),
    )
    async def steps(self, match_id: FromPath[str], service: Service) -> StepsOut:
        return steps_view(await _load(service, match_id))

    @get(
        "/{match_id:str}/report",
        operation_id="getDisputeReport",
        summary="Dispute report: turn by turn, who chose, timeouts, connections (operator)",
        description="Needs `Authorization: Bearer $LUDO_OPERATOR_TOKEN`. One entry per "
        "turn (seat, start, end, seconds, each roll with its legal moves and the move "
        "played and who chose it, timeouts, stand-ins), the seat's live connections and "
        "disconnections merged in time order, and a per-seat summary.",
        guards=[_operator_guard],
        security=OPERATOR,
        responses=error_responses(401, 404),
    )
    async def report(self, match_id: FromPath[str], service: Service) -> ReportOut:
        m = await _load(service, match_id)
        return report_view(m, await _connections(service, match_stream(m.match_id)))


# -------------------------------------------------------------------------------- pages


@get("/replay/{match_id:str}", include_in_schema=False, media_type=MediaType.HTML)
async def replay_viewer_page(match_id: FromPath[str], service: Service) -> Response[str]:
    """The public replay viewer of a match (`replay_viewer.html`)."""
    return await stream_page(service, match_id, "match", "replay_viewer.html")


@get("/report/{match_id:str}", include_in_schema=False, media_type=MediaType.HTML)
async def dispute_report_page(match_id: FromPath[str], service: Service) -> Response[str]:
    """The operator's dispute report of a match (`dispute_report.html`; it asks for the
    operator token and sends it to `getDisputeReport`)."""
    return await stream_page(service, match_id, "match", "dispute_report.html")
