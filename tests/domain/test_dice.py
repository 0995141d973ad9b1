"""Provably fair dice (docs/design.md#fair-dice), checked against a reference written here from the
design text with `hmac`/`hashlib` alone, never with domain.dice's own helpers."""

from __future__ import annotations

import hashlib
import hmac
import itertools

import pytest

import domain.dice
from domain.dice import (
    CLIENT_SEED_MAX,
    SEED_BYTES,
    ClientSeedError,
    DiceStream,
    check_client_seed,
    die_for_roll,
    join_client_seeds,
    seed_commitment,
    seed_matches,
)
from domain.engine_form import engine_form
from tests.conftest import SERVER_SEED

SEEDS = [bytes(32), SERVER_SEED, b"\xff" * 32, hashlib.sha256(b"ludo").digest()]
CLIENT_SEEDS = ["", "alice", "alice|bob", "a b|~!|x y z|"]


def digest(server_seed: bytes, client_seed: str, n: int, k: int) -> bytes:
    """HMAC_SHA256(key=server_seed, msg=f"{client_seed}:{n}:{k}")."""
    return hmac.new(server_seed, f"{client_seed}:{n}:{k}".encode(), hashlib.sha256).digest()


def reference_die(server_seed: bytes, client_seed: str, n: int) -> int:
    """docs/design.md#the-derivation: for k = 0, 1, …, the first byte b < 252 of the digest
    gives b % 6 + 1."""
    for k in itertools.count():
        for b in digest(server_seed, client_seed, n, k):
            if b < 252:
                return b % 6 + 1
    raise AssertionError("unreachable")


def first_byte_skipped(server_seed: bytes, client_seed: str, limit: int = 5000) -> int:
    """A roll number whose digest (k = 0) starts with a byte >= 252 whose face differs
    from the face actually due, so using that byte would be visibly wrong."""
    for n in range(limit):
        d = digest(server_seed, client_seed, n, 0)
        if d[0] >= 252 and d[0] % 6 != d[1] % 6 and d[1] < 252:
            return n
    raise AssertionError("no such roll in range")


class TestDieForRoll:
    """die_for_roll against the reference."""

    @pytest.mark.parametrize(
        ("server_seed", "client_seed"),
        itertools.product(SEEDS, CLIENT_SEEDS),
        ids=[f"seed{i}-client{j}" for i in range(len(SEEDS)) for j in range(len(CLIENT_SEEDS))],
    )
    def test_die_matches_the_hmac_reference(self, server_seed: bytes, client_seed: str) -> None:
        """Rolls 0…299 equal the first-byte-below-252 rule of the design."""
        for n in range(300):
            assert die_for_roll(server_seed, client_seed, n) == reference_die(
                server_seed, client_seed, n
            ), n

    def test_frozen_vectors(self) -> None:
        """Known answers for third-party verifiers (seed bytes 0…31, client seed "")."""
        assert [die_for_roll(SERVER_SEED, "", n) for n in range(20)] == [
            1, 4, 3, 6, 3, 6, 1, 4, 2, 4, 2, 1, 6, 6, 3, 2, 4, 1, 1, 4,
        ]  # fmt: skip
        assert [die_for_roll(bytes(32), "alice|bob", n) for n in range(20)] == [
            2, 2, 5, 3, 2, 3, 1, 5, 4, 6, 6, 2, 6, 4, 2, 5, 4, 4, 3, 1,
        ]  # fmt: skip

    @pytest.mark.parametrize("client_seed", ["", "alice|bob"])
    def test_a_first_byte_of_252_or_more_is_skipped(self, client_seed: str) -> None:
        """A digest starting with a byte >= 252 takes its die from the next byte below 252."""
        n = first_byte_skipped(SERVER_SEED, client_seed)
        d = digest(SERVER_SEED, client_seed, n, 0)
        assert die_for_roll(SERVER_SEED, client_seed, n) == d[1] % 6 + 1 != d[0] % 6 + 1

    @pytest.mark.skipif(
        engine_form() == "compiled",
        reason="fakes DiceStream.digest: a compiled (mypyc) class's methods cannot be patched",
    )
    @pytest.mark.parametrize("bad_digests", [1, 2])
    def test_k_advances_when_every_byte_is_252_or_more(
        self, monkeypatch: pytest.MonkeyPatch, bad_digests: int
    ) -> None:
        """If all 32 bytes of k = 0 (and k = 1) are >= 252 the die comes from the next k.

        Faked (too rare to find): the digests for k < `bad_digests` are replaced by bytes
        >= 252. Only rolls whose real k = 0 digest starts with a byte >= 252 reach the
        rejection loop, so those are the rolls checked."""
        real = DiceStream.digest

        def fake_digest(self: DiceStream, n: int, k: int) -> bytes:
            if k < bad_digests:
                return b"\xfc\xfd\xfe\xff" * 8
            return real(self, n, k)

        rolls = [n for n in range(3000) if digest(SERVER_SEED, "x", n, 0)[0] >= 252]
        assert len(rolls) >= 20
        monkeypatch.setattr(DiceStream, "digest", fake_digest)
        for n in rolls:
            expected = next(b % 6 + 1 for b in digest(SERVER_SEED, "x", n, bad_digests) if b < 252)
            assert DiceStream(SERVER_SEED, "x")(n) == expected
            assert die_for_roll(SERVER_SEED, "x", n) == expected

    def test_the_roll_number_and_client_seed_change_the_die_stream(self) -> None:
        """Different n, client seed or server seed give different die sequences."""
        streams = {
            (seed, cs): tuple(die_for_roll(seed, cs, n) for n in range(40))
            for seed in SEEDS
            for cs in CLIENT_SEEDS
        }
        assert len(set(streams.values())) == len(streams)

    def test_dice_are_uniform_enough(self) -> None:
        """Chi-square over 60,000 rolls (5 degrees of freedom) stays below 30 (p ≈ 1e-5)."""
        counts = [0] * 7
        for n in range(60_000):
            counts[die_for_roll(SERVER_SEED, "uniformity", n)] += 1
        assert counts[0] == 0
        expected = 60_000 / 6
        chi2 = sum((c - expected) ** 2 / expected for c in counts[1:])
        assert chi2 < 30, (counts, chi2)


class TestDiceStream:
    """The precomputed-pad fast path against `hmac.digest` (RFC 2104) itself."""

    def test_digest_is_the_hmac_of_the_design(self) -> None:
        """DiceStream.digest(n, k) is HMAC_SHA256(server_seed, f"{client_seed}:{n}:{k}")."""
        for i in range(40):
            seed = hashlib.sha256(f"digest-{i}".encode()).digest()
            for client_seed in [*CLIENT_SEEDS, "x" * 64 + "|" + "y" * 64]:
                stream = DiceStream(seed, client_seed)
                for n, k in itertools.product((0, 1, 9, 10, 99, 1234, 10**6), (0, 1, 2, 17)):
                    msg = f"{client_seed}:{n}:{k}".encode()
                    assert stream.digest(n, k) == hmac.digest(seed, msg, "sha256")

    def test_dice_equal_the_reference_over_many_seeds_and_rolls(self) -> None:
        """100 server seeds x 3 client seeds x 400 rolls: every die equals the reference,
        including the ~1 in 64 rolls whose first byte is rejected."""
        rejected = 0
        for i in range(100):
            seed = hashlib.sha256(f"many-{i}".encode()).digest()
            for client_seed in ("", f"s{i}", "a b|~!|x y z|"):
                stream = DiceStream(seed, client_seed)
                for n in range(400):
                    d = hmac.digest(seed, f"{client_seed}:{n}:0".encode(), "sha256")
                    rejected += d[0] >= 252
                    expected = reference_die(seed, client_seed, n)
                    assert stream(n) == expected, (i, client_seed, n)
                    if n % 10 == 0:
                        assert die_for_roll(seed, client_seed, n) == expected
        assert rejected > 1000  # the rejection path really ran (expected ~1,875)

    def test_the_openssl_fallback_gives_the_same_dice(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Without CPython's built-in SHA-256 the stream falls back to hashlib's: same dice."""
        fast = DiceStream(SERVER_SEED, "alice|bob")
        monkeypatch.setattr(domain.dice, "_sha256", hashlib.sha256)
        slow = DiceStream(SERVER_SEED, "alice|bob")
        assert [slow(n) for n in range(500)] == [fast(n) for n in range(500)]
        assert slow.digest(7, 3) == fast.digest(7, 3)

    def test_long_and_short_keys_follow_rfc_2104(self) -> None:
        """Keys of other lengths (not produced by the service) still match `hmac`."""
        for key in (b"", b"k", bytes(range(64)), bytes(range(65)), b"\xff" * 100):
            stream = DiceStream(key, "c")
            for n in range(50):
                assert stream.digest(n, 0) == hmac.digest(key, f"c:{n}:0".encode(), "sha256")
                assert stream(n) == reference_die(key, "c", n)


class TestCommitment:
    """seed_hash = sha256(server_seed) hex; seed_matches checks a revealed seed."""

    @pytest.mark.parametrize("server_seed", SEEDS, ids=[f"seed{i}" for i in range(len(SEEDS))])
    def test_seed_commitment_is_the_sha256_hex(self, server_seed: bytes) -> None:
        """The commitment is sha256 of the 32 seed bytes, lowercase hex."""
        assert SEED_BYTES == 32 == len(server_seed)
        assert seed_commitment(server_seed) == hashlib.sha256(server_seed).hexdigest()

    def test_seed_matches_only_the_committed_seed(self) -> None:
        """The revealed hex seed matches its own commitment and no other."""
        commitment = hashlib.sha256(SERVER_SEED).hexdigest()
        assert seed_matches(SERVER_SEED.hex(), commitment)
        assert not seed_matches(bytes(32).hex(), commitment)
        assert not seed_matches(SERVER_SEED.hex()[:-2], commitment)

    @pytest.mark.parametrize("bad", ["xyz", "0", "not hex at all", "\u00e9\u00e9"])
    def test_seed_matches_refuses_non_hex(self, bad: str) -> None:
        """A reveal that is not hex never matches (and never raises)."""
        assert not seed_matches(bad, hashlib.sha256(SERVER_SEED).hexdigest())


class TestClientSeeds:
    """Client seeds: at most 64 printable ASCII characters, joined with '|'."""

    @pytest.mark.parametrize(
        "seed", ["", "a", " ", "~", "x" * 64, "".join(map(chr, range(32, 96)))]
    )
    def test_up_to_64_printable_ascii_characters_are_accepted(self, seed: str) -> None:
        """Empty up to 64 characters, space to tilde, are valid."""
        assert CLIENT_SEED_MAX == 64
        assert check_client_seed(seed) == seed

    def test_every_printable_ascii_character_is_accepted(self) -> None:
        """All 95 printable ASCII characters (in two seeds of at most 64)."""
        printable = "".join(map(chr, range(32, 127)))
        assert (
            join_client_seeds([printable[:64], printable[64:]])
            == printable[:64] + "|" + printable[64:]
        )

    @pytest.mark.parametrize("seed", ["x" * 65, "\t", "a\nb", "\x7f", "\x00", "é", "日本"])
    def test_longer_or_non_printable_seeds_are_rejected(self, seed: str) -> None:
        """More than 64 characters, control characters or non-ASCII raise ClientSeedError."""
        with pytest.raises(ClientSeedError):
            check_client_seed(seed)
        with pytest.raises(ClientSeedError):
            join_client_seeds(["ok", seed])

    @pytest.mark.parametrize(
        ("seeds", "joined"),
        [
            (["a", "b"], "a|b"),
            (["", ""], "|"),
            (["x", "", "z"], "x||z"),
            (["1", "2", "3", "4"], "1|2|3|4"),
        ],
    )
    def test_seeds_are_joined_in_seat_order_with_a_bar(self, seeds: list[str], joined: str) -> None:
        """client_seed = the seats' seeds in seat order joined by '|'."""
        assert join_client_seeds(seeds) == joined
        assert join_client_seeds(tuple(seeds)) == joined
