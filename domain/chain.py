"""The per-stream hash chain of stored events (docs/design.md#the-hash-chain, tamper evidence).

Every stored event carries `prev_hash` and `hash = sha256(prev_hash ‖ canonical bytes)`,
where `prev_hash` is the `hash` of the stream's previous event, or `GENESIS` (32 zero
bytes) for version 0. Changing, dropping, inserting or reordering any event of a stream
changes every later hash, so a replay file or a table dump can be checked offline by
recomputing the chain with this module alone: the event store and replay verification call
the same function.

Canonical bytes of an event (all integers unsigned big-endian; strings UTF-8):

    b"ludo.event.v1"                    domain tag: which format this is
    u32 len(stream_id)  stream_id
    u64 version                         0-based stream version
    u32 len(type)       type            event type name, e.g. "DieRolled"
    u32 schema_version
    u64 len(data)       data            the exact serialized JSON bytes that are stored

Every variable-length field is length-prefixed, so no two different events share canonical
bytes. `data` is hashed as stored (msgspec's JSON output, kept verbatim in a `json` column),
never a re-encoded or key-sorted form. A change to this layout needs a new domain tag.
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Callable, Iterable

__all__ = [
    "DOMAIN_TAG",
    "GENESIS",
    "HASH_SIZE",
    "ChainLink",
    "canonical_bytes",
    "event_hash",
    "first_break",
]

HASH_SIZE = 32
GENESIS = bytes(HASH_SIZE)
DOMAIN_TAG = b"ludo.event.v1"

_U32 = struct.Struct(">I")
_U32_MAX = 2**32 - 1
_U64 = struct.Struct(">Q")

# (stream_id, version, type_name, schema_version, data, prev_hash, hash) of one stored event.
# The two hashes as their source keeps them: 32 bytes (the event store) or hex text (a
# replay file), so a replay file's chain is checked without decoding two hashes per event.
ChainLink = tuple[str, int, str, int, bytes, bytes | str, bytes | str]


def canonical_bytes(
    stream_id: str, version: int, type_name: str, schema_version: int, data: bytes
) -> bytes:
    """The bytes of one event that its hash covers (layout in the module docstring)."""
    sid = stream_id.encode("utf-8")
    tname = type_name.encode("utf-8")
    return b"".join(
        (
            DOMAIN_TAG,
            _U32.pack(len(sid)),
            sid,
            _U64.pack(version),
            _U32.pack(len(tname)),
            tname,
            _U32.pack(schema_version),
            _U64.pack(len(data)),
            data,
        )
    )


def event_hash(
    prev_hash: bytes,
    stream_id: str,
    version: int,
    type_name: str,
    schema_version: int,
    data: bytes,
) -> bytes:
    """`sha256(prev_hash ‖ canonical bytes)`: the hash stored with the event."""
    if len(prev_hash) != HASH_SIZE:
        raise ValueError(f"prev_hash must be {HASH_SIZE} bytes, got {len(prev_hash)}")
    digest = hashlib.sha256(prev_hash)
    digest.update(canonical_bytes(stream_id, version, type_name, schema_version, data))
    return digest.digest()


def first_break(links: Iterable[ChainLink]) -> tuple[int, str] | None:
    """Check one stream's events, in order from version 0; None if the chain holds.

    Otherwise `(position, reason)` of the first event that breaks it: a version out of
    sequence, a `prev_hash` that is not the previous event's hash, or a `hash` that does
    not match the event's content. `position` is the event's index in `links`: its
    version when the chain breaks at its content, the version it should have had when its
    version is out of sequence (a dropped or reordered event). A link's hashes may be
    bytes or hex (either case).
    """
    # What is hashed in front of the next event (the previous event's hash, checked), and
    # that hash as the links spell it: the next `prev_hash` must be the same value.
    prefix = GENESIS
    expected_prev: bytes | str = GENESIS
    stream: str | None = None
    head = b""
    # The canonical bytes of `event_hash`, assembled from parts that repeat across a
    # stream instead of rebuilt per event (replay verification hashes every event of
    # every match, so this loop is its floor): the stream's head, and per event type a
    # packer of the version, the type part and the data's length in one call. Keyed by
    # the type name alone (a string key hashes at once; a tuple key is hashed anew per
    # event), the packer rebuilt when a type's schema version changes.
    type_packers: dict[str, tuple[int, Callable[[int, bytes, int], bytes], bytes]] = {}
    sha256 = hashlib.sha256
    for index, (stream_id, version, type_name, schema_version, data, prev, stored) in enumerate(
        links
    ):
        if stream_id != stream:
            if stream is not None:
                return index, f"stream id {stream_id!r} differs from {stream!r}"
            stream = stream_id
            sid = stream_id.encode("utf-8")
            head = DOMAIN_TAG + _U32.pack(len(sid)) + sid
        if version != index:
            return index, f"version {version} where {index} was expected"
        # Compared as spelled first (one string or bytes comparison); decoded only when
        # the spellings differ, so hex in upper case still counts as the same hash.
        if prev != expected_prev and not _spells(prev, prefix):
            return index, "prev_hash is not the previous event's hash"
        packer = type_packers.get(type_name)
        if packer is None or packer[0] != schema_version:
            if not 0 <= schema_version <= _U32_MAX:  # a replay file can say anything
                return index, f"schema version {schema_version} is out of range"
            tname = type_name.encode("utf-8")
            part = _U32.pack(len(tname)) + tname + _U32.pack(schema_version)
            packer = (schema_version, struct.Struct(f">Q{len(part)}sQ").pack, part)
            type_packers[type_name] = packer
        middle = packer[1](version, packer[2], len(data))  # u64 version, part, u64 len(data)
        digest = sha256(b"".join((prefix, head, middle, data))).digest()
        if (digest.hex() if type(stored) is str else digest) != stored and not _spells(
            stored, digest
        ):
            return index, "hash does not match the event's content"
        prefix = digest
        expected_prev = stored
    return None


def _spells(stored: bytes | str, digest: bytes) -> bool:
    """Whether a hash as a link keeps it (bytes, or hex in either case) is `digest`."""
    if isinstance(stored, str):
        try:
            return bytes.fromhex(stored) == digest
        except ValueError:  # not hex: not this hash
            return False
    return stored == digest
