"""The event-store contract: what any event store of this project must do.

`EventStoreContract` is abstract (its name does not start with `Test`, so pytest does not
collect it); a concrete test class inherits it and provides the `store` fixture, the way
the `eventsourcing` library tests each of its recorders against one shared suite: the
PostgreSQL store (test_postgres_store.py) and the in-memory one (test_memory_store.py).
Only the `EventLog` protocol is used here, so the one append path is covered with and
without the head's hash; what is specific to PostgreSQL (side writes, the caller's
transaction, triggers, roles, transaction ids) is tested next to its concrete class.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from typing import Any

import msgspec
import pytest

from domain import events as ev
from domain.chain import GENESIS, event_hash
from domain.events import DieRolled, MatchFinished, PieceMoved, TurnEnded, encode_event
from services.shared.eventstore import (
    START,
    ConcurrencyError,
    Cursor,
    EventData,
    EventLog,
    IdempotencyKeyReused,
    Notification,
    Page,
    StoredEvent,
    event_ids_for,
)
from tests.waiting import wait_until


def new_stream() -> str:
    return f"match-{uuid.uuid4().hex[:12]}"


def turn(seat: int, n: int, value: int = 3) -> list[ev.Event]:
    """A small command outcome: a roll, a move and the end of the turn."""
    return [
        DieRolled(seat=seat, n=n, value=value),
        PieceMoved(seat=seat, piece=0, frm=4, to=4 + value, die=value),
        TurnEnded(seat=seat, next_seat=(seat + 1) % 4),
    ]


async def read_everything(
    store: EventLog,
    limit: int = 1000,
    *,
    after: Cursor = START,
    until: int = 0,
    timeout: float = 10.0,
) -> list[StoredEvent]:
    """Page through `read_all` from `after` until it returns nothing and at least `until`
    events were read (transaction ids are cluster-wide: a write transaction open elsewhere
    on the server may hold new events back for a moment)."""
    out: list[StoredEvent] = []
    cursor = after

    async def caught_up() -> bool:
        nonlocal cursor
        while batch := await store.read_all(cursor, limit):
            out.extend(batch)
            cursor = batch[-1].cursor
        return len(out) >= until

    await wait_until(caught_up, timeout, what=f"{until} events read", pause=0.01)
    return out


async def page_until(
    store: EventLog,
    after: Cursor,
    reached: Callable[[Page], bool],
    *,
    timeout: float = 10.0,
    **options: Any,
) -> Page:
    """`read_page(after, **options)` until `reached(page)` holds (as `read_everything`:
    a transaction open elsewhere on the server may hold new events back for a moment)."""

    async def reached_page() -> Page | None:
        read = await store.read_page(after, **options)
        return read if reached(read) else None

    return await wait_until(reached_page, timeout, what="the page asked for", pause=0.01)


class EventStoreContract:
    """Append, read, concurrency, idempotency, hash chain, global order and hints."""

    @pytest.fixture
    def store(self) -> EventLog:
        raise NotImplementedError("a concrete test class provides the store")

    # ------------------------------------------------------------------ append / read

    async def test_append_then_read_stream(self, store: EventLog) -> None:
        """Appended events come back in version order with their exact bytes and metadata."""
        sid = new_stream()
        events = turn(0, 0)
        result = await store.append(
            sid, 0, events, metadata={"actor": "p1", "correlation_id": "c-1"}
        )
        assert (result.first_version, result.last_version, result.duplicate) == (0, 2, False)
        assert result.next_version == 3
        stored = await store.read_stream(sid)
        assert stored == list(result.events)
        assert [e.version for e in stored] == [0, 1, 2]
        assert [e.event for e in stored] == events
        assert [e.data for e in stored] == [encode_event(e) for e in events]
        assert [e.type for e in stored] == ["DieRolled", "PieceMoved", "TurnEnded"]
        assert {e.schema_version for e in stored} == {1}
        assert all(e.metadata == {"actor": "p1", "correlation_id": "c-1"} for e in stored)
        assert len({e.event_id for e in stored}) == 3
        assert all(e.recorded_at is not None for e in stored)

    async def test_the_metadata_comes_back_as_stored(self, store: EventLog) -> None:
        """An append's result carries its metadata as a read gives it back (JSON types:
        a tuple becomes a list), with the command id."""
        sid = new_stream()
        meta = {"actor": "p1", "path": ("a", 1), "n": 2.5}
        result = await store.append(sid, 0, turn(0, 0), metadata=meta, command_id=f"{sid}:m")
        expected = {"actor": "p1", "path": ["a", 1], "n": 2.5, "command_id": f"{sid}:m"}
        assert [e.metadata for e in result.events] == [expected] * 3
        assert [e.metadata for e in await store.read_stream(sid)] == [expected] * 3

    async def test_append_continues_at_expected_version(self, store: EventLog) -> None:
        """A second append at the stream's length gets the next versions."""
        sid = new_stream()
        await store.append(sid, 0, turn(0, 0))
        result = await store.append(sid, 3, turn(1, 1))
        assert (result.first_version, result.last_version) == (3, 5)
        assert [e.version for e in await store.read_stream(sid)] == list(range(6))
        assert await store.stream_version(sid) == 6

    async def test_unknown_stream_is_empty(self, store: EventLog) -> None:
        """A stream nobody appended to reads as empty, at version 0."""
        sid = new_stream()
        assert await store.read_stream(sid) == []
        assert await store.stream_version(sid) == 0

    async def test_stream_versions_of_many_streams_at_once(self, store: EventLog) -> None:
        """`stream_versions` gives each asked stream's length (0 for an unknown one), as
        `stream_version` would one by one."""
        long, short, unknown = new_stream(), new_stream(), new_stream()
        await store.append(long, 0, turn(0, 0))
        await store.append(long, 3, turn(1, 1))
        await store.append(short, 0, turn(0, 0))
        assert await store.stream_versions([long, short, unknown]) == {
            long: 6,
            short: 3,
            unknown: 0,
        }
        assert await store.stream_versions([]) == {}

    async def test_read_stream_from_version(self, store: EventLog) -> None:
        """read_stream starts at `from_version` and honours `limit`."""
        sid = new_stream()
        await store.append(sid, 0, turn(0, 0) + turn(1, 1))
        assert [e.version for e in await store.read_stream(sid, 4)] == [4, 5]
        assert [e.version for e in await store.read_stream(sid, 1, limit=2)] == [1, 2]

    async def test_exact_bytes_are_kept(self, store: EventLog) -> None:
        """Stored data comes back byte for byte: key order, spacing and UTF-8 untouched."""
        sid = new_stream()
        raw = b'{"type":"Note",  "z":1,"a":"\xc3\xa9\xe2\x9c\x9a \\u0000","z2":[ ]}'
        await store.append(sid, 0, [EventData("Note", 3, raw)])
        (stored,) = await store.read_stream(sid)
        assert stored.data == raw
        assert (stored.type, stored.schema_version) == ("Note", 3)

    async def test_bad_arguments_are_rejected(self, store: EventLog) -> None:
        """Empty appends, negative versions and empty ids raise ValueError."""
        with pytest.raises(ValueError):
            await store.append(new_stream(), 0, [])
        with pytest.raises(ValueError):
            await store.append(new_stream(), -1, turn(0, 0))
        with pytest.raises(ValueError):
            await store.append("", 0, turn(0, 0))
        with pytest.raises(ValueError):
            await store.append(new_stream(), 0, turn(0, 0), command_id="")

    async def test_upcast_on_read(self, store: EventLog, monkeypatch: Any) -> None:
        """`.event` upcasts a row stored at an older schema version; the row is unchanged."""
        sid = new_stream()
        await store.append(sid, 0, [MatchFinished(placements=(1, 2))])
        monkeypatch.setattr(MatchFinished, "schema_version", 2)
        monkeypatch.setitem(
            ev.UPCASTERS,
            ("MatchFinished", 1),
            lambda d: {**d, "placements": [p * 10 for p in d["placements"]]},
        )
        (stored,) = await store.read_stream(sid)
        assert stored.schema_version == 1
        assert stored.event == MatchFinished(placements=(10, 20))

    # ------------------------------------------------------------------- concurrency

    @pytest.mark.parametrize("expected", [0, 2, 4])
    async def test_wrong_expected_version_raises(self, store: EventLog, expected: int) -> None:
        """An expected version behind or ahead of the stream is a typed conflict."""
        sid = new_stream()
        await store.append(sid, 0, turn(0, 0))
        with pytest.raises(ConcurrencyError) as caught:
            await store.append(sid, expected, turn(1, 1))
        assert (caught.value.stream_id, caught.value.expected, caught.value.actual) == (
            sid,
            expected,
            3,
        )
        assert await store.stream_version(sid) == 3

    async def test_racing_writers_one_wins(self, store: EventLog) -> None:
        """Of many appends racing for the same version exactly one lands; none is lost."""
        sid = new_stream()
        await store.append(sid, 0, turn(0, 0))
        outcomes = await asyncio.gather(
            *(
                store.append(sid, 3, turn(i % 4, 1, 1 + i % 6), command_id=f"{sid}:{i}")
                for i in range(12)
            ),
            return_exceptions=True,
        )
        winners = [o for o in outcomes if not isinstance(o, BaseException)]
        losers = [o for o in outcomes if isinstance(o, BaseException)]
        assert len(winners) == 1
        assert all(isinstance(o, ConcurrencyError) and o.actual == 6 for o in losers)
        assert await store.read_stream(sid, 3) == list(winners[0].events)

    # ------------------------------------------------------------------- idempotency

    async def test_retry_returns_first_outcome(self, store: EventLog) -> None:
        """A retried command returns the stored events and appends nothing."""
        sid = new_stream()
        first = await store.append(sid, 0, turn(0, 0), command_id=f"{sid}:roll")
        before = await read_everything(store, until=3)
        # The retry may even be decided against a later state: the first outcome stands.
        again = await store.append(sid, 3, turn(2, 9, 6), command_id=f"{sid}:roll")
        assert again.duplicate and not first.duplicate
        assert again.events == first.events
        assert (again.first_version, again.last_version) == (0, 2)
        assert await read_everything(store, until=3) == before
        found = await store.find_command(f"{sid}:roll", sid)
        assert found is not None and found.events == first.events
        assert await store.find_command(f"{sid}:other", sid) is None

    async def test_event_ids_derive_from_command_id(self, store: EventLog) -> None:
        """Event ids are uuid5 of the command id and index; without one they are random."""
        sid = new_stream()
        result = await store.append(sid, 0, turn(0, 0), command_id="player-1:key-1")
        assert [e.event_id for e in result.events] == event_ids_for("player-1:key-1", 3)
        assert all(e.metadata["command_id"] == "player-1:key-1" for e in result.events)
        plain = await store.append(sid, 3, turn(1, 1))
        assert all(e.event_id.version == 4 for e in plain.events)

    async def test_concurrent_identical_retries_append_once(self, store: EventLog) -> None:
        """Identical retries racing each other store the events once and all get them."""
        sid = new_stream()
        await store.append(sid, 0, turn(0, 0))
        outcomes = await asyncio.gather(
            *(store.append(sid, 3, turn(1, 1), command_id=f"{sid}:retry") for _ in range(12))
        )
        assert sum(not o.duplicate for o in outcomes) == 1
        assert all(o.events == outcomes[0].events for o in outcomes)
        assert [e.version for e in await store.read_stream(sid)] == list(range(6))

    async def test_command_id_on_another_stream_is_refused(self, store: EventLog) -> None:
        """A command id that appended to one stream cannot append to another."""
        sid, other = new_stream(), new_stream()
        await store.append(sid, 0, turn(0, 0), command_id="dup-key")
        with pytest.raises(IdempotencyKeyReused) as caught:
            await store.append(other, 0, turn(0, 0), command_id="dup-key")
        assert caught.value.other_stream_id == sid
        assert await store.read_stream(other) == []

    # -------------------------------------------------------------------- hash chain

    async def test_hash_chain_is_continuous(self, store: EventLog) -> None:
        """Each hash is sha256(prev_hash ‖ canonical bytes); prev_hash links the stream."""
        sid = new_stream()
        for i in range(4):
            await store.append(sid, 3 * i, turn(i % 4, i))
        stored = await store.read_stream(sid)
        prev = GENESIS
        for e in stored:
            assert e.prev_hash == prev
            assert e.hash == event_hash(prev, sid, e.version, e.type, e.schema_version, e.data)
            prev = e.hash
        assert await store.verify_stream(sid) == 12

    async def test_streams_have_separate_chains(self, store: EventLog) -> None:
        """Every stream's chain starts at GENESIS; equal events hash differently per stream."""
        a, b = new_stream(), new_stream()
        ra = await store.append(a, 0, turn(0, 0))
        rb = await store.append(b, 0, turn(0, 0))
        assert ra.events[0].prev_hash == rb.events[0].prev_hash == GENESIS
        assert ra.events[0].hash != rb.events[0].hash

    # ------------------------------------------------------- append given the head's hash

    async def test_head_hash_extends_the_chain(self, store: EventLog) -> None:
        """Appends given the head's hash store what appends without it would."""
        sid = new_stream()
        first = await store.append(sid, 0, turn(0, 0), prev_hash=GENESIS)
        second = await store.append(sid, 3, turn(1, 1), prev_hash=first.events[-1].hash)
        assert (second.first_version, second.last_version) == (3, 5)
        assert await store.read_stream(sid) == [*first.events, *second.events]
        events, head = await store.read_events_and_hash(sid)
        assert events == turn(0, 0) + turn(1, 1) and head == second.events[-1].hash
        assert await store.read_events(sid, 3) == turn(1, 1)
        assert await store.read_events_and_hash(new_stream()) == ([], None)
        assert await store.verify_stream(sid) == 6

    async def test_wrong_head_hash_writes_nothing(self, store: EventLog) -> None:
        """A caller whose idea of the head's hash is wrong cannot fork the chain."""
        sid = new_stream()
        await store.append(sid, 0, turn(0, 0))
        with pytest.raises(ValueError, match="prev_hash is not the hash"):
            await store.append(sid, 3, turn(1, 1), prev_hash=bytes(32))
        with pytest.raises(ValueError, match="32 bytes"):
            await store.append(sid, 3, turn(1, 1), prev_hash=b"short")
        assert await store.stream_version(sid) == 3

    async def test_head_hash_of_a_taken_version_is_a_conflict(self, store: EventLog) -> None:
        """A head hash that was right before another writer appended: ConcurrencyError,
        for a new stream too."""
        sid = new_stream()
        first = await store.append(sid, 0, turn(0, 0), prev_hash=GENESIS)
        await store.append(sid, 3, turn(1, 1))
        with pytest.raises(ConcurrencyError) as caught:
            await store.append(sid, 3, turn(2, 2), prev_hash=first.events[-1].hash)
        assert (caught.value.expected, caught.value.actual) == (3, 6)
        with pytest.raises(ConcurrencyError):
            await store.append(sid, 0, turn(2, 2), prev_hash=GENESIS)

    async def test_head_hash_retry_returns_first_outcome(self, store: EventLog) -> None:
        """A retried command given the head's hash returns its first outcome."""
        sid = new_stream()
        first = await store.append(sid, 0, turn(0, 0), prev_hash=GENESIS, command_id=f"{sid}:c")
        again = await store.append(sid, 0, turn(0, 0), prev_hash=GENESIS, command_id=f"{sid}:c")
        assert again.duplicate and again.events == first.events
        assert await store.stream_version(sid) == 3

    async def test_head_hash_racers_one_wins(self, store: EventLog) -> None:
        """Eight appends at the same version with the same head hash: exactly one lands."""
        sid = new_stream()
        head = (await store.append(sid, 0, turn(0, 0))).events[-1].hash
        results = await asyncio.gather(
            *(store.append(sid, 3, turn(1, 1), prev_hash=head) for _ in range(8)),
            return_exceptions=True,
        )
        assert sum(not isinstance(r, BaseException) for r in results) == 1
        assert all(isinstance(r, ConcurrencyError) for r in results if isinstance(r, BaseException))
        assert await store.verify_stream(sid) == 6

    # ------------------------------------------------------------------- global order

    async def test_read_all_pages_through_every_event_once(self, store: EventLog) -> None:
        """read_all pages through all streams in cursor order, each event exactly once."""
        streams = [new_stream() for _ in range(3)]
        appended: list[StoredEvent] = []
        for n in range(3):
            for s in streams:
                appended += (await store.append(s, 3 * n, turn(n, n))).events
        for limit in (1, 2, 5, 1000):
            seen = await read_everything(store, limit, until=len(appended))
            assert [e.event_id for e in seen] == [e.event_id for e in appended]
            cursors = [e.cursor for e in seen]
            assert cursors == sorted(cursors) and len(set(cursors)) == len(cursors)

    async def test_read_all_after_last_cursor_is_empty(self, store: EventLog) -> None:
        """From the last event's cursor read_all returns nothing until the next append."""
        sid = new_stream()
        first = await store.append(sid, 0, turn(0, 0))
        cursor = first.events[-1].cursor
        assert await store.read_all(cursor) == []
        second = await store.append(sid, 3, turn(1, 1))
        assert await read_everything(store, after=cursor, until=3) == list(second.events)
        assert isinstance(cursor, Cursor) and cursor > START

    async def test_a_page_of_some_types_moves_past_the_others(self, store: EventLog) -> None:
        """`read_page` of some types gives only those, in global order, each once, a page
        at a time; where it continues (`last`) is past the other types' events too."""
        streams = [new_stream() for _ in range(3)]
        finished: list[StoredEvent] = []
        for n, sid in enumerate(streams):
            await store.append(sid, 0, turn(n, n))
            finished += (await store.append(sid, 3, [MatchFinished(placements=(1, 2))])).events
        tail = (await store.append(streams[0], 4, turn(1, 1))).events[-1]
        kinds = ["MatchFinished"]
        first = await page_until(store, START, lambda p: p.last is not None, limit=2, types=kinds)
        assert first.events == finished[:2] and first.last == finished[1].cursor
        rest = await page_until(store, first.last, lambda p: p.last == tail.cursor, types=kinds)
        assert rest.events == finished[2:] and rest.last == tail.cursor
        assert not rest.held_back
        assert await store.read_page(tail.cursor, types=kinds) == Page([], None)
        untyped = await store.read_page(finished[0].cursor, limit=3)
        assert [e.type for e in untyped.events] == ["DieRolled", "PieceMoved", "TurnEnded"]
        assert untyped.last == untyped.events[-1].cursor
        with pytest.raises(ValueError):
            await store.read_page(START, 0)

    async def test_a_page_stops_at_until(self, store: EventLog) -> None:
        """With `until`, a page gives nothing after that cursor, and its `last` is at
        most there: a rebuild reads the log up to a head it fixed first."""
        sid = new_stream()
        one = await store.append(sid, 0, [MatchFinished(placements=(1, 2))])
        await store.append(sid, 1, [MatchFinished(placements=(2, 1))])
        until = one.events[-1].cursor
        page = await page_until(
            store, START, lambda p: p.last is not None, types=["MatchFinished"], until=until
        )
        assert page == Page(list(one.events), until)
        assert await store.read_page(until, until=until) == Page([], None)

    async def test_read_streams_of_some_types(self, store: EventLog) -> None:
        """`read_streams` gives each asked stream's events of the types asked, in version
        order; a stream without any is absent, and every type comes without `types`."""
        a, b, unknown = new_stream(), new_stream(), new_stream()
        await store.append(a, 0, turn(0, 0))
        await store.append(b, 0, turn(1, 1))
        await store.append(a, 3, turn(2, 2))
        got = await store.read_streams([a, b, unknown], types=["DieRolled", "TurnEnded"])
        assert {s: [e.event for e in got[s]] for s in got} == {
            a: [turn(0, 0)[0], turn(0, 0)[2], turn(2, 2)[0], turn(2, 2)[2]],
            b: [turn(1, 1)[0], turn(1, 1)[2]],
        }
        every = await store.read_streams([b])
        assert every == {b: [EventData.of(e) for e in turn(1, 1)]}
        assert [e.event for e in every[b]] == turn(1, 1)
        assert await store.read_streams([a], types=["SeedRevealed"]) == {}
        assert await store.read_streams([]) == {}

    async def test_streams_of_a_kind_in_the_order_begun(self, store: EventLog) -> None:
        """`streams(prefix)` lists the streams whose ids start with it, oldest first,
        each once however many events it has."""
        kind = f"kind{uuid.uuid4().hex[:8]}-"
        later, earlier = f"{kind}b", f"{kind}a"
        await store.append(later, 0, turn(0, 0))
        await store.append(new_stream(), 0, turn(0, 0))
        await store.append(earlier, 0, turn(0, 0))
        await store.append(later, 3, turn(1, 1))
        assert await store.streams(kind) == [later, earlier]
        assert await store.streams(f"{kind}none") == []

    async def test_head_and_backlog(self, store: EventLog) -> None:
        """`head` is the newest event's cursor; `backlog` counts the events after a
        cursor, gives the newest position, and none after the head; `settle` returns once
        the events up to a cursor are all readable."""
        sid = new_stream()
        first = await store.append(sid, 0, turn(0, 0))
        second = await store.append(sid, 3, turn(1, 1))
        head = await store.head()
        assert head >= second.events[-1].cursor
        await store.settle(head)
        behind = await store.backlog(first.events[-1].cursor)
        assert behind.events >= 3 and behind.seconds >= 0.0
        assert behind.head_position >= second.events[-1].global_position
        caught_up = await store.backlog(head)
        assert (caught_up.events, caught_up.seconds) == (0, 0.0)
        assert caught_up.head_position == head.position

    # ------------------------------------------------------------------------- hints

    async def test_listen_receives_a_hint_after_append(self, store: EventLog) -> None:
        """After an append, listeners get a {stream_id, version} hint; none on a retry."""
        sid = new_stream()
        async with store.listen() as listener:
            assert await listener.wait(0.05) == []
            await store.append(sid, 0, turn(0, 0), command_id=f"{sid}:a")
            notes = await listener.wait(5)
            assert [(n.stream_id, n.version) for n in notes] == [(sid, 2)]
            await store.append(sid, 0, turn(0, 0), command_id=f"{sid}:a")
            assert await listener.wait(0.2) == []

    async def test_listener_iterates_hints(self, store: EventLog) -> None:
        """`async for` over a listener yields one hint per append, in commit order, each
        naming the types of the events appended (sorted, once each)."""
        sid = new_stream()
        async with store.listen() as listener:
            for n in range(3):
                await store.append(sid, 3 * n, turn(n, n))
            got = []
            async for note in listener:
                got.append(msgspec.structs.astuple(note))
                if len(got) == 3:
                    break
        types = ("DieRolled", "PieceMoved", "TurnEnded")
        assert got == [(sid, 2, types), (sid, 5, types), (sid, 8, types)]

    async def test_a_hint_says_which_types_it_may_hold(self, store: EventLog) -> None:
        """`may_hold`: a hint of a turn holds no match end; one of a match end does; a hint
        that names no types (of another kind than an append) may hold anything."""
        sid = new_stream()
        async with store.listen() as listener:
            await store.append(sid, 0, turn(0, 0))
            await store.append(sid, 3, [MatchFinished(placements=(1, 2))])
            notes = await listener.wait(5.0)
            while len(notes) < 2:
                notes += await listener.wait(5.0)
        ends = frozenset({"MatchFinished"})
        assert [note.may_hold(ends) for note in notes] == [False, True]
        assert Notification(sid, 0).may_hold(ends)
