"""Replays against a real PostgreSQL: export, import, and the audit of stored rows, which
must find and name a row altered behind the service's back."""

from __future__ import annotations

import json
from itertools import groupby
from typing import Any

import msgspec
import pytest
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from domain.chain import GENESIS, event_hash
from domain.decider import fold
from domain.events import DieRolled, Event, encode_event
from domain.rules import parse_ruleset
from replays.format import dump_replay, load_replay, replay_from_events
from replays.verify import verify_replay
from services.match.replays.service import ImportRefused, ReplayNotFound, ReplayStore, stream_of
from services.shared.eventstore import EventStore
from tests import paths
from tests.replays.scripted import scripted_match, server_seed

pytestmark = pytest.mark.anyio

MATCH_ID = "9d3b7f61-4c2a-4e8b-a1f0-2e6c8d4b7a10"
GOLDEN_REPLAYS = paths.GOLDEN / "replays"


def a_match(name: str = "store") -> tuple[list[Event], list[str], bytes]:
    seed = server_seed(name)
    events, actors = scripted_match(
        parse_ruleset({"preset": "standard"}), 3, seed, rng_seed=2, cpu_seats=1
    )
    return events, actors, seed


async def store_match(
    store: EventStore, match_id: str, events: list[Event], actors: list[str], seed: bytes
) -> None:
    """Append a match the way the match service does: one append per command's actor run,
    and the server seed in `match_seeds`."""
    stream = stream_of(match_id)
    version = 0
    for actor, run in groupby(zip(events, actors, strict=True), key=lambda pair: pair[1]):
        batch = [event for event, _ in run]
        await store.append(stream, version, batch, metadata={"actor": actor})
        version += len(batch)
    async with store.engine.begin() as conn:
        await conn.execute(
            sa.text("INSERT INTO match_seeds (stream_id, server_seed) VALUES (:s, :seed)"),
            {"s": stream, "seed": seed},
        )


async def tamper(
    engine: AsyncEngine, stream: str, version: int, data: bytes, *, rechain: bool
) -> None:
    """Rewrite one stored event as a superuser would, with the append-only triggers off.

    `rechain`: also recompute that row's hash and every later one, as a forger who knows
    the chain would, so that only the rules (dice, legality) can still catch it.
    """
    async with engine.begin() as conn:
        await conn.execute(sa.text("ALTER TABLE events DISABLE TRIGGER USER"))
        await conn.execute(
            sa.text(
                "UPDATE events SET data = CAST(:d AS json)"
                " WHERE stream_id = :s AND stream_version = :v"
            ),
            {"d": data.decode(), "s": stream, "v": version},
        )
        if rechain:
            rows = (
                await conn.execute(
                    sa.text(
                        "SELECT stream_version, type, schema_version, data::text AS data"
                        " FROM events WHERE stream_id = :s ORDER BY stream_version"
                    ),
                    {"s": stream},
                )
            ).all()
            prev = GENESIS
            for row in rows:
                digest = event_hash(
                    prev, stream, row.stream_version, row.type, row.schema_version,
                    row.data.encode(),
                )  # fmt: skip
                await conn.execute(
                    sa.text(
                        "UPDATE events SET prev_hash = :p, hash = :h"
                        " WHERE stream_id = :s AND stream_version = :v"
                    ),
                    {"p": prev, "h": digest, "s": stream, "v": row.stream_version},
                )
                prev = digest
        await conn.execute(sa.text("ALTER TABLE events ENABLE TRIGGER USER"))


def first_roll_after(events: list[Event], index: int) -> tuple[int, DieRolled]:
    i, roll = next((i, e) for i, e in enumerate(events) if isinstance(e, DieRolled) and i > index)
    assert isinstance(roll, DieRolled)
    return i, roll


class TestExport:
    async def test_export_verifies_and_keeps_actors(self, pg_store: EventStore) -> None:
        """A stored match exports to a file that verifies offline, with who acted."""
        events, actors, seed = a_match()
        await store_match(pg_store, MATCH_ID, events, actors, seed)
        replay = load_replay(dump_replay(await ReplayStore(pg_store).export(MATCH_ID)))
        assert verify_replay(replay).ok
        assert [e.actor for e in replay.events] == actors
        assert all(e.recorded_at for e in replay.events)
        stored = await pg_store.read_stream(stream_of(MATCH_ID))
        assert [e.hash for e in replay.events] == [s.hash.hex() for s in stored]
        assert replay.server_seed == seed.hex()

    async def test_unknown_and_malformed_ids(self, pg_store: EventStore) -> None:
        """No such match, or not a match id: ReplayNotFound with a readable message."""
        with pytest.raises(ReplayNotFound, match="no match"):
            await ReplayStore(pg_store).export("00000000-0000-0000-0000-000000000000")
        with pytest.raises(ReplayNotFound, match="not a match id"):
            await ReplayStore(pg_store).export("../etc/passwd")


class TestImport:
    async def test_import_stores_the_same_bytes_and_hashes(self, pg_store: EventStore) -> None:
        """An imported replay is stored byte for byte: the exports are identical."""
        events, actors, _seed = a_match()
        replay = replay_from_events(MATCH_ID, events, actors=actors)
        assert await ReplayStore(pg_store).import_replay(replay) == len(events)
        again = await ReplayStore(pg_store).export(MATCH_ID)
        assert [(e.data, e.hash, e.actor) for e in again.events] == [
            (e.data, e.hash, e.actor) for e in replay.events
        ]
        assert (await ReplayStore(pg_store).audit(MATCH_ID)).ok

    async def test_import_twice_is_refused(self, pg_store: EventStore) -> None:
        """The second import of the same match changes nothing and says why."""
        events, actors, _seed = a_match()
        replay = replay_from_events(MATCH_ID, events, actors=actors)
        await ReplayStore(pg_store).import_replay(replay)
        with pytest.raises(ImportRefused, match="already stored"):
            await ReplayStore(pg_store).import_replay(replay)
        assert len(await pg_store.read_stream(stream_of(MATCH_ID))) == len(events)

    async def test_tampered_file_is_refused_and_nothing_stored(self, pg_store: EventStore) -> None:
        """A file that does not verify is not imported, and the refusal names the check."""
        events, actors, _seed = a_match()
        i, roll = first_roll_after(events, 50)
        events[i] = msgspec.structs.replace(roll, value=roll.value % 6 + 1)
        with pytest.raises(ImportRefused, match=f"event {i} .*dice"):
            await ReplayStore(pg_store).import_replay(
                replay_from_events(MATCH_ID, events, actors=actors)
            )
        assert await pg_store.read_stream(stream_of(MATCH_ID)) == []


@pytest.mark.parametrize(
    "stem", ["v1-three-tries-blocked-start-4p-r1", "v2-three-tries-blocked-start-4p"]
)
async def test_a_match_of_either_revision_imports_audits_and_folds_as_recorded(
    pg_store: EventStore, stem: str
) -> None:
    """Stored rows of either revision (a v1 MatchCreated among them) audit clean, fold to
    the recorded position and export again with the same header and event bytes."""
    path = GOLDEN_REPLAYS / f"{stem}.ludo-replay.json"
    replay = load_replay(path.read_bytes())
    await ReplayStore(pg_store).import_replay(replay)
    assert (await ReplayStore(pg_store).audit(replay.match_id)).ok
    state = fold(await pg_store.read_events(replay.stream_id))
    expected = json.loads((GOLDEN_REPLAYS / "expected-v2.json").read_text())[stem]
    assert (state.pieces, list(state.placements or ())) == (
        expected["pieces"],
        expected["placements"],
    )
    exported = await ReplayStore(pg_store).export(replay.match_id)
    header = msgspec.structs.replace(exported, exported_at=None, exported_by=None, events=[])
    assert dump_replay(header) == dump_replay(msgspec.structs.replace(replay, events=[]))
    assert [(e.schema_version, e.data, e.hash) for e in exported.events] == [
        (e.schema_version, e.data, e.hash) for e in replay.events
    ]


class TestAudit:
    async def test_untouched_match_passes(self, pg_store: EventStore) -> None:
        """A match stored by the normal path audits clean."""
        events, actors, seed = a_match()
        await store_match(pg_store, MATCH_ID, events, actors, seed)
        verdict = await ReplayStore(pg_store).audit(MATCH_ID)
        assert verdict.ok and verdict.finished and verdict.events == len(events)

    async def test_altered_row_is_found_and_named(self, pg_store: EventStore) -> None:
        """A row edited as superuser (triggers off) breaks the chain at that row."""
        events, actors, seed = a_match()
        await store_match(pg_store, MATCH_ID, events, actors, seed)
        i, roll = first_roll_after(events, 40)
        forged = encode_event(msgspec.structs.replace(roll, value=roll.value % 6 + 1))
        await tamper(pg_store.engine, stream_of(MATCH_ID), i, forged, rechain=False)
        verdict = await ReplayStore(pg_store).audit(MATCH_ID)
        assert verdict.failure is not None
        assert (verdict.failure.check, verdict.failure.version) == ("hash_chain", i)

    async def test_rechained_forgery_is_caught_by_the_dice(self, pg_store: EventStore) -> None:
        """Even with every later hash recomputed, a changed die fails the dice check."""
        events, actors, seed = a_match()
        await store_match(pg_store, MATCH_ID, events, actors, seed)
        i, roll = first_roll_after(events, 40)
        forged = encode_event(msgspec.structs.replace(roll, value=roll.value % 6 + 1))
        await tamper(pg_store.engine, stream_of(MATCH_ID), i, forged, rechain=True)
        verdict = await ReplayStore(pg_store).audit(MATCH_ID)
        assert verdict.failure is not None
        assert (verdict.failure.check, verdict.failure.version) == ("dice", i)

    async def test_match_in_play_is_audited_with_the_kept_seed(self, pg_store: EventStore) -> None:
        """Before the reveal, the audit checks the dice so far against the seed the
        database keeps; an in-play match that holds is ok but not finished."""
        events, actors, seed = a_match()
        cut = next(i for i, e in enumerate(events) if type(e).__name__ == "TurnEnded" and i > 60)
        await store_match(pg_store, MATCH_ID, events[: cut + 1], actors[: cut + 1], seed)
        verdict = await ReplayStore(pg_store).audit(MATCH_ID)
        assert verdict.ok and not verdict.finished
        i, roll = first_roll_after(events, 20)
        forged = encode_event(msgspec.structs.replace(roll, value=roll.value % 6 + 1))
        await tamper(pg_store.engine, stream_of(MATCH_ID), i, forged, rechain=True)
        verdict = await ReplayStore(pg_store).audit(MATCH_ID)
        assert verdict.failure is not None
        assert (verdict.failure.check, verdict.failure.version) == ("dice", i)

    async def test_audit_all_names_only_the_bad_match(self, pg_store: EventStore) -> None:
        """`audit_all` visits every match and flags exactly the altered one."""
        ids = [f"9d3b7f61-4c2a-4e8b-a1f0-2e6c8d4b7a1{n}" for n in range(3)]
        for n, match_id in enumerate(ids):
            events, actors, seed = a_match(f"m{n}")
            await store_match(pg_store, match_id, events, actors, seed)
        await tamper(
            pg_store.engine, stream_of(ids[1]), 5, b'{"type":"TurnEnded","seat":0,"next_seat":1}',
            rechain=False,
        )  # fmt: skip
        results: dict[str, Any] = {m: v async for m, v in ReplayStore(pg_store).audit_all()}
        assert set(results) == set(ids)
        assert [m for m, v in results.items() if not v.ok] == [ids[1]]
        assert results[ids[1]].failure.version == 5
