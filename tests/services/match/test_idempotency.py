"""Idempotency keys (services/match/idempotency.py): which keys a command may carry."""

from __future__ import annotations

import pytest

from domain.errors import Invalid
from services.match.guests import Player
from services.match.idempotency import command_id

_PLAYER = Player(id="p1", name="Alice")


@pytest.mark.parametrize("key", ["!", "~", "roll-1", "A" * 100, "".join(map(chr, range(33, 127)))])
def test_printable_ascii_keys_are_recorded_per_player(key: str) -> None:
    """A key of 1-100 printable ASCII characters, space excluded, is the player's own."""
    assert command_id(_PLAYER, key) == f"p1:{key}"


@pytest.mark.parametrize("key", ["", "a b", "tab\there", "del\x7f", "é", "A" * 101, "\x00"])
def test_other_keys_are_refused_as_the_header(key: str) -> None:
    """Empty, too long, a space, a control character or non-ASCII: 422 on the header."""
    with pytest.raises(Invalid) as refused:
        command_id(_PLAYER, key)
    assert refused.value.field == "Idempotency-Key"


def test_no_key_is_no_command_id() -> None:
    """Without a key the command is not recorded."""
    assert command_id(_PLAYER, None) is None
