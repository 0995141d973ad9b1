"""The one versioned-file helper behind replay and tournament files, on a format of its
own: one item a line after the header, and a refusal naming what is wrong."""

from __future__ import annotations

import re
from typing import Literal

import msgspec
import pytest

from replays.versioned_file import VersionedFile


class NoteError(ValueError):
    pass


class NoteFile(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    format: Literal["ludo-note"] = "ludo-note"
    format_version: int = 1
    title: str
    lines: list[str]
    tags: list[str]


NOTES = VersionedFile(
    NoteFile,
    name="ludo-note",
    versions=frozenset({1}),
    error=NoteError,
    noun="a note file",
    hints={"ludo-replay": " (a replay)"},
)


def _dump(note: NoteFile) -> bytes:
    return NOTES.dump(
        note,
        [
            ("lines", [msgspec.json.encode(x) for x in note.lines]),
            ("tags", [msgspec.json.encode(x) for x in note.tags]),
        ],
    )


def test_dump_writes_the_header_then_one_item_a_line_and_loads_back() -> None:
    """The list fields come last, one item a line; the bytes are the same JSON and load
    back to the same file."""
    note = NoteFile(title="t", lines=["a", "b"], tags=["x"])
    raw = _dump(note)
    assert raw == (
        b'{"format":"ludo-note","format_version":1,"title":"t","lines":[\n"a",\n"b"\n],'
        b'"tags":[\n"x"\n]}\n'
    )
    assert msgspec.json.decode(raw) == msgspec.to_builtins(note)
    assert NOTES.load(raw) == note


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (b"{", "not JSON"),
        (b"[]", "a note file is one JSON object"),
        (
            b'{"format":"ludo-replay"}',
            re.escape("`format` must be 'ludo-note', got 'ludo-replay' (a replay)"),
        ),
        (b'{"format":["x"]}', re.escape("`format` must be 'ludo-note', got ['x']") + "$"),
        (
            b'{"format":"ludo-note","format_version":2,"title":"t","lines":[],"tags":[]}',
            r"`format_version` 2 is not one this ludo reads \(\[1\]\); a newer ludo may read it",
        ),
        (b'{"format":"ludo-note","format_version":{}}', "`format_version` {}"),
        (b'{"format":"ludo-note","format_version":1,"title":3}', r"\$\.title"),
    ],
)
def test_load_refuses_naming_what_is_wrong(raw: bytes, message: str) -> None:
    """Not JSON, not an object, another format (with the hint that names its reader), a
    version not read, a bad field: each refused in the format's own error, saying which."""
    with pytest.raises(NoteError, match=message):
        NOTES.load(raw)


def test_a_version_read_elsewhere_is_named_by_its_field() -> None:
    """A file held in another (a tournament's replays) is checked against its own versions
    and named by where it sits."""
    NOTES.check_version(3, field="inner.format_version", versions=frozenset({3}))
    with pytest.raises(NoteError, match=r"`inner\.format_version` 1 is not one"):
        NOTES.check_version(1, field="inner.format_version", versions=frozenset({3}))
