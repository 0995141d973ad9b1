"""Stream ids: the one spelling of which event stream holds a match, its stamps, a party,
a pool, an arena or a report of a player.

A match is one stream (docs/design.md#streams-and-deciders), and so are its stamps (outside its hash
chain), a party and a quick-play pool; the stream id is part of the event model, not of storage:
every event's hash covers it (`domain.chain`) and a replay file names it
(`replays.format`). So it is spelled here, below everything that names a stream: the match
and ranking services, replays and the CLI. How streams are stored (the table, its SQL)
stays in the event store; this module only says what the ids look like.
"""

from __future__ import annotations

__all__ = [
    "MATCH_PREFIX",
    "PARTY_PREFIX",
    "POOL_PREFIX",
    "REPORT_PREFIX",
    "STAMPS_PREFIX",
    "TOURNAMENT_PREFIX",
    "is_match_stream",
    "match_id_of",
    "match_stream",
    "party_stream",
    "pool_stream",
    "report_stream",
    "stamps_stream",
    "tournament_stream",
]

MATCH_PREFIX = "match-"
PARTY_PREFIX = "party-"
POOL_PREFIX = "pool-"
STAMPS_PREFIX = "stamps-"
REPORT_PREFIX = "report-"
TOURNAMENT_PREFIX = "tournament-"


def match_stream(match_id: str) -> str:
    """The stream of the match `match_id`."""
    return f"{MATCH_PREFIX}{match_id}"


def party_stream(party_id: str) -> str:
    """The stream of the party `party_id`."""
    return f"{PARTY_PREFIX}{party_id}"


def stamps_stream(match_id: str) -> str:
    """The stream of the stamps sent at the match `match_id`."""
    return f"{STAMPS_PREFIX}{match_id}"


def pool_stream(seats: int, ranked: bool) -> str:
    """The stream of the quick-play pool of `seats`-seat tables, ranked or casual."""
    return f"{POOL_PREFIX}{seats}-{'ranked' if ranked else 'casual'}"


def report_stream(report_id: str) -> str:
    """The stream of the report `report_id` (`domain.reports`: one stream per report)."""
    return f"{REPORT_PREFIX}{report_id}"


def tournament_stream(arena_id: str) -> str:
    """The stream of the arena tournament `arena_id` (`domain.arena`)."""
    return f"{TOURNAMENT_PREFIX}{arena_id}"


def is_match_stream(stream_id: str) -> bool:
    return stream_id.startswith(MATCH_PREFIX)


def match_id_of(stream_id: str) -> str:
    """The match id a match stream names (`stream_id` unchanged if it names none)."""
    return stream_id.removeprefix(MATCH_PREFIX)
