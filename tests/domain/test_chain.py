"""The hash chain's canonical bytes (domain/chain.py): pinned, unambiguous, tamper-evident.

Pure tests (no database). The golden vectors pin the format: a replay written today must
verify with any later version of the code, so a change here needs a new domain tag.
"""

from __future__ import annotations

import hashlib

import pytest

from domain.chain import GENESIS, canonical_bytes, event_hash, first_break
from domain.events import DieRolled, TurnEnded, encode_event

ROLL = encode_event(DieRolled(seat=0, n=0, value=6))
END = encode_event(TurnEnded(seat=0, next_seat=1))
H0 = "682930f009f77edde459d4ec5e81cd611f4950e311057f91cddebe06aa0d9435"
H1 = "8bccacb825a979d7eb1d39ad5014552a467fdec90594ad2ad980c9349a907df9"


def links() -> list[tuple[str, int, str, int, bytes, bytes, bytes]]:
    h0 = event_hash(GENESIS, "match-1", 0, "DieRolled", 1, ROLL)
    h1 = event_hash(h0, "match-1", 1, "TurnEnded", 1, END)
    return [
        ("match-1", 0, "DieRolled", 1, ROLL, GENESIS, h0),
        ("match-1", 1, "TurnEnded", 1, END, h0, h1),
    ]


def test_golden_vectors() -> None:
    """The first two hashes of a known stream are pinned to the documented layout."""
    assert ROLL == b'{"type":"DieRolled","seat":0,"n":0,"value":6}'
    expected = (
        b"ludo.event.v1"
        + (7).to_bytes(4, "big") + b"match-1"
        + (0).to_bytes(8, "big")
        + (9).to_bytes(4, "big") + b"DieRolled"
        + (1).to_bytes(4, "big")
        + len(ROLL).to_bytes(8, "big") + ROLL
    )  # fmt: skip
    assert canonical_bytes("match-1", 0, "DieRolled", 1, ROLL) == expected
    assert hashlib.sha256(GENESIS + expected).hexdigest() == H0
    assert [link[6].hex() for link in links()] == [H0, H1]


@pytest.mark.parametrize(
    "changed",
    [
        ("match-2", 0, "DieRolled", 1, ROLL),
        ("match-1", 1, "DieRolled", 1, ROLL),
        ("match-1", 0, "DieRolle", 1, ROLL),
        ("match-1", 0, "DieRolled", 2, ROLL),
        ("match-1", 0, "DieRolled", 1, ROLL.replace(b"6", b"5")),
        ("match-1", 0, "DieRolled", 1, ROLL + b" "),
    ],
)
def test_every_field_is_covered(changed: tuple[str, int, str, int, bytes]) -> None:
    """Changing the stream, version, type, schema version or any data byte changes the hash."""
    assert event_hash(GENESIS, *changed).hex() != H0


def test_length_prefixes_keep_fields_apart() -> None:
    """Moving bytes between adjacent fields gives different canonical bytes."""
    assert canonical_bytes("ab", 0, "c", 1, b"{}") != canonical_bytes("a", 0, "bc", 1, b"{}")


def test_prev_hash_must_be_32_bytes() -> None:
    """A malformed prev_hash is refused rather than hashed."""
    with pytest.raises(ValueError):
        event_hash(b"short", "match-1", 0, "DieRolled", 1, ROLL)


def test_first_break_accepts_an_intact_chain() -> None:
    """An untouched stream verifies."""
    assert first_break(links()) is None
    assert first_break([]) is None


def test_first_break_finds_tampering() -> None:
    """Edited data, a dropped event, reordering and a forged link are each located."""
    a, b = links()
    edited = (*a[:4], ROLL.replace(b"6", b"5"), *a[5:])
    assert first_break([edited, b]) == (0, "hash does not match the event's content")
    assert first_break([b]) == (0, "version 1 where 0 was expected")
    assert first_break([b, a]) == (0, "version 1 where 0 was expected")  # by position
    forged = (*b[:5], GENESIS, b[6])
    assert first_break([a, forged]) == (1, "prev_hash is not the previous event's hash")
    other_stream = ("match-2", *b[1:])
    assert first_break([a, other_stream]) is not None


@pytest.mark.parametrize("schema_version", [-1, 2**32, 2**70])
def test_first_break_names_a_schema_version_out_of_range(schema_version: int) -> None:
    """A schema version with no canonical bytes (a replay file can say anything) breaks
    the chain at that event instead of escaping as a packing error (found by the replay
    fuzz test)."""
    a, b = links()
    odd = (*b[:3], schema_version, *b[4:])
    assert first_break([a, odd]) == (1, f"schema version {schema_version} is out of range")
