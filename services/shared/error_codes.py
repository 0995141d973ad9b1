"""Every `error` code the HTTP API answers, each once: its status and what it means.

The application raises errors by kind (`domain.errors`) and the edge maps a kind to its
status (`services.shared.errors.STATUS`); this is the same fact seen from a client: a code
is always answered with one status. The OpenAPI documents are written from it: an
operation names the codes it can answer (`services.shared.errors.error_responses`, beside
its route), the edge adds those every operation of a kind can answer (`EDGE_CODES`,
`services.shared.openapi_docs`), and each declared status lists its codes with their
meaning here. tests/services/test_error_codes.py holds the documents to what the services
answer.
"""

from __future__ import annotations

from typing import Final, NamedTuple

from domain.settings import ARENA_MINUTES, ARENA_SEATS, ARENA_TURN_LIMITS, one_of

__all__ = ["BODY_CODES", "ERROR_CODES", "ErrorCode", "codes_by_status"]


class ErrorCode(NamedTuple):
    status: int
    meaning: str


ERROR_CODES: Final[dict[str, ErrorCode]] = {
    # The edge: any route of the kind (see openapi_docs.truthful_errors).
    "malformed_json": ErrorCode(400, "the body is not JSON, is nested too deeply, or is missing"),
    "unauthorized": ErrorCode(401, "no bearer token, or one nobody issued"),
    "request_timeout": ErrorCode(408, "the request did not arrive in time"),
    "too_large": ErrorCode(413, "the body is larger than 16 KiB"),
    "unsupported_media_type": ErrorCode(415, "the body is declared as something other than JSON"),
    "invalid": ErrorCode(
        422,
        "a field, query or path value of the wrong type, out of range or unknown (`field` "
        "names it), or a body sent to a command that takes none",
    ),
    "too_many_requests": ErrorCode(
        429, "a per-client budget is spent; `Retry-After` says when to try again"
    ),
    "database_unavailable": ErrorCode(
        503, "the database cannot be reached; `Retry-After` says when to try again"
    ),
    "database_busy": ErrorCode(
        503, "the database did not answer in time (nothing was written); `Retry-After`"
    ),
    # Who may act.
    "forbidden": ErrorCode(403, "the token does not allow this"),
    "not_your_seat": ErrorCode(403, "the token holds no seat in this match"),
    "not_host": ErrorCode(403, "only the party's host may do this"),
    "not_seated": ErrorCode(403, "the token holds no seat at this party"),
    "spectator": ErrorCode(403, "only the players at the table send stamps"),
    "not_in_match": ErrorCode(403, "the reporter did not play in that match"),
    "ranked_paused": ErrorCode(
        403, "paused from ranked pools (abandons, or an operator); `until` says until when"
    ),
    # What is asked for.
    "not_found": ErrorCode(404, "no such id (or route segment)"),
    "not_analysed": ErrorCode(404, "the match runs, or its analysis is not written yet"),
    "no_arena": ErrorCode(404, "no such arena"),
    # Not now: the state does not allow it.
    "conflict": ErrorCode(409, "another command changed the state first; reload and retry"),
    "not_started": ErrorCode(409, "the match has not started"),
    "match_finished": ErrorCode(409, "the match is over"),
    "not_your_turn": ErrorCode(409, "it is another seat's turn"),
    "move_first": ErrorCode(409, "the die is rolled: move a piece first"),
    "roll_first": ErrorCode(409, "roll the die first"),
    "stood_in": ErrorCode(409, "a CPU plays for the seat: reclaim it first"),
    "cpu_playing": ErrorCode(409, "a CPU plays the seat's turn (timed out, or a CPU seat)"),
    "not_stood_in": ErrorCode(409, "the seat is not stood in for"),
    "already_stood_in": ErrorCode(409, "a CPU plays the seat already"),
    "seat_finished": ErrorCode(409, "the seat has finished already"),
    "ranked_match": ErrorCode(409, "a ranked match cannot be conceded (leave it instead)"),
    "stamps_off": ErrorCode(409, "the host switched stamps off"),
    "party_full": ErrorCode(409, "every seat is taken"),
    "seat_taken": ErrorCode(409, "that seat is taken"),
    "not_open": ErrorCode(409, "the party is no longer open"),
    "already_seated": ErrorCode(409, "the guest sits at this table already"),
    "not_a_cpu": ErrorCode(409, "no CPU sits in that seat"),
    "seats_empty": ErrorCode(409, "a seat is empty: fill it or add a CPU"),
    "match_running": ErrorCode(409, "the current match is not over yet"),
    "already_waiting": ErrorCode(409, "waiting in a pool already (the detail names it)"),
    "seated_elsewhere": ErrorCode(
        409, "a running match or an open party holds the guest (the detail names it)"
    ),
    "not_waiting": ErrorCode(409, "not waiting in this pool"),
    "already_decided": ErrorCode(409, "the report was decided already"),
    "already_joined": ErrorCode(409, "in this arena already"),
    "not_joined": ErrorCode(409, "not in this arena"),
    "already_paused": ErrorCode(409, "paused already"),
    "not_paused": ErrorCode(409, "not paused"),
    "arena_cancelled": ErrorCode(409, "the arena was cancelled"),
    "arena_over": ErrorCode(409, "the arena has ended"),
    "arena_running": ErrorCode(409, "the arena is not over: its file would show secret seeds"),
    "not_finished": ErrorCode(409, "the match has not finished"),
    "not_against_cpus": ErrorCode(409, "another person still plays: only a match against CPUs"),
    "already_reported": ErrorCode(409, "this player was reported for this match already"),
    "arena_table": ErrorCode(409, "an arena's table plays once: the arena pairs the next match"),
    "too_soon": ErrorCode(429, "one stamp every 3 seconds; `Retry-After` says when"),
    # The input is wrong.
    "illegal_move": ErrorCode(422, "that piece cannot move by this die; `why` says which rule"),
    "bad_ruleset": ErrorCode(422, "the rules are not a valid ruleset"),
    "bad_seed": ErrorCode(422, "the client seed is not valid"),
    "bad_seat": ErrorCode(422, "no such seat"),
    "bad_wait": ErrorCode(422, "not a CPU wait this pool takes"),
    "bad_command": ErrorCode(422, "the command's values do not fit the table"),
    "unknown_stamp": ErrorCode(422, "not one of the table's stamps"),
    "bad_reason": ErrorCode(422, "the reason is not one the API takes"),
    "self_report": ErrorCode(422, "a guest cannot report themselves"),
    "stranger": ErrorCode(422, "the reported guest did not play in that match"),
    "bad_decision": ErrorCode(422, "not a decision the API takes"),
    "bad_hours": ErrorCode(422, "a suspension's hours out of range"),
    "bad_note": ErrorCode(422, "the note is too long"),
    "bad_seats": ErrorCode(422, f"an arena is for tables of {one_of(ARENA_SEATS)} players"),
    "bad_minutes": ErrorCode(422, f"an arena lasts {one_of(ARENA_MINUTES)} minutes"),
    "bad_turn_limit": ErrorCode(422, f"an arena's turn limit is {one_of(ARENA_TURN_LIMITS)} s"),
    "bad_rules": ErrorCode(422, "not one of the arena rules"),
    "bad_scoring": ErrorCode(422, "not an arena scoring revision"),
    "bad_name": ErrorCode(422, "a name of the wrong length"),
    "bad_client_seed": ErrorCode(422, "the client seed is not valid"),
    "idempotency_key_reused": ErrorCode(
        422, "the Idempotency-Key was used already for another request"
    ),
    # Another service or process.
    "ranking_unavailable": ErrorCode(
        503, "the ranking service is unset or does not answer; `Retry-After`"
    ),
    "recompute_not_permitted": ErrorCode(
        503, "the database role may not recompute (docs/ranking.md); nothing changed"
    ),
}

# What any route that reads a request body can answer (POST, PUT, PATCH, DELETE:
# services/shared/bodies.py), before its handler runs.
BODY_CODES: Final = (
    "malformed_json",
    "request_timeout",
    "too_large",
    "unsupported_media_type",
    "invalid",
)


def codes_by_status(codes: tuple[str, ...] | list[str] | set[str]) -> dict[int, list[str]]:
    """`codes` grouped by their status (each group in the registry's order)."""
    grouped: dict[int, list[str]] = {}
    for code in ERROR_CODES:
        if code in codes:
            grouped.setdefault(ERROR_CODES[code].status, []).append(code)
    unknown = set(codes) - set(ERROR_CODES)
    if unknown:
        raise KeyError(f"error codes not in ERROR_CODES: {sorted(unknown)}")
    return grouped
