"""Deterministic chance for CPU players: a number from (seed, roll number), nothing else."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any, Final, TypeVar

__all__ = ["best_of", "pick_index"]

T = TypeVar("T")

# seed -> blake2b (8-byte digest) already fed `"{seed}:"`: hashing is incremental, so a copy
# of it fed `"{n}"` digests exactly `f"{seed}:{n}"`. A plain dict rather than `lru_cache`:
# a look-up costs less than a call through the cache's wrapper, and `pick_index` runs for
# most CPU decisions. Bounded: emptied when full (a match uses one seed per CPU seat).
_SEEDED: Final[dict[str, Any]] = {}
_SEEDED_MAX: Final = 256


def _seeded(seed: str) -> Any:
    if len(_SEEDED) >= _SEEDED_MAX:
        _SEEDED.clear()
    state = _SEEDED[seed] = hashlib.blake2b(f"{seed}:".encode(), digest_size=8)
    return state


def pick_index(seed: str, n: int, count: int) -> int:
    """An index in range(count), uniform enough for play, fixed by (seed, n)."""
    base = _SEEDED.get(seed)
    h = (base if base is not None else _seeded(seed)).copy()
    h.update(b"%d" % n)
    return int.from_bytes(h.digest(), "big") % count


def best_of(options: Sequence[T], scores: Sequence[float], seed: str, n: int) -> T:
    """The option of highest score; exact ties (within 1e-9) split by `pick_index(seed, n)`.

    The one place the scoring CPUs (`normal`, `hard`) turn scores into a choice, so that
    equal moves are split the same, reproducible way.
    """
    best = max(scores)
    tied = [o for o, s in zip(options, scores, strict=True) if s >= best - 1e-9]
    if len(tied) == 1:
        return tied[0]
    return tied[pick_index(seed, n, len(tied))]
