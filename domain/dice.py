"""Provably fair dice, exactly as docs/design.md#fair-dice. Pure: the caller supplies the seed.

Roll n of a match is the first byte b < 252 of HMAC_SHA256(server_seed,
f"{client_seed}:{n}:{k}") for k = 0, 1, ..., mapped to b % 6 + 1. Rejecting bytes >= 252
(252 = 42 * 6) keeps the six faces exactly equally likely.

Speed: HMAC with a fixed key hashes the same two 64-byte key blocks (key XOR ipad, key XOR
opad, RFC 2104) on every call, which is most of the cost of `hmac.digest` for a short
message. `DiceStream` hashes them (and the constant `"{client_seed}:"` start of every
message) once per match and copies the SHA-256 states per roll: same bytes, ~4x cheaper.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Callable
from functools import lru_cache
from typing import Any, Final

from mypy_extensions import mypyc_attr

__all__ = [
    "CLIENT_SEED_MAX",
    "SEED_BYTES",
    "ClientSeedError",
    "DiceStream",
    "check_client_seed",
    "die_for_roll",
    "join_client_seeds",
    "seed_commitment",
    "seed_matches",
]

SEED_BYTES = 32
CLIENT_SEED_MAX = 64
_UNBIASED_LIMIT: Final = 252
_BLOCK = 64  # SHA-256 block size: HMAC pads the key to this length
# XOR with HMAC's ipad / opad byte (RFC 2104) as `bytes.translate` tables: the padded key
# XOR ipad is then one C call instead of a 64-step Python loop (twice per match).
_XOR_IPAD = bytes(b ^ 0x36 for b in range(256))
_XOR_OPAD = bytes(b ^ 0x5C for b in range(256))
# The messages' ends `"{n}:0"` of a match's first rolls (a match rolls ~400-600 dice),
# formatted once: per roll, formatting n costs about as much as copying a hash state.
_ROLL_SUFFIXES: Final[tuple[bytes, ...]] = tuple(b"%d:0" % n for n in range(1024))


def _sha256_constructor() -> Callable[[bytes], Any]:
    """CPython's own SHA-256 when present: the same function as OpenSSL's, but a roll is
    two state copies and two short updates, and its states copy more cheaply (a roll took
    ~0.95 µs against ~1.3 µs with `hashlib.sha256`, timeit on the development machine)."""
    for name in ("_sha256", "_sha2"):  # Python 3.11 / 3.12+
        try:
            module = __import__(name)
        except ImportError:
            continue
        constructor: Callable[[bytes], Any] = module.sha256
        return constructor
    return hashlib.sha256


_sha256 = _sha256_constructor()


# Not a native class when mypyc compiles this module (see docs/benchmarks.md): a msgspec
# Struct or an exception subclass must stay an ordinary Python class.
@mypyc_attr(native_class=False)
class ClientSeedError(ValueError):
    """A client seed is longer than 64 characters or not printable ASCII."""


class DiceStream:
    """The dice of one match: `stream(n) == die_for_roll(server_seed, client_seed, n)`.

    Holds the HMAC key's inner and outer SHA-256 states, the inner one already fed
    `"{client_seed}:"`; each roll copies both and hashes only `"{n}:{k}"` and the inner
    digest. Byte-identical to `hmac.digest(server_seed, msg, "sha256")` (RFC 2104).
    It embeds the secret seed: keep it as private as the seed itself.
    """

    # Methods looked up once, not per roll: `_copy_inner` and `_copy_outer` are the states'
    # bound `copy`, `_update` and `_digest` their type's, called as functions on each roll's
    # fresh copies (compiled, this saves a method look-up per call, six per roll).
    __slots__ = ("_copy_inner", "_copy_outer", "_digest", "_inner", "_outer", "_update")

    def __init__(self, server_seed: bytes, client_seed: str) -> None:
        key = server_seed
        if len(key) > _BLOCK:  # RFC 2104: a long key is hashed first (never for 32 bytes)
            key = hashlib.sha256(key).digest()
        key = key.ljust(_BLOCK, b"\0")
        self._inner = _sha256(key.translate(_XOR_IPAD))
        self._inner.update(f"{client_seed}:".encode())
        self._outer = _sha256(key.translate(_XOR_OPAD))
        self._copy_inner: Callable[[], Any] = self._inner.copy
        self._copy_outer: Callable[[], Any] = self._outer.copy
        self._update: Callable[[Any, bytes], None] = type(self._inner).update
        self._digest: Callable[[Any], bytes] = type(self._inner).digest

    def digest(self, n: int, k: int) -> bytes:
        """HMAC_SHA256(key=server_seed, msg=f"{client_seed}:{n}:{k}")."""
        inner = self._inner.copy()
        inner.update(b"%d:%d" % (n, k))
        outer = self._outer.copy()
        outer.update(inner.digest())
        digest: bytes = outer.digest()
        return digest

    def __call__(self, n: int) -> int:
        """The die (1-6) of roll number `n`."""
        # `digest(n, 0)` inlined: this runs for every roll of every match.
        update, digest = self._update, self._digest
        inner = self._copy_inner()
        update(inner, _ROLL_SUFFIXES[n] if 0 <= n < len(_ROLL_SUFFIXES) else b"%d:0" % n)
        outer = self._copy_outer()
        update(outer, digest(inner))
        b = digest(outer)[0]
        if b < _UNBIASED_LIMIT:
            return b % 6 + 1
        return self._rejection_loop(n)  # first byte >= 252: one roll in 64

    def _rejection_loop(self, n: int) -> int:
        """docs/design.md#the-derivation written out: the first byte < 252 of the digests for
        k = 0, 1, ..."""
        k = 0
        while True:
            for b in self.digest(n, k):
                if b < _UNBIASED_LIMIT:
                    return b % 6 + 1
            k += 1  # all 32 bytes >= 252: astronomically rare, but defined


@lru_cache(maxsize=128)
def _stream(server_seed: bytes, client_seed: str) -> DiceStream:
    # Bounded: a service process plays many matches; the seeds it holds are secret until
    # their match ends, the same as the service's own seed cache.
    return DiceStream(server_seed, client_seed)


def die_for_roll(server_seed: bytes, client_seed: str, n: int) -> int:
    """The die (1-6) of roll number `n` (0-based, every roll of the match counted).

    Uses a cached `DiceStream` per (server seed, client seed); callers that roll many dice
    of one match may hold a `DiceStream` themselves.
    """
    return _stream(bytes(server_seed), client_seed)(n)


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
