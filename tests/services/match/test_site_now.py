"""`cpu_only`, the rule behind the live view's CPU-only matches
(services/match/moderation/site_now.py): the domain's fold of a match's seat events says
whether only CPUs play it now. The counts over HTTP are in
tests/services/ranking/test_live_view.py."""

from __future__ import annotations

from domain import events as ev
from services.match.moderation.site_now import cpu_only


def created(*seats: str | None) -> ev.MatchCreated:
    """A match of `seats`: a player id, or None for a CPU seat."""
    specs = tuple(
        ev.SeatSpec(name=p or f"cpu-{i}", player_id=p, cpu=None if p else "easy")
        for i, p in enumerate(seats)
    )
    return ev.MatchCreated(ruleset={}, seats=specs, seed_hash="0" * 64)


def test_a_match_is_cpu_only_while_a_cpu_plays_every_seat_still_playing() -> None:
    """Stand-ins for every player make it CPU-only, a return ends that; a player who
    finished plays no more, so CPUs alone finishing the match count; a player at a seat of
    their own never is."""
    two = created("ann", None)
    assert not cpu_only([two])
    assert cpu_only([two, ev.SeatStoodIn(seat=0, reason="left")])
    assert not cpu_only(
        [two, ev.SeatStoodIn(seat=0, reason="disconnected"), ev.SeatReclaimed(seat=0)]
    )
    three = created("ann", "ben", None)
    assert not cpu_only([three, ev.SeatStoodIn(seat=1, reason="timeouts")])
    finished_then_left: list[ev.Event] = [
        three,
        ev.PlayerFinished(seat=0, place=1),
        ev.SeatStoodIn(seat=1, reason="left"),
    ]
    assert cpu_only(finished_then_left)
    assert cpu_only([created(None, None)])
    assert not cpu_only([])  # no match: nothing plays
