import pytest

from benchmarks.peer import play_peer_matches


def test_peer_plays_requested_matches() -> None:
    """The peer adapter plays the requested number of full matches and reports time and turns."""
    pytest.importorskip("ludo_engine")

    run = play_peer_matches(3, seed=0)

    assert run.matches == 3
    assert run.seconds > 0
    assert run.turns > 0
