"""A versioned JSON file format: the one dump, load, explain and version check behind the
replay file (`replays.format`) and the tournament file (`replays.tournament`).

Such a file is one JSON object, a msgspec Struct whose first fields are `format` (the
format's name) and `format_version`, and whose last fields are lists written one item a
line after the header, so diffs and greps stay readable. A reader keeps reading every
version it lists; a file it cannot read is refused with an error naming the field.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Generic, TypeVar

import msgspec

__all__ = ["VersionedFile"]

F = TypeVar("F", bound=msgspec.Struct)

_encoder = msgspec.json.Encoder()


class VersionedFile(Generic[F]):
    """The format `name` read into `file_type`; `versions`: the `format_version`s this code
    reads; `error`: the ValueError it raises; `noun`: what the file is called in errors
    ("a replay file"); `hints`: words added when the file is of another format (by name),
    to say which command reads it."""

    def __init__(
        self,
        file_type: type[F],
        *,
        name: str,
        versions: frozenset[int],
        error: type[ValueError],
        noun: str,
        hints: Mapping[str, str] | None = None,
    ) -> None:
        self.name = name
        self.versions = versions
        self.error = error
        self.noun = noun
        self.hints = dict(hints or {})
        self._decoder = msgspec.json.Decoder(file_type)

    def dump(self, file: F, lists: Sequence[tuple[str, Sequence[bytes]]]) -> bytes:
        """The file's bytes: its header as one line, then each of `lists` (the file's last
        fields, in order: the name and its items' bytes) one item a line."""
        head = _encoder.encode(msgspec.structs.replace(file, **{name: [] for name, _ in lists}))
        tail = b",".join(b'"%s":[]' % name.encode() for name, _ in lists) + b"}"
        assert head.endswith(tail), f"{[n for n, _ in lists]} are not the last fields"
        body = b",".join(
            b'"%s":[\n' % name.encode() + b",\n".join(items) + b"\n]" for name, items in lists
        )
        return head[: -len(tail)] + body + b"}\n"

    def load(self, raw: bytes) -> F:
        """Parse a file; `error` naming the field when it is not one (msgspec's message
        gives the path, e.g. `$.events[7].hash`)."""
        try:
            file = self._decoder.decode(raw)
        except msgspec.DecodeError as error:
            # Not a file of a version this code reads: look again, untyped, to say what it
            # is instead.
            self.explain(raw, error)
            raise self.error(str(error)) from None
        # F is any Struct to mypy, which so knows no `format_version` field on it.
        self.check_version(getattr(file, "format_version"))  # noqa: B009
        return file

    def explain(self, raw: bytes, error: msgspec.DecodeError) -> None:
        """Raise the most useful `error` for bytes the typed decoder refused: not JSON, not
        a file of this format (another one, say), or a version this code does not read."""
        try:
            probe = msgspec.json.decode(raw)
        except msgspec.DecodeError:
            raise self.error(f"not JSON: {error}") from None
        if not isinstance(probe, dict):
            raise self.error(f"{self.noun} is one JSON object")
        found = probe.get("format")
        if found != self.name:
            # Asked of any JSON value: a list or an object cannot be looked up in a dict.
            hint = self.hints.get(found, "") if isinstance(found, str) else ""
            raise self.error(f"`format` must be {self.name!r}, got {found!r}{hint}")
        self.check_version(probe.get("format_version"))

    def check_version(
        self,
        version: object,
        *,
        field: str = "format_version",
        versions: frozenset[int] | None = None,
    ) -> None:
        """Raise `error` unless `version` is one of `versions` (by default this format's):
        `field` names where it was read (a file held inside another has its own)."""
        readable = self.versions if versions is None else versions
        # Asked of any JSON value: a list or an object cannot be looked up in a set.
        if not isinstance(version, int) or version not in readable:
            raise self.error(
                f"`{field}` {version!r} is not one this ludo reads "
                f"({sorted(readable)}); a newer ludo may read it"
            )
