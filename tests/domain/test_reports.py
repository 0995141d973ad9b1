"""Reports of a player and the operator's decisions (`domain/reports.py`): who may report
whom, the reasons, one report per reporter, reported and match, and one final decision."""

from __future__ import annotations

import msgspec
import pytest

from domain.errors import Conflict, Forbidden, Invalid, NotFound, rejection_error
from domain.reports import (
    MAX_HOURS,
    REASONS,
    DecideReport,
    FileReport,
    ReportDecided,
    ReportFiled,
    ReportRejection,
    ReportState,
    apply,
    decide,
    decode_report_event,
    report_id,
)
from domain.streams import report_stream


def file(state: ReportState, **kw: object) -> object:
    """Decide a report (defaults: a fair one) and apply it when accepted; the decision."""
    fields: dict[str, object] = {
        "reporter": "a",
        "reported": "b",
        "match_id": "m",
        "reason": "left_on_purpose",
        "reporter_seated": True,
        "reported_seated": True,
        "now": 100.0,
    }
    fields.update(kw)
    decided = decide(FileReport(**fields), state)  # type: ignore[arg-type]
    if not isinstance(decided, ReportRejection):
        for event in decided:
            apply(state, event)
    return decided


def rule(state: ReportState, decision: str, hours: int | None = None, **kw: object) -> object:
    """Decide on the report as the operator and apply it when accepted; the decision."""
    decided = decide(
        DecideReport(operator="op", decision=decision, hours=hours, now=1000.0, **kw),  # type: ignore[arg-type]
        state,
    )
    if not isinstance(decided, ReportRejection):
        for event in decided:
            apply(state, event)
    return decided


def code(decided: object) -> str:
    """The rejection's code (fails when the command was accepted)."""
    assert isinstance(decided, ReportRejection), decided
    return decided.code


class TestFiling:
    def test_a_seated_player_reports_another(self) -> None:
        """A fair report is one `ReportFiled` with the derived id; the report is open."""
        state = ReportState()
        decided = file(state)
        assert decided == [
            ReportFiled(
                report_id=report_id("m", "a", "b"),
                match_id="m",
                reporter="a",
                reported="b",
                reason="left_on_purpose",
                at=100.0,
            )
        ]
        assert state.status == "open" and state.version == 1

    @pytest.mark.parametrize("reason", REASONS)
    def test_every_listed_reason_is_taken(self, reason: str) -> None:
        """Each of the four reasons files a report."""
        assert not isinstance(file(ReportState(), reason=reason), ReportRejection)

    def test_a_reason_off_the_list_is_refused(self) -> None:
        """Free text as a reason is `bad_reason` on the field `reason`."""
        decided = file(ReportState(), reason="he is bad")
        assert code(decided) == "bad_reason"
        assert isinstance(decided, ReportRejection) and decided.field == "reason"

    def test_oneself_is_refused(self) -> None:
        """Reporting yourself is `self_report`."""
        assert code(file(ReportState(), reported="a")) == "self_report"

    def test_only_a_player_of_the_match_reports(self) -> None:
        """A reporter who did not sit in the match is `not_in_match`."""
        assert code(file(ReportState(), reporter_seated=False)) == "not_in_match"

    def test_a_stranger_to_the_match_is_refused(self) -> None:
        """A reported player who did not play in the match is `stranger`."""
        assert code(file(ReportState(), reported_seated=False)) == "stranger"

    def test_one_report_per_reporter_reported_and_match(self) -> None:
        """A second report on the same stream is `already_reported`, decided or not."""
        state = ReportState()
        file(state)
        assert code(file(state)) == "already_reported"
        rule(state, "dismiss")
        assert code(file(state)) == "already_reported"

    def test_the_id_names_the_three(self) -> None:
        """The report id depends on match, reporter and reported (in that role)."""
        ids = {report_id("m", "a", "b"), report_id("m", "b", "a"), report_id("n", "a", "b")}
        assert len(ids) == 3 and report_id("m", "a", "b") == report_id("m", "a", "b")
        assert report_stream("x") == "report-x"


class TestDeciding:
    def test_suspend_for_hours(self) -> None:
        """A suspension records its hours and when it ends; the report is decided."""
        state = ReportState()
        file(state)
        decided = rule(state, "suspend", 24, note="left three times")
        assert decided == [
            ReportDecided(
                decision="suspend",
                operator="op",
                at=1000.0,
                hours=24,
                until=1000.0 + 24 * 3600,
                note="left three times",
            )
        ]
        assert state.status == "decided" and state.version == 2

    @pytest.mark.parametrize("decision", ["dismiss", "warn"])
    def test_dismiss_and_warn_have_no_end(self, decision: str) -> None:
        """Dismissing or warning records no hours and no end."""
        state = ReportState()
        file(state)
        decided = rule(state, decision)
        assert isinstance(decided, list) and decided[0].until is None

    def test_one_decision_only(self) -> None:
        """A second decision is `already_decided`."""
        state = ReportState()
        file(state)
        rule(state, "warn")
        assert code(rule(state, "suspend", 2)) == "already_decided"

    def test_no_report_no_decision(self) -> None:
        """Deciding a report never filed is `not_found`."""
        assert code(rule(ReportState(), "dismiss")) == "not_found"

    @pytest.mark.parametrize(
        ("decision", "hours", "expected"),
        [
            ("ban", None, "bad_decision"),
            ("suspend", None, "bad_hours"),
            ("suspend", 0, "bad_hours"),
            ("suspend", MAX_HOURS + 1, "bad_hours"),
            ("warn", 3, "bad_hours"),
        ],
    )
    def test_bad_decisions(self, decision: str, hours: int | None, expected: str) -> None:
        """An unknown decision, a suspension without 1 – a year of hours, or hours on
        anything else are refused."""
        state = ReportState()
        file(state)
        assert code(rule(state, decision, hours)) == expected
        assert state.status == "open"

    def test_a_long_note_is_refused(self) -> None:
        """A note over 500 characters is `bad_note`."""
        state = ReportState()
        file(state)
        assert code(rule(state, "warn", note="x" * 501)) == "bad_note"


def test_rejections_map_to_4xx_kinds() -> None:
    """Bad input is Invalid (422), a non-player Forbidden, a repeat a Conflict, none NotFound."""
    assert isinstance(rejection_error("bad_reason", ""), Invalid)
    assert isinstance(rejection_error("self_report", ""), Invalid)
    assert isinstance(rejection_error("stranger", ""), Invalid)
    assert isinstance(rejection_error("not_in_match", ""), Forbidden)
    assert isinstance(rejection_error("already_reported", ""), Conflict)
    assert isinstance(rejection_error("already_decided", ""), Conflict)
    assert isinstance(rejection_error("not_found", ""), NotFound)


def test_events_round_trip_through_json() -> None:
    """Both events decode from their stored JSON to equal values."""
    filed = ReportFiled(
        report_id="r", match_id="m", reporter="a", reported="b", reason="other", at=1.5
    )
    decided = ReportDecided(decision="suspend", operator="op", at=2.0, hours=1, until=3602.0)
    for event in (filed, decided):
        assert decode_report_event(msgspec.json.encode(event)) == event
