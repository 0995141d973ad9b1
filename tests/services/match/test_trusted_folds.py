"""Match commands decided on a trusted cached fold, without reading the stream first
(services/match/play/reads.py): one round trip per command on the instance that keeps
the match, and a stale fold (another instance appended, its hint not heard yet) caught by
the append and decided again on a fresh read, never forking the chain.

Two `MatchParts` on one database stand for two instances. No live hub runs, so no hint
is ever heard: the worst case of a late hint."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from domain import party as pd
from domain.decider import current_legal_moves, fold
from domain.streams import match_stream
from services.match.guests import Player
from services.match.parts import MatchParts
from services.shared.eventstore import AppendResult, EventStore
from services.shared.settings import Settings

pytestmark = pytest.mark.anyio


class Counting(EventStore):
    """The real PostgreSQL store, counting the reads a command makes before deciding."""

    reads = 0

    async def read_events_and_hash(self, *args: Any, **kwargs: Any) -> Any:
        self.reads += 1
        return await super().read_events_and_hash(*args, **kwargs)


class Table:
    """Two guests at a started 2-seat match. What to play is chosen from a fresh fold read
    by a store of its own, so choosing leaves the instances' caches as they are."""

    def __init__(self, engine: AsyncEngine, match_id: str, players: list[Player]) -> None:
        self.judge = EventStore(engine)
        self.match_id, self.players = match_id, players
        self.stream = match_stream(match_id)

    async def playing(self) -> bool:
        return fold(await self.judge.read_events(self.stream)).status == "playing"

    async def act(self, service: MatchParts) -> AppendResult:
        """The seat to act plays on `service`: its first legal move, or a roll."""
        state = fold(await self.judge.read_events(self.stream))
        player = next(p for p in self.players if p.id == state.seats[state.turn].player_id)
        moves = current_legal_moves(state)
        if moves:
            return await service.commands.move(self.match_id, player, moves[0].piece, None)
        return await service.commands.roll(self.match_id, player, None)


@pytest.fixture
async def instances(engine: AsyncEngine, tmp_path: Path) -> AsyncIterator[list[MatchParts]]:
    settings = Settings(data_dir=tmp_path, cpu_delay=0, scheduler=False)
    services = [MatchParts(engine, Counting(engine), settings) for _ in range(2)]
    for service in services:
        service.matches.listening(True)  # as the live hub reports; no hint will come
    yield services


async def _table(a: MatchParts) -> Table:
    alice, _ = await a.guests.create("alice")
    bob, _ = await a.guests.create("bob")
    party_id, _ = await a.parties.create(
        alice, seats=2, rules=None, turn_limit=None, ranked=False, client_seed="a", key=None
    )
    await a.parties.command(party_id, pd.JoinParty(player_id=bob.id, name="bob"), bob, None)
    _, match_id = await a.parties.start(party_id, alice, None, rematch=False)
    return Table(a.engine, match_id, [alice, bob])


def _reads(service: MatchParts) -> int:
    store = service.store
    assert isinstance(store, Counting)
    return store.reads


async def _assert_one_chain(a: MatchParts, stream: str) -> None:
    """The stream is one hash chain over versions 0, 1, … (`ChainBroken` otherwise)."""
    stored = await a.store.read_stream(stream)
    assert [e.version for e in stored] == list(range(len(stored)))
    assert await a.store.verify_stream(stream) == len(stored)


async def test_commands_on_the_keeping_instance_read_nothing_first(
    instances: list[MatchParts],
) -> None:
    """After its first command, the instance that appended the match's last event decides
    the next ones on its own fold: no read before deciding."""
    a, _ = instances
    table = await _table(a)
    await table.act(a)
    before, commands = _reads(a), 0
    while commands < 30 and await table.playing():
        await table.act(a)
        commands += 1
    assert commands > 0 and _reads(a) == before
    await _assert_one_chain(a, table.stream)


async def test_without_the_listener_every_command_reads(instances: list[MatchParts]) -> None:
    """With no listener up (hints could be missed), a command always reads the stream."""
    a, _ = instances
    a.matches.listening(False)
    table = await _table(a)
    for _ in range(5):
        before = _reads(a)
        await table.act(a)
        assert _reads(a) == before + 1


async def test_a_stale_fold_is_decided_again_on_a_fresh_read(
    instances: list[MatchParts],
) -> None:
    """Another instance appends; this one's fold, still trusted, is stale. Each command
    decided on it is refused or loses at the append, is decided again on one fresh read,
    and succeeds; the stream stays one chain with every command once."""
    a, b = instances
    table = await _table(a)
    await table.act(a)
    rounds = 0
    while rounds < 30 and await table.playing():
        await table.act(b)  # a's fold is now one command behind
        if not await table.playing():
            break
        version = await a.store.stream_version(table.stream)
        before = _reads(a)
        result = await table.act(a)
        assert result.first_version == version and not result.duplicate
        assert _reads(a) == before + 1  # decided on the stale fold, then once more, fresh
        rounds += 1
    assert rounds > 0
    await _assert_one_chain(a, table.stream)
