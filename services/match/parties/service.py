"""Parties (tables, docs/design.md#the-match-service): their commands through `domain.party`'s
decider, the start of a match (the party's `MatchOpened`, the seed and the match's first events in
one transaction) and the lobby's read model (`parties`, one row per party)."""

from __future__ import annotations

import secrets
import uuid
from typing import Any, NamedTuple

import msgspec
import sqlalchemy as sa
import structlog
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from domain import party as pd
from domain.chain import GENESIS
from domain.commands import CreateMatch, Rejection, StartMatch
from domain.decider import MatchState, decide, fold
from domain.dice import seed_commitment
from domain.errors import AppError, NotFound, rejection_error
from domain.events import CpuLevel, Event, MatchTable
from domain.pool import POOL_TURN_LIMIT, PoolKind, PoolPlayer, TableFormed
from domain.rules import parse_ruleset
from domain.streams import match_stream, party_stream
from services.match.guests import Player
from services.match.idempotency import command_id as command_id_of
from services.match.idempotency import done_meanwhile, fingerprint, metadata, same_request
from services.match.ids import check_id
from services.match.parties.views import party_view
from services.match.play.deadlines import Deadlines
from services.match.play.reads import MatchReads
from services.shared import match_rows
from services.shared.eventstore import AppendResult, ConcurrencyError, EventStore, SideWrite
from services.shared.match_rows import MatchRow

__all__ = ["Opened", "PartyCommands", "SeatedTable"]

_log = structlog.get_logger(__name__)

# A party command that lost the append race is decided again on the new state (each
# round someone wins, so this bounds the retries of N concurrent commands by N).
_PARTY_ATTEMPTS = 8

# The lobby's row of a party, a side write of each append to the party's stream: it goes
# in only with the events. Taken first, before the events go in (`SideWrite.lock`): in
# one order for every writer of a party, two of them wait for each other and the later
# one loses the append race cleanly instead of deadlocking.
_LISTING = """
    INSERT INTO parties (party_id, status, settings, updated_at)
    SELECT %(pl_party)s, %(pl_status)s, CAST(%(pl_settings)s AS jsonb), now() FROM appended
    ON CONFLICT (party_id) DO UPDATE
        SET status = EXCLUDED.status, settings = EXCLUDED.settings, updated_at = now()
    RETURNING 1
"""
_LOCK_PARTY = "SELECT 1 FROM parties WHERE party_id = %(pl_party)s FOR UPDATE"


def _party_field(field: str | None) -> str | None:
    """A party rejection's field as the API spells it: the domain's `ruleset` arrives in
    the request body as `rules`."""
    if field is not None and (field == "ruleset" or field.startswith("ruleset.")):
        return "rules" + field.removeprefix("ruleset")
    return field


class _MatchStart(NamedTuple):
    """The match a party opens, before it is stored: the party's `MatchOpened`, the
    match's secret seed, and its first events and the state after them."""

    opened: pd.MatchOpened
    server_seed: bytes
    state: MatchState
    events: list[Event]


class SeatedTable(NamedTuple):
    """A table seated by pairing (`open_seated`): who sits (in seat order), the party's
    settings (`ruleset`: `{"preset", ...}`, None: the site's rules) and the arena, if any."""

    party_id: str
    match_id: str
    players: tuple[PoolPlayer, ...]
    seats: int
    turn_limit: int
    ranked: bool
    ruleset: dict[str, Any] | None = None
    cpus: int = 0
    cpu_level: CpuLevel | None = None
    arena_id: str | None = None


class Opened(NamedTuple):
    """A party and its match opened in a caller's transaction (`open_formed`): the two
    appends (to notify after the commit) and what to remember once committed."""

    results: tuple[AppendResult, AppendResult]
    match: _MatchStart
    row: MatchRow


class PartyCommands:
    def __init__(
        self, engine: AsyncEngine, store: EventStore, reads: MatchReads, deadlines: Deadlines
    ) -> None:
        self.engine = engine
        self.store = store
        self.reads = reads
        self.deadlines = deadlines

    async def load(self, party_id: str) -> pd.PartyState:
        state, _head = await self._read(check_id(party_id, "party"))
        if state.status == "new":
            raise NotFound("no such party")
        return state

    async def _read(self, party_id: str) -> tuple[pd.PartyState, bytes]:
        """The party's fold and the hash of its last event (the chain's genesis when it
        has none), the head its next append chains to."""
        stored = await self.store.read_stream(party_stream(party_id))
        state = pd.fold([pd.decode_party_event(e.data) for e in stored])
        return state, stored[-1].hash if stored else GENESIS

    async def list_open(self, limit: int = 100) -> list[dict[str, Any]]:
        async with self.engine.connect() as conn:
            rows = await conn.execute(
                sa.text(
                    "SELECT settings FROM parties WHERE status = 'open' "
                    "ORDER BY updated_at DESC LIMIT :limit"
                ),
                {"limit": limit},
            )
            return [dict(r.settings) for r in rows]

    async def create(
        self,
        player: Player,
        *,
        seats: int,
        rules: dict[str, Any] | None,
        turn_limit: int | None,
        ranked: bool,
        client_seed: str,
        key: str | None,
        cpu_speed: pd.CpuSpeed = "normal",
    ) -> tuple[str, pd.PartyState]:
        """Open a table with `player` as host in seat 0."""
        command_id = command_id_of(player, key)
        if command_id is not None:
            # The party id derives from the command id, so a retry finds the first party.
            party_id = str(uuid.uuid5(uuid.NAMESPACE_URL, f"ludo-party:{command_id}"))
        else:
            party_id = str(uuid.uuid4())
        structlog.contextvars.bind_contextvars(party_id=party_id)
        command = pd.CreateParty(
            host_id=player.id,
            host_name=player.name,
            seats=seats,
            ruleset=rules,
            turn_limit=turn_limit,
            ranked=ranked,
            client_seed=client_seed,
            cpu_speed=cpu_speed,
        )
        state = await self.command(party_id, command, player, key, new=True)
        return party_id, state

    async def command(
        self,
        party_id: str,
        command: pd.PartyCommand,
        player: Player,
        key: str | None,
        *,
        new: bool = False,
    ) -> pd.PartyState:
        """Decide and append one party command (everything but start and rematch).

        A party command names what it wants (this seat, these settings), not the version
        it saw, so losing the append race to another command is no reason to refuse it:
        it is decided again on the new state (which may now refuse it, e.g. the seat was
        taken), up to `_PARTY_ATTEMPTS` times. Two hosts' clicks a few milliseconds apart
        on two instances would otherwise get 409 for a command nothing contradicts."""
        party_id = check_id(party_id, "party")
        stream = party_stream(party_id)
        command_id = command_id_of(player, key)
        request = fingerprint(command)
        for attempt in range(_PARTY_ATTEMPTS):
            state, head = await self._read(party_id)
            try:
                return await self._append(
                    party_id, stream, state, head, command, player, command_id, request, new
                )
            except (AppError, ConcurrencyError) as error:
                # An identical request may have committed before this one was decided on
                # the state it had already changed: answer with its outcome.
                if await done_meanwhile(self.store, command_id, stream, request) is not None:
                    return await self.load(party_id)
                if not isinstance(error, ConcurrencyError) or attempt + 1 == _PARTY_ATTEMPTS:
                    raise
        raise AssertionError("unreachable")  # the last attempt returned or raised

    async def _append(
        self,
        party_id: str,
        stream: str,
        state: pd.PartyState,
        head: bytes,
        command: pd.PartyCommand,
        player: Player,
        command_id: str | None,
        request: str,
        new: bool,
    ) -> pd.PartyState:
        if state.status == "new" and not new:
            raise NotFound("no such party")
        decided = pd.decide(command, state)
        if isinstance(decided, pd.PartyRejection):
            raise rejection_error(decided.code, decided.reason, _party_field(decided.field))
        # On its own (no transaction of ours): through the group commit when it is on.
        result = await self._append_events(
            party_id, stream, state, head, decided, player, command_id, request
        )
        if result.duplicate:  # the same key appended before: its first outcome
            same_request(result, request)
            return await self.load(party_id)
        _log.info("party_command", party_id=party_id, events=[type(e).__name__ for e in decided])
        return state

    async def start(
        self, party_id: str, player: Player, key: str | None, *, rematch: bool
    ) -> tuple[pd.PartyState, str]:
        """Start (host) or rematch: MatchOpened, the seed, MatchCreated + MatchStarted, in
        ONE transaction. Returns the party and the new match id."""
        party_id = check_id(party_id, "party")
        stream = party_stream(party_id)
        command_id = command_id_of(player, key)
        request = "rematch" if rematch else "start"
        try:
            return await self._start(party_id, stream, player, command_id, rematch)
        except (AppError, ConcurrencyError):
            # The same request with the same key may have started it before.
            done = await done_meanwhile(self.store, command_id, stream, request)
            if done is None:
                raise
            return await self._started(party_id, done)

    async def _started(self, party_id: str, done: AppendResult) -> tuple[pd.PartyState, str]:
        """The party and the match id a start or rematch that already appended opened."""
        opened = pd.decode_party_event(done.events[0].data)
        assert isinstance(opened, pd.MatchOpened)
        return await self.load(party_id), opened.match_id

    async def _start(
        self, party_id: str, stream: str, player: Player, command_id: str | None, rematch: bool
    ) -> tuple[pd.PartyState, str]:
        state, head = await self._read(party_id)
        if state.status == "new":
            raise NotFound("no such party")
        match_id = str(uuid.uuid4())
        command: pd.PartyCommand
        if rematch:
            finished = False
            if state.match_id is not None:
                current = await self.reads.state(state.match_id)
                finished = current.status == "finished"
            command = pd.Rematch(player_id=player.id, match_id=match_id, current_finished=finished)
        else:
            command = pd.StartParty(player_id=player.id, match_id=match_id)
        decided = pd.decide(command, state)
        if isinstance(decided, pd.PartyRejection):
            raise rejection_error(decided.code, decided.reason, _party_field(decided.field))
        opened = decided[0]
        assert isinstance(opened, pd.MatchOpened)

        request = "rematch" if rematch else "start"
        async with self.engine.connect() as conn:
            async with conn.begin():
                # The match's seats before the party's fold moves on (`_append_events`).
                match = self._match_start(party_id, state, opened)
                party_result = await self._append_events(
                    party_id, stream, state, head, decided, player, command_id, request, conn
                )
                if party_result.duplicate:  # the same key started it before
                    same_request(party_result, request)
                    return await self._started(party_id, party_result)
                match_result, row = await self._open_match(conn, match, player.id)
            await self.store.notify(party_result, conn)
            await self.store.notify(match_result, conn)
        self._committed(match, row)
        return state, match_id

    async def open_formed(
        self, conn: AsyncConnection, table: TableFormed, kind: PoolKind
    ) -> Opened:
        """The party a pool's `TableFormed` opens, started, in the caller's transaction
        (the one appending the `TableFormed`): the site's rules, the pools' turn limit,
        CPUs of the table's level in the empty seats (`open_seated`)."""
        return await self.open_seated(
            conn,
            SeatedTable(
                party_id=table.party_id,
                match_id=table.match_id,
                players=table.players,
                seats=kind.seats,
                turn_limit=POOL_TURN_LIMIT,
                ranked=kind.ranked,
                cpus=table.cpus,
                cpu_level=table.cpu_level,
            ),
            actor="pool",
        )

    async def open_seated(self, conn: AsyncConnection, table: SeatedTable, actor: str) -> Opened:
        """The party of a table seated by pairing (a pool's or an arena's), started, in the
        caller's transaction (the one appending the pairing's event, so that the table and
        its party and match exist together or not at all): the first player hosts seat 0,
        the others sit in the order given, CPUs take the rest. Decided through the party's
        own decider, as if they had clicked: a paired table is an ordinary party. Call
        `committed` after the commit."""
        host, *guests = table.players
        commands: list[pd.PartyCommand] = [
            pd.CreateParty(
                host_id=host.player_id,
                host_name=host.name,
                seats=table.seats,
                ruleset=table.ruleset,
                turn_limit=table.turn_limit,
                ranked=table.ranked,
                client_seed=host.client_seed,
                arena_id=table.arena_id,
            ),
            *(
                pd.JoinParty(player_id=p.player_id, name=p.name, client_seed=p.client_seed)
                for p in guests
            ),
            *(
                pd.AddCpu(player_id=host.player_id, level=table.cpu_level or "normal")
                for _ in range(table.cpus)
            ),
        ]
        state = pd.PartyState()
        events: list[pd.PartyEvent] = []
        for command in commands:
            decided = pd.decide(command, state)
            if isinstance(decided, pd.PartyRejection):  # pragma: no cover - pool-checked
                raise rejection_error(decided.code, decided.reason, _party_field(decided.field))
            pd.fold(decided, state)
            events.extend(decided)
        start = pd.decide(pd.StartParty(player_id=host.player_id, match_id=table.match_id), state)
        if isinstance(start, pd.PartyRejection):  # pragma: no cover - every seat is filled
            raise rejection_error(start.code, start.reason)
        opened = start[0]
        assert isinstance(opened, pd.MatchOpened)
        match = self._match_start(table.party_id, state, opened)
        pd.fold(start, state)
        party_result = await self.store.append(
            party_stream(table.party_id),
            0,
            [*events, *start],
            metadata={"actor": actor},
            prev_hash=GENESIS,
            side=[self._listing(table.party_id, state)],
            conn=conn,
        )
        match_result, row = await self._open_match(conn, match, actor)
        return Opened((party_result, match_result), match, row)

    def committed(self, opened: Opened) -> None:
        """After the commit of `open_formed`'s transaction."""
        self._committed(opened.match, opened.row)

    def _match_start(
        self, party_id: str, state: pd.PartyState, opened: pd.MatchOpened
    ) -> _MatchStart:
        """The match a party opens: a fresh seed and its first events (created, started,
        the table's settings pinned in MatchCreated as the party's MatchOpened has them)."""
        server_seed = secrets.token_bytes(32)
        match_state = MatchState()
        match_events: list[Event] = []
        for match_command in (
            CreateMatch(
                ruleset=parse_ruleset(state.ruleset),
                seats=pd.seat_specs(state),
                seed_hash=seed_commitment(server_seed),
                first_seat=opened.first_seat,
                table=MatchTable(
                    party_id=party_id,
                    turn_limit=opened.turn_limit,
                    ranked=opened.ranked,
                    cpu_speed=opened.cpu_speed,
                ),
            ),
            StartMatch(client_seeds=tuple(s.client_seed for s in state.seats if s is not None)),
        ):
            events = decide(match_command, match_state)
            if isinstance(events, Rejection):  # pragma: no cover - the party validated it all
                raise rejection_error(events.code, events.reason)
            fold(events, match_state)
            match_events.extend(events)
        return _MatchStart(opened, server_seed, match_state, match_events)

    async def _open_match(
        self, conn: AsyncConnection, match: _MatchStart, actor: str
    ) -> tuple[AppendResult, MatchRow]:
        """The match's row, seed and first events, in the caller's transaction."""
        mstream = match_stream(match.opened.match_id)
        structlog.contextvars.bind_contextvars(match_id=match.opened.match_id)
        # The row copies the settings MatchCreated pins: the queries' index of them.
        table = match.state.table
        assert table is not None  # `_match_start` pinned it
        row = MatchRow(table.party_id, table.turn_limit, table.ranked, table.cpu_speed)
        await match_rows.insert_match(conn, mstream, match.server_seed, row)
        result = await self.store.append(
            mstream,
            0,
            match.events,
            metadata={"actor": actor},
            prev_hash=GENESIS,
            side=[self.deadlines.side_write(mstream, match.state, row)],
            conn=conn,
        )
        return result, row

    def _committed(self, match: _MatchStart, row: MatchRow) -> None:
        """Committed: remember what never changes (the seed stays in this process only)."""
        self.reads.started(match_stream(match.opened.match_id), match.server_seed, row)
        _log.info("match_started", first_seat=match.opened.first_seat, game=match.opened.game)

    async def _append_events(
        self,
        party_id: str,
        stream: str,
        state: pd.PartyState,
        head: bytes,
        decided: list[pd.PartyEvent],
        player: Player,
        command_id: str | None,
        request: str,
        conn: AsyncConnection | None = None,
    ) -> AppendResult:
        """Fold `decided` into `state` (the caller's own: a lost race reads it again) and
        append them as ONE statement, as a match command's: on the head they were decided
        on, with the party's lobby row (`_listing`) as its side write."""
        version = state.version
        pd.fold(decided, state)
        side = [self._listing(party_id, state)]
        speed_of = None
        changed = any(isinstance(e, pd.SettingsChanged) for e in decided)
        if changed and state.status == "playing" and state.match_id is not None:
            # The CPUs' speed of the match in play follows the table's at once.
            speed_of = match_stream(state.match_id)
            side.append(match_rows.cpu_speed_write(speed_of, state.cpu_speed))
        result = await self.store.append(
            stream,
            version,
            decided,
            command_id=command_id,
            metadata=metadata(player.id, command_id, request),
            prev_hash=head,
            side=side,
            conn=conn,
        )
        if speed_of is not None:
            self.reads.forget_row(speed_of)
        return result

    @staticmethod
    def _listing(party_id: str, state: pd.PartyState) -> SideWrite:
        """The lobby's row of the party at `state`, a side write of the append that
        reaches it."""
        params = {
            "pl_party": party_id,
            "pl_status": state.status,
            "pl_settings": msgspec.json.encode(party_view(party_id, state)).decode(),
        }
        return SideWrite(_LISTING, params, _LOCK_PARTY)
