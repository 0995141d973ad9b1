"""Quick-chat stamps as a Decider: a fixed set, no free text, one every few seconds.

A match's stamps are a stream of their own (`domain.streams.stamps_stream`), outside the
match's hash chain, so a match's replay and its verification stay byte-identical whatever
was said beside it. Only the ids live here: each viewer's page words a stamp in its own
language (`services/match/site.js`).

Who may stamp: a player seated at the match (a spectator sees stamps and sends none), when
the party has stamps on (its host may switch them off: `SendStamp.enabled`, read by the
service from the party), at most once every `STAMP_EVERY` seconds (the service's clock:
`SendStamp.now`). Muting is each viewer's own choice, kept on their device: not an event.
"""

from __future__ import annotations

from typing import ClassVar, Final

import msgspec

__all__ = [
    "PHRASES",
    "STAMPS",
    "STAMP_EVERY",
    "STICKERS",
    "SendStamp",
    "StampRejection",
    "StampSent",
    "StampsState",
    "apply",
    "decide",
    "decode_stamp_event",
]

# The phrases, in the order the page offers them; then the stickers.
PHRASES: Final = (
    "good_luck",  # よろしく / Good luck
    "nice",  # ナイス！ / Nice!
    "thanks",  # ありがとう / Thanks
    "sorry",  # ごめん / Sorry
    "good_game",  # おつかれさま / Good game
    "wow",  # すごい！ / Wow!
    "so_close",  # おしい！ / So close!
    "one_more",  # もう一回！ / One more!
)
STICKERS: Final = ("six", "star", "laugh", "tears")
STAMPS: Final = frozenset(PHRASES + STICKERS)
STAMP_EVERY: Final = 3.0  # seconds between two stamps of one player


class StampSent(msgspec.Struct, frozen=True, kw_only=True, tag=True, tag_field="type"):
    """The player in `seat` sent `stamp` at `at` (the service's clock, in seconds)."""

    schema_version: ClassVar[int] = 1

    seat: int
    stamp: str
    at: float


_decoder: msgspec.json.Decoder[StampSent] = msgspec.json.Decoder(StampSent)


def decode_stamp_event(data: bytes) -> StampSent:
    """Decode a stored stamp event (all are at schema version 1)."""
    return _decoder.decode(data)


class SendStamp(msgspec.Struct, frozen=True, kw_only=True):
    """Send `stamp` from `seat` (None: the sender is not seated: a spectator) at `now`;
    `enabled`: whether the party has stamps on."""

    seat: int | None
    stamp: str
    now: float
    enabled: bool = True


class StampRejection(msgspec.Struct, frozen=True):
    """Why a stamp was refused (nothing is appended); `wait`: seconds until the seat may
    stamp again (`too_soon` only)."""

    code: str
    reason: str
    field: str | None = None
    wait: float = 0.0


class StampsState:
    """When each seat last stamped, and the stream's version."""

    __slots__ = ("last", "version")

    def __init__(self) -> None:
        self.version = 0
        self.last: dict[int, float] = {}


def apply(state: StampsState, event: StampSent) -> None:
    """Record one stamp (no checks: events are facts)."""
    state.last[event.seat] = event.at
    state.version += 1


def decide(command: SendStamp, state: StampsState) -> list[StampSent] | StampRejection:
    """The stamp sent, or why not."""
    if command.seat is None:
        return StampRejection("spectator", "only the players at the table send stamps")
    if not command.enabled:
        return StampRejection("stamps_off", "the host switched stamps off for this table")
    if command.stamp not in STAMPS:
        return StampRejection("unknown_stamp", "not one of the table's stamps", "stamp")
    last = state.last.get(command.seat)
    if last is not None and command.now - last < STAMP_EVERY:
        wait = STAMP_EVERY - (command.now - last)
        return StampRejection(
            "too_soon", f"one stamp every 3 seconds: wait {wait:.1f} s", None, wait
        )
    return [StampSent(seat=command.seat, stamp=command.stamp, at=command.now)]
