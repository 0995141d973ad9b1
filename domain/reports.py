"""Reports of a player and the operator's decisions, as a Decider.

A report is a stream of its own (`domain.streams.report_stream`): `ReportFiled`, then at
most one `ReportDecided`. One stream per report, not one per reported player: a report
lives and closes on its own (filed, then decided once), so its expected version is all
the concurrency it needs (two operators deciding one report: one wins; two reports of one
player never wait for each other), and the report id is derived from
(match, reporter, reported) (`report_id`), so the log itself keeps a player from
reporting the same player twice for one match, with no read-model check to race.

Who may report (the service reads the match's seats and passes what it found): a player
who sat in the match (`reporter_seated`), of another human who sat in it
(`reported_seated`), not oneself, for a reason of `REASONS`. The operator dismisses,
warns, or suspends for `hours` (no ranked pools until then: `ReportDecided.until`); each
decision is final. Times are the service's clock in seconds (the domain has none).
"""

from __future__ import annotations

import uuid
from typing import ClassVar, Final, Literal

import msgspec

__all__ = [
    "DECISIONS",
    "MAX_HOURS",
    "MAX_NOTE",
    "REASONS",
    "DecideReport",
    "FileReport",
    "ReportDecided",
    "ReportEvent",
    "ReportFiled",
    "ReportRejection",
    "ReportState",
    "apply",
    "decide",
    "decode_report_event",
    "report_id",
]

REASONS: Final = ("left_on_purpose", "abusive_stamps", "collusion", "other")
DECISIONS: Final = ("dismiss", "warn", "suspend")
MAX_HOURS: Final = 24 * 365  # the longest suspension: a year
MAX_NOTE: Final = 500

_NAMESPACE: Final = uuid.UUID("6c75646f-7265-706f-7274-000000000000")


def report_id(match_id: str, reporter: str, reported: str) -> str:
    """The one report `reporter` may file of `reported` for the match `match_id`."""
    return str(uuid.uuid5(_NAMESPACE, f"{match_id}\x00{reporter}\x00{reported}"))


class ReportFiled(msgspec.Struct, frozen=True, kw_only=True, tag=True, tag_field="type"):
    """`reporter` reported `reported` for `reason`, about the match `match_id`, at `at`."""

    schema_version: ClassVar[int] = 1

    report_id: str
    match_id: str
    reporter: str
    reported: str
    reason: str
    at: float


class ReportDecided(msgspec.Struct, frozen=True, kw_only=True, tag=True, tag_field="type"):
    """The operator's decision on the report: `dismiss`, `warn`, or `suspend` for `hours`
    (out of ranked pools until `until`)."""

    schema_version: ClassVar[int] = 1

    decision: str
    operator: str
    at: float
    hours: int | None = None
    until: float | None = None
    note: str | None = None


ReportEvent = ReportFiled | ReportDecided


def decode_report_event(data: bytes) -> ReportEvent:
    """A report stream's event from its stored JSON."""
    return msgspec.json.decode(data, type=ReportEvent)


class FileReport(msgspec.Struct, frozen=True, kw_only=True):
    """`reporter` reports `reported` about `match_id`; `*_seated`: whether each sat in it
    as a human player (read by the service from the match)."""

    reporter: str
    reported: str
    match_id: str
    reason: str
    reporter_seated: bool
    reported_seated: bool
    now: float


class DecideReport(msgspec.Struct, frozen=True, kw_only=True):
    """The operator decides the report: `hours` for `suspend` only."""

    operator: str
    decision: str
    now: float
    hours: int | None = None
    note: str | None = None


ReportCommand = FileReport | DecideReport


class ReportRejection(msgspec.Struct, frozen=True):
    """Why a report or a decision was refused (nothing is appended)."""

    code: str
    reason: str
    field: str | None = None


class ReportState:
    """The report so far: `status` new → open → decided, and the stream's version."""

    __slots__ = ("decided", "filed", "status", "version")

    def __init__(self) -> None:
        self.version = 0
        self.status: Literal["new", "open", "decided"] = "new"
        self.filed: ReportFiled | None = None
        self.decided: ReportDecided | None = None


def apply(state: ReportState, event: ReportEvent) -> None:
    """Fold one event (no checks: events are facts)."""
    if isinstance(event, ReportFiled):
        state.filed = event
        state.status = "open"
    else:
        state.decided = event
        state.status = "decided"
    state.version += 1


def decide(command: ReportCommand, state: ReportState) -> list[ReportEvent] | ReportRejection:
    """The events of `command` on `state`, or why not."""
    if isinstance(command, FileReport):
        return _file(command, state)
    return _decide(command, state)


def _file(command: FileReport, state: ReportState) -> list[ReportEvent] | ReportRejection:
    if command.reason not in REASONS:
        return ReportRejection("bad_reason", f"reason: one of {', '.join(REASONS)}", "reason")
    if command.reporter == command.reported:
        return ReportRejection("self_report", "you cannot report yourself", "player_id")
    if not command.reporter_seated:
        return ReportRejection(
            "not_in_match", "only a player who sat in the match may report from it", "match_id"
        )
    if not command.reported_seated:
        return ReportRejection("stranger", "that player did not play in this match", "player_id")
    if state.status != "new":
        return ReportRejection(
            "already_reported", "you already reported this player for this match"
        )
    rid = report_id(command.match_id, command.reporter, command.reported)
    return [
        ReportFiled(
            report_id=rid,
            match_id=command.match_id,
            reporter=command.reporter,
            reported=command.reported,
            reason=command.reason,
            at=command.now,
        )
    ]


def _decide(command: DecideReport, state: ReportState) -> list[ReportEvent] | ReportRejection:
    if state.status == "new":
        return ReportRejection("not_found", "no such report")
    if command.decision not in DECISIONS:
        return ReportRejection(
            "bad_decision", f"decision: one of {', '.join(DECISIONS)}", "decision"
        )
    hours = command.hours
    if command.decision == "suspend":
        if hours is None or not 1 <= hours <= MAX_HOURS:
            return ReportRejection(
                "bad_hours", f"hours: a suspension lasts 1 to {MAX_HOURS} hours", "hours"
            )
    elif hours is not None:
        return ReportRejection("bad_hours", "hours: only a suspension has hours", "hours")
    if command.note is not None and len(command.note) > MAX_NOTE:
        return ReportRejection("bad_note", f"note: at most {MAX_NOTE} characters", "note")
    if state.status == "decided":
        return ReportRejection("already_decided", "this report was already decided")
    until = command.now + hours * 3600.0 if hours is not None else None
    return [
        ReportDecided(
            decision=command.decision,
            operator=command.operator,
            at=command.now,
            hours=hours,
            until=until,
            note=command.note,
        )
    ]
