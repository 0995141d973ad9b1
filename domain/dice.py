"""Provably fair dice, exactly as DESIGN.md §4. Pure: the caller supplies the seed.

Roll n of a match is the first byte b < 252 of HMAC_SHA256(server_seed,
f"{client_seed}:{n}:{k}") for k = 0, 1, ..., mapped to b % 6 + 1. Rejecting bytes >= 252
(252 = 42 * 6) keeps the six faces exactly equally likely.
"""

from __future__ import annotations

import hashlib
import hmac

__all__ = [
    "CLIENT_SEED_MAX",
    "SEED_BYTES",
    "ClientSeedError",
    "check_client_seed",
    "die_for_roll",
    "join_client_seeds",
    "seed_commitment",
    "seed_matches",
]

SEED_BYTES = 32
CLIENT_SEED_MAX = 64
_UNBIASED_LIMIT = 252


class ClientSeedError(ValueError):
    """A client seed is longer than 64 characters or not printable ASCII."""


def die_for_roll(server_seed: bytes, client_seed: str, n: int) -> int:
    """The die (1-6) of roll number `n` (0-based, every roll of the match counted)."""
    prefix = f"{client_seed}:{n}:"
    k = 0
    while True:
        digest = hmac.digest(server_seed, f"{prefix}{k}".encode(), "sha256")
        for b in digest:
            if b < _UNBIASED_LIMIT:
                return b % 6 + 1
        k += 1  # all 32 bytes >= 252: astronomically rare, but defined


def seed_commitment(server_seed: bytes) -> str:
    """`seed_hash`: hex sha256 of the server seed, published before the first roll."""
    return hashlib.sha256(server_seed).hexdigest()


def seed_matches(server_seed_hex: str, seed_hash: str) -> bool:
    """True when a revealed seed (hex) is the one committed to by `seed_hash`."""
    try:
        seed = bytes.fromhex(server_seed_hex)
    except ValueError:
        return False
    return hmac.compare_digest(seed_commitment(seed), seed_hash)


def check_client_seed(seed: str) -> str:
    """Return `seed` if it is at most 64 printable ASCII characters, else raise."""
    if len(seed) > CLIENT_SEED_MAX:
        raise ClientSeedError(f"client seed is {len(seed)} characters; at most 64")
    if not all(" " <= ch <= "~" for ch in seed):
        raise ClientSeedError("client seed must be printable ASCII (space to ~)")
    return seed


def join_client_seeds(seeds: list[str] | tuple[str, ...]) -> str:
    """The match's client seed: the seats' seeds in seat order, joined by `|`."""
    return "|".join(check_client_seed(s) for s in seeds)
