"""Deterministic chance for CPU players: a number from (seed, roll number), nothing else."""

from __future__ import annotations

import hashlib

__all__ = ["pick_index"]


def pick_index(seed: str, n: int, count: int) -> int:
    """An index in range(count), uniform enough for play, fixed by (seed, n)."""
    digest = hashlib.blake2b(f"{seed}:{n}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") % count
