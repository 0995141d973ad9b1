"""Quick-chat stamps (`domain/stamps.py`): the fixed set, who may send, and how often."""

from __future__ import annotations

import msgspec
import pytest

from domain.stamps import (
    PHRASES,
    STAMP_EVERY,
    STAMPS,
    STICKERS,
    SendStamp,
    StampRejection,
    StampSent,
    StampsState,
    apply,
    decide,
    decode_stamp_event,
)
from domain.streams import stamps_stream


def send(state: StampsState, seat: int | None, stamp: str, now: float, **kw: bool) -> object:
    """Decide a stamp and apply it when sent; the decision."""
    decided = decide(SendStamp(seat=seat, stamp=stamp, now=now, **kw), state)
    if not isinstance(decided, StampRejection):
        for event in decided:
            apply(state, event)
    return decided


class TestTheSet:
    def test_phrases_and_stickers_are_one_fixed_set(self) -> None:
        """The five phrases asked for are there, with more, and a few stickers."""
        assert {"good_luck", "nice", "thanks", "sorry", "good_game"} <= set(PHRASES)
        assert len(PHRASES) > 5 and STICKERS and set(PHRASES) | set(STICKERS) == STAMPS

    def test_a_stamp_not_in_the_set_is_refused(self) -> None:
        """Free text, or any id not in the set, is refused `unknown_stamp`."""
        decided = send(StampsState(), 0, "hello there", 0.0)
        assert isinstance(decided, StampRejection) and decided.code == "unknown_stamp"
        assert decided.field == "stamp"

    def test_the_stream_is_the_matchs_own_beside_its_chain(self) -> None:
        """A match's stamps go to `stamps-<match id>`, not to the match's stream."""
        assert stamps_stream("m1") == "stamps-m1"


class TestWhoSends:
    def test_a_seated_player_sends(self) -> None:
        """A player in a seat sends a stamp: one event with the seat and the time."""
        state = StampsState()
        assert send(state, 1, "good_luck", 5.0) == [StampSent(seat=1, stamp="good_luck", at=5.0)]
        assert state.version == 1

    def test_a_spectator_does_not(self) -> None:
        """Someone not seated is refused `spectator`."""
        decided = send(StampsState(), None, "nice", 0.0)
        assert isinstance(decided, StampRejection) and decided.code == "spectator"

    def test_the_host_can_switch_stamps_off(self) -> None:
        """With stamps off for the party, nobody sends."""
        decided = send(StampsState(), 0, "nice", 0.0, enabled=False)
        assert isinstance(decided, StampRejection) and decided.code == "stamps_off"


class TestFloods:
    def test_one_stamp_every_three_seconds(self) -> None:
        """A second stamp within STAMP_EVERY seconds is refused `too_soon`; after, it goes."""
        state = StampsState()
        send(state, 0, "nice", 10.0)
        too_soon = send(state, 0, "wow", 10.0 + STAMP_EVERY - 0.1)
        assert isinstance(too_soon, StampRejection) and too_soon.code == "too_soon"
        assert isinstance(send(state, 0, "wow", 10.0 + STAMP_EVERY), list)

    def test_each_player_has_their_own_pace(self) -> None:
        """One player's stamp does not hold another's back."""
        state = StampsState()
        send(state, 0, "nice", 10.0)
        assert isinstance(send(state, 1, "thanks", 10.5), list)

    @pytest.mark.parametrize("gap", [0.0, 1.0, 2.99])
    def test_a_refused_stamp_does_not_restart_the_wait(self, gap: float) -> None:
        """Refused stamps change nothing: the wait counts from the last stamp sent."""
        state = StampsState()
        send(state, 0, "nice", 0.0)
        send(state, 0, "nice", gap)
        assert state.version == 1
        assert isinstance(send(state, 0, "nice", STAMP_EVERY), list)


class TestStored:
    def test_a_stamp_event_decodes_as_it_was_encoded(self) -> None:
        """A StampSent encoded for the store decodes back to the same event."""
        event = StampSent(seat=2, stamp="good_game", at=12.5)
        assert decode_stamp_event(msgspec.json.encode(event)) == event

    def test_too_soon_says_how_long_to_wait(self) -> None:
        """A `too_soon` refusal carries the seconds left before the seat may stamp again."""
        state = StampsState()
        send(state, 0, "nice", 10.0)
        decided = send(state, 0, "nice", 11.0)
        assert isinstance(decided, StampRejection) and decided.wait == pytest.approx(2.0)
