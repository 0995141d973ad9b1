"""Deterministic chance for CPU players: a number from (seed, roll number), nothing else."""

from __future__ import annotations

import hashlib
from functools import lru_cache
from typing import Any

__all__ = ["pick_index"]


@lru_cache(maxsize=256)
def _seeded(seed: str) -> Any:
    """blake2b (8-byte digest) already fed `"{seed}:"`: hashing is incremental, so a copy
    of it fed `"{n}"` digests exactly `f"{seed}:{n}"`."""
    return hashlib.blake2b(f"{seed}:".encode(), digest_size=8)


def pick_index(seed: str, n: int, count: int) -> int:
    """An index in range(count), uniform enough for play, fixed by (seed, n)."""
    h = _seeded(seed).copy()
    h.update(b"%d" % n)
    return int.from_bytes(h.digest(), "big") % count
