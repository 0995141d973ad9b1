"""Replays on the web: the replay file, the audit, the viewer's model and the operator's
dispute report (`/api/matches/{id}/replay|audit|steps|report`), and the two pages that
show them: the public replay viewer `/replay/{id}` and the operator's dispute report
`/report/{id}`.

The routes only check the id and pass what the service's replays
(the `replays` part, services/match/replays/service.py) read (the event store, and for
the report `seat_connections`, the log of live connections) to the pure projections of
`replays/` (`replays.viewer`, `replays.report`, built on the same walk
as `ludo replay show`); nothing is written.

The pages are shells of web/pages/ (`replay_viewer.html`, `dispute_report.html`) whose
modules and styles this service serves under `/static/` (services/shared/pages.py): no
external request, no inline script, a nonce-based Content-Security-Policy and
`connect-src 'self'`.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Annotated, Any, TypeVar

import structlog
from litestar import Controller, MediaType, Request, Response, get
from litestar.di import NamedDependency
from litestar.openapi.datastructures import ResponseSpec
from litestar.params import FromPath, QueryParameter

from domain.errors import Invalid, NotFound
from replays.format import ReplayFile, dump_replay
from replays.report import ReportOut, report_view
from replays.verify import Verdict
from replays.viewer import StepsOut, steps_view
from services.match.callers import OPERATOR, operator_guard
from services.match.ids import check_id
from services.match.page_response import stream_page
from services.match.play.reads import MatchReads
from services.match.play.stamps import Stamps
from services.match.replays.service import ReplayNotFound, ReplayStore
from services.shared.errors import error_responses

__all__ = [
    "MAX_STEPS_PAGE",
    "ReplaysController",
    "dispute_report_page",
    "replay_viewer_page",
]

_T = TypeVar("_T")

# The most steps one `getReplaySteps?limit=` answer holds (~400 bytes each).
MAX_STEPS_PAGE = 500


def _match_id(raw: str) -> str:
    """The path's match id, checked (404 when malformed) and bound to the request's logs."""
    match_id = check_id(raw, "match")
    structlog.contextvars.bind_contextvars(match_id=match_id)
    return match_id


async def _found(read: Awaitable[_T]) -> _T:
    """What `read` returns; an unknown match is the API's plain 404 `no such match` (the
    store's message, which names the id, is the CLI's)."""
    try:
        return await read
    except ReplayNotFound:
        raise NotFound("no such match") from None


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
            **error_responses("not_found"),
        },
    )
    async def replay(
        self, match_id: FromPath[str], replays: NamedDependency[ReplayStore]
    ) -> Response[bytes]:
        match_id = _match_id(match_id)
        replay = await _found(replays.export(match_id))
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
        responses=error_responses("not_found"),
    )
    async def audit(
        self, match_id: FromPath[str], replays: NamedDependency[ReplayStore]
    ) -> Verdict:
        return await _found(replays.audit(_match_id(match_id)))

    @get(
        "/{match_id:str}/steps",
        operation_id="getReplaySteps",
        summary="The replay viewer's model: board geometry, seats, fairness, the events",
        description="Every step (one per event), or with `from` and `limit` the steps "
        "from version `from` on, `limit` of them at most (1 to "
        f"{MAX_STEPS_PAGE}): the viewer reads a long match a range at a time. `count` is "
        "the match's steps in all, `start` the version of the first one sent; the "
        "timeline's `marks` and the quick-chat `stamps` (each with the step it follows) "
        "are the whole match's in every answer. A `from` past the last step is 422 "
        "`invalid` (`field` `from`).",
        responses=error_responses("not_found"),
    )
    async def steps(
        self,
        match_id: FromPath[str],
        stamps: NamedDependency[Stamps],
        replays: NamedDependency[ReplayStore],
        from_version: Annotated[int, QueryParameter(name="from", ge=0)] = 0,
        limit: Annotated[int | None, QueryParameter(ge=1, le=MAX_STEPS_PAGE)] = None,
    ) -> StepsOut:
        match_id = _match_id(match_id)
        walked = await _found(replays.walked(match_id))
        if from_version >= len(walked.steps):  # a match has one step at least
            raise Invalid(
                f"from: the match has {len(walked.steps)} steps, got {from_version}", field="from"
            )
        sent = await stamps.log(match_id)
        return steps_view(walked, start=from_version, limit=limit, stamps=sent)

    @get(
        "/{match_id:str}/report",
        operation_id="getDisputeReport",
        summary="Dispute report: turn by turn, who chose, timeouts, connections (operator)",
        description="Needs `Authorization: Bearer $LUDO_OPERATOR_TOKEN`. One entry per "
        "turn (seat, start, end, seconds, each roll with its legal moves and the move "
        "played and who chose it, timeouts, stand-ins), the seat's live connections and "
        "disconnections and the quick-chat stamps sent (kind `stamp`, its id in `type`) "
        "merged in time order, and a per-seat summary.",
        guards=[operator_guard],
        security=OPERATOR,
        responses=error_responses("not_found"),
    )
    async def report(
        self,
        match_id: FromPath[str],
        stamps: NamedDependency[Stamps],
        replays: NamedDependency[ReplayStore],
    ) -> ReportOut:
        match_id = _match_id(match_id)
        walked = await _found(replays.walked(match_id))
        connections = await replays.connection_log(match_id)
        return report_view(walked, connections, await stamps.log(match_id))


# -------------------------------------------------------------------------------- pages


@get("/replay/{match_id:str}", include_in_schema=False, media_type=MediaType.HTML)
async def replay_viewer_page(
    match_id: FromPath[str], matches: NamedDependency[MatchReads], request: Request[Any, Any, Any]
) -> Response[str]:
    """The public replay viewer of a match (`replay_viewer.html`)."""
    return await stream_page(request, matches.state(match_id), "replay_viewer.html")


@get("/report/{match_id:str}", include_in_schema=False, media_type=MediaType.HTML)
async def dispute_report_page(
    match_id: FromPath[str], matches: NamedDependency[MatchReads], request: Request[Any, Any, Any]
) -> Response[str]:
    """The operator's dispute report of a match (`dispute_report.html`; it asks for the
    operator token and sends it to `getDisputeReport`)."""
    return await stream_page(request, matches.state(match_id), "dispute_report.html")
