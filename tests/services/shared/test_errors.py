"""Application errors carry a meaning and a code, no status; the edge maps each kind to the
HTTP status of docs/api.md, and the deciders' rejection codes to their kinds."""

from __future__ import annotations

import msgspec
import pytest

from domain.cannot_move import CannotMove
from domain.errors import (
    AppError,
    Conflict,
    Forbidden,
    Invalid,
    Malformed,
    NotFound,
    Unauthenticated,
    Unavailable,
    rejection_error,
)
from services.match.replays.service import ImportRefused, ReplayNotFound
from services.shared.errors import (
    ErrorBody,
    TimedOut,
    TooLarge,
    TooManyRequests,
    UnsupportedMediaType,
    known_error,
    status_of,
)

KINDS: list[tuple[AppError, int, str]] = [
    (Malformed("the body is not JSON"), 400, "malformed_json"),
    (Unauthenticated("unknown token"), 401, "unauthorized"),
    (Forbidden("not yours", code="not_your_seat"), 403, "not_your_seat"),
    (NotFound("no such match"), 404, "not_found"),
    (TimedOut("too slow"), 408, "request_timeout"),
    (Conflict("a CPU plays", code="stood_in"), 409, "stood_in"),
    (TooLarge("16 KiB at most"), 413, "too_large"),
    (UnsupportedMediaType("send JSON"), 415, "unsupported_media_type"),
    (Invalid("name: too long", field="name"), 422, "invalid"),
    (TooManyRequests("slow down", wait=1.5), 429, "too_many_requests"),
    (Unavailable("not permitted", code="recompute_not_permitted"), 503, "recompute_not_permitted"),
    (ReplayNotFound("no match x"), 404, "not_found"),
    (ImportRefused("already stored"), 422, "invalid"),
]


@pytest.mark.parametrize(("error", "status", "code"), KINDS, ids=lambda v: type(v).__name__)
def test_each_kind_has_its_status_and_body(error: AppError, status: int, code: str) -> None:
    """A kind's status comes from the edge's table (a subclass takes its ancestor's)."""
    assert not hasattr(error, "status")
    assert status_of(error) == status
    assert known_error(error) == (
        status,
        ErrorBody(error=code, detail=error.detail, field=error.field),
    )


def _kinds(cls: type[AppError]) -> set[type[AppError]]:
    return {cls} | {k for sub in cls.__subclasses__() for k in _kinds(sub)}


def test_every_kind_is_mapped() -> None:
    """Every application error class defined anywhere answers a 4xx, or 503."""
    for kind in _kinds(AppError) - {AppError}:
        error = kind.__new__(kind)
        assert 400 <= status_of(error) < 500 or status_of(error) == 503, kind


@pytest.mark.parametrize(
    ("code", "kind", "status"),
    [
        ("illegal_move", Invalid, 422),
        ("bad_ruleset", Invalid, 422),
        ("not_host", Forbidden, 403),
        ("not_seated", Forbidden, 403),
        ("not_found", NotFound, 404),
        ("not_your_turn", Conflict, 409),
        ("party_full", Conflict, 409),
        ("stand_in_kept", Conflict, 409),
    ],
)
def test_rejections_keep_their_code(code: str, kind: type[AppError], status: int) -> None:
    """A decider's rejection keeps its code and reason; unlisted codes are conflicts."""
    error = rejection_error(code, "why", "piece")
    assert type(error) is kind and (error.code, error.detail, error.field) == (code, "why", "piece")
    assert status_of(error) == status


class TestWhy:
    """A refusal's facts (`why`) go from the rejection through the error to the body."""

    def test_a_rejections_facts_reach_the_error_body(self) -> None:
        """rejection_error keeps `why`; known_error puts it in the body and its JSON."""
        why = CannotMove(rule="exact_finish", needs=3)
        error = rejection_error("illegal_move", "piece 0 cannot move 4: …", "piece", why)
        assert error.why is why
        status, body = known_error(error) or (0, None)
        assert status == 422 and body is not None and body.why is why
        assert msgspec.json.decode(msgspec.json.encode(body)) == {
            "error": "illegal_move",
            "detail": "piece 0 cannot move 4: …",
            "field": "piece",
            "why": {"rule": "exact_finish", "needs": 3},
        }

    def test_an_error_without_facts_keeps_its_json(self) -> None:
        """No `why` (every other error): the body's JSON has no `why` key at all."""
        body = ErrorBody(error="not_your_turn", detail="it is seat 1's turn")
        assert msgspec.json.decode(msgspec.json.encode(body)) == {
            "error": "not_your_turn",
            "detail": "it is seat 1's turn",
        }
