"""Application errors by meaning: what went wrong, never how a protocol answers it.

The services, the replay projections and the deciders' rejections raise these; the edge
(`services/shared/errors.py`: the Litestar exception handlers and the socket frames) maps
each kind to its HTTP status and its JSON body `{"error": code, "detail": text, "field",
"why"}`. They live at the bottom of the tree, beside the deciders whose rejection codes
they classify (`rejection_error`), so that every layer may raise them; nothing here is I/O.

    AppError                  a request refused on purpose (`code`, `detail`, `field`,
                              `why`: the refusal's facts, when a client may word them)
    ├── Invalid               the input is wrong: a bad field, an illegal move
    │   └── Malformed         the input cannot be read at all (no body, not JSON)
    ├── Unauthenticated       no credentials, or unknown ones
    ├── Forbidden             known credentials that do not allow this (not the host)
    ├── NotFound              no such id
    ├── Conflict              not now: the state does not allow it (out of turn, over)
    └── Unavailable           something it needs cannot answer now; retry later

The transport adds its own kinds at the edge (a body too large, of another media type, too
slow, too many requests). `code` is the stable machine word the API returns; each kind has
a default, and a raise may name a more precise one (`Conflict(..., code="stood_in")`).
"""

from __future__ import annotations

from typing import ClassVar

from domain.cannot_move import CannotMove

__all__ = [
    "AppError",
    "Conflict",
    "Forbidden",
    "Invalid",
    "Malformed",
    "NotFound",
    "Unauthenticated",
    "Unavailable",
    "rejection_error",
]


class AppError(Exception):
    """A request refused on purpose: `code` (stable), `detail` (readable, in English),
    `field`, the input it names when there is one, and `why`, the refusal's facts when it
    has them (an illegal move's rule), for a client to word in its own language; `until`,
    when the refusal ends (ISO 8601: a pause from ranked pools). Raise one
    of the kinds below, not this."""

    default_code: ClassVar[str] = "bad_request"

    def __init__(
        self,
        detail: str,
        *,
        code: str | None = None,
        field: str | None = None,
        why: CannotMove | None = None,
        until: str | None = None,
    ) -> None:
        super().__init__(detail)
        self.code = code or self.default_code
        self.detail = detail
        self.field = field
        self.why = why
        self.until = until


class Invalid(AppError):
    """The input is wrong: a field out of range, an unknown ruleset option, an illegal
    move. Sending it again unchanged fails again."""

    default_code = "invalid"


class Malformed(Invalid):
    """The input cannot be read at all: no body, not JSON, nested too deeply."""

    default_code = "malformed_json"


class Unauthenticated(AppError):
    """No credentials, or credentials nobody issued."""

    default_code = "unauthorized"


class Forbidden(AppError):
    """Known credentials that do not allow this: not the host, not this seat's token."""

    default_code = "forbidden"


class NotFound(AppError):
    """No such id (a malformed id is one nobody has)."""

    default_code = "not_found"


class Conflict(AppError):
    """Not now: the state does not allow it (out of turn, wrong phase, already over, a
    recompute running). It may succeed after the state changes."""

    default_code = "conflict"


class Unavailable(AppError):
    """Something the request needs cannot answer now; the same request may work later."""

    default_code = "unavailable"


# The deciders' rejection codes that are not a conflict with the state (the rest are).
_REJECTION_KINDS: dict[str, type[AppError]] = {
    # bad input
    "bad_command": Invalid,
    "bad_ruleset": Invalid,
    "bad_seed": Invalid,
    "bad_seat": Invalid,
    "unknown_seat": Invalid,
    "illegal_move": Invalid,
    "bad_die": Invalid,
    "bad_wait": Invalid,
    "bad_rating": Invalid,
    # who may act
    "not_host": Forbidden,
    "not_seated": Forbidden,
    "not_found": NotFound,
    # reports of a player (domain/reports.py)
    "bad_reason": Invalid,
    "self_report": Invalid,
    "stranger": Invalid,
    "not_in_match": Forbidden,
    "bad_decision": Invalid,
    "bad_hours": Invalid,
    "bad_note": Invalid,
}


def rejection_error(
    code: str, reason: str, field: str | None = None, why: CannotMove | None = None
) -> AppError:
    """The error of a decider's rejection (`domain.commands.Rejection`,
    `domain.party.PartyRejection`): its code and facts kept, its kind from the code."""
    return _REJECTION_KINDS.get(code, Conflict)(reason, code=code, field=field, why=why)
