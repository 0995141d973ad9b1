"""The match service's application layer: load a stream, fold, decide, append.

`MatchService.execute` is the ONE path by which any match command is carried out, for HTTP
handlers and the deadline scheduler alike:

1. a command id (`f"{player_id}:{Idempotency-Key}"`) already used on the stream returns its
   first outcome and decides nothing;
2. the stream is read and folded; the caller's `make` turns the state into a command (this
   is where the seat is resolved from the token, or the CPU picks its move);
3. a `Roll`'s die is ALWAYS `die_for_roll(server_seed, client_seed, state.rolls_made)`,
   whatever the command carried;
4. `decide` -> a rejection raises (nothing is written) or events; a finishing command also
   gets `SeedRevealed`;
5. the append (`EventStore.append`): from an HTTP request, ONE autocommit statement that
   locks the match's deadline row (so a scheduler holding it is waited for), appends the
   events at the folded version after the hash the fold ended on, records the command id
   and sets the deadline row; then NOTIFY on
   the same connection. From the scheduler, the same append inside its transaction
   (`append(conn=…)`), committed by it.

The server seed is read from `match_seeds` only to roll and to reveal; it is never logged
and never leaves this module before `SeedRevealed`. It is kept in this process's memory
(`_seeds`, bounded) once read, like the `matches` row (`_rows`) and token -> player
(`_players`, with a TTL): all three never change once written, so caching them saves
round trips without changing any outcome.
"""

from __future__ import annotations

import contextlib
import hashlib
import secrets
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import msgspec
import sqlalchemy as sa
import structlog
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from domain import party as pd
from domain.chain import GENESIS
from domain.commands import (
    Command,
    CreateMatch,
    LeaveSeat,
    MovePiece,
    Reclaim,
    Rejection,
    RevealSeed,
    Roll,
    StandIn,
    StartMatch,
    TimeOut,
)
from domain.cpu import choose_move
from domain.decider import MatchState, apply, current_legal_moves, decide, fold, needs_die
from domain.dice import die_for_roll, seed_commitment
from domain.events import Event
from domain.rules import parse_ruleset
from services.match.views import party_view
from services.shared.errors import AppError, rejection_error
from services.shared.eventstore import (
    AppendResult,
    ConcurrencyError,
    EventStore,
    SideWrite,
    StoredEvent,
)
from services.shared.settings import Settings

__all__ = ["MatchRow", "MatchService", "Player", "cpu_controls", "match_stream", "party_stream"]

_log = structlog.get_logger(__name__)

_STATE_CACHE = 2000
_ROW_CACHE = 4000  # server seeds and `matches` rows: immutable once written
_PLAYER_CACHE = 10_000
_PLAYER_TTL = 300.0  # seconds; tokens never change, the TTL only bounds staleness
_RECLAIM_TRIES = 20
# A party command that lost the append race is decided again on the new state (each
# round someone wins, so this bounds the retries of N concurrent commands by N).
_PARTY_ATTEMPTS = 8
MakeCommand = Callable[[MatchState], Command]


class Player(msgspec.Struct, frozen=True):
    """An authenticated guest."""

    id: str
    name: str


class MatchRow(msgspec.Struct, frozen=True):
    """The match's side-table settings (`matches`)."""

    party_id: str
    turn_limit: int | None
    ranked: bool


# A match written without the service (imported, say) has no row: no timers.
_NO_ROW = MatchRow("", None, False)


def _party_field(field: str | None) -> str | None:
    """A party rejection's field as the API spells it: the domain's `ruleset` arrives in
    the request body as `rules`."""
    if field is not None and (field == "ruleset" or field.startswith("ruleset.")):
        return "rules" + field.removeprefix("ruleset")
    return field


def match_stream(match_id: str) -> str:
    return f"match-{match_id}"


def party_stream(party_id: str) -> str:
    return f"party-{party_id}"


def check_id(value: str, what: str) -> str:
    """A public id (a UUID); anything else is an unknown id (404)."""
    try:
        return str(uuid.UUID(value))
    except ValueError:
        raise AppError(404, "not_found", f"no such {what}") from None


def cpu_controls(state: MatchState, seat: int) -> bool:
    """True when a CPU acts for `seat` now: a CPU seat, a stand-in, or a timed-out turn."""
    if state.seats[seat].cpu is not None or state.stood_in[seat] is not None:
        return True
    return seat == state.turn and state.timed_out_this_turn


def token_hash(token: str) -> bytes:
    return hashlib.sha256(token.encode()).digest()


_SET_DEADLINE = sa.text(
    """
    INSERT INTO turn_deadlines (stream_id, due_at, expected_version, kind)
    VALUES (:stream_id, now() + make_interval(secs => :secs), :version, :kind)
    ON CONFLICT (stream_id) DO UPDATE
        SET due_at = EXCLUDED.due_at,
            expected_version = EXCLUDED.expected_version,
            kind = EXCLUDED.kind
    """
)
_DELETE_DEADLINE = sa.text("DELETE FROM turn_deadlines WHERE stream_id = :stream_id")
# Held while a player's leave or reclaim is decided and appended (see `act`): the
# scheduler claims this row with SKIP LOCKED, so it waits its turn instead of racing.
_HOLD_DEADLINE = sa.text("SELECT 1 FROM turn_deadlines WHERE stream_id = :stream_id FOR UPDATE")
# The same two writes as side writes of `EventStore.append` (driver-level SQL).
_SET_DEADLINE_SIDE = """
    INSERT INTO turn_deadlines (stream_id, due_at, expected_version, kind)
    SELECT %(dl_stream)s, now() + make_interval(secs => %(dl_secs)s), %(dl_version)s,
           %(dl_kind)s
      FROM appended
    ON CONFLICT (stream_id) DO UPDATE
        SET due_at = EXCLUDED.due_at,
            expected_version = EXCLUDED.expected_version,
            kind = EXCLUDED.kind
    RETURNING 1
"""
# Taken before the events go in: the scheduler holds this row while it fires a deadline
# and appends, so this statement waits for it and then loses the race cleanly (409).
_LOCK_DEADLINE = "SELECT 1 FROM turn_deadlines WHERE stream_id = %(dl_stream)s FOR UPDATE"
_DELETE_DEADLINE_SIDE = """
    DELETE FROM turn_deadlines
     WHERE stream_id = %(dl_stream)s AND EXISTS (SELECT 1 FROM appended)
    RETURNING 1
"""
_CONNECTED = sa.text(
    """
    INSERT INTO seat_presence (stream_id, seat, connections) VALUES (:stream_id, :seat, 1)
    ON CONFLICT (stream_id, seat) DO UPDATE
        SET connections = seat_presence.connections + 1,
            disconnected_at = NULL,
            grace_due = NULL
    """
)
_DISCONNECTED = sa.text(
    """
    UPDATE seat_presence
       SET connections = greatest(connections - 1, 0),
           disconnected_at = CASE WHEN connections <= 1 THEN now() END,
           grace_due = CASE WHEN connections <= 1
                            THEN now() + make_interval(secs => :grace) END
     WHERE stream_id = :stream_id AND seat = :seat
    """
)
# The append-only connection log behind the dispute report (migration 0005), written in
# the transaction of the `seat_presence` update it accompanies.
_LOG_CONNECTION = sa.text(
    "INSERT INTO seat_connections (stream_id, seat, kind) VALUES (:stream_id, :seat, :kind)"
)
_GRACE_DONE = sa.text(
    "UPDATE seat_presence SET grace_due = NULL WHERE stream_id = :stream_id AND seat = :seat"
)
_UPSERT_PARTY = sa.text(
    """
    INSERT INTO parties (party_id, status, settings, updated_at)
    VALUES (:party_id, :status, CAST(:settings AS jsonb), now())
    ON CONFLICT (party_id) DO UPDATE
        SET status = EXCLUDED.status, settings = EXCLUDED.settings, updated_at = now()
    """
)


class MatchService:
    """Players, parties and matches over the event store."""

    def __init__(self, engine: AsyncEngine, store: EventStore, settings: Settings) -> None:
        self.engine = engine
        self.store = store
        self.settings = settings
        # LRU of match folds, each with the hash of its last event (to extend the chain).
        self._states: OrderedDict[str, tuple[MatchState, bytes]] = OrderedDict()
        # Never logged, never returned: the seed leaves only through SeedRevealed.
        self._seeds: OrderedDict[str, bytes] = OrderedDict()
        self._rows: OrderedDict[str, MatchRow] = OrderedDict()
        self._players: OrderedDict[bytes, tuple[float, Player]] = OrderedDict()
        self._reader = engine.execution_options(isolation_level="AUTOCOMMIT")

    # ---------------------------------------------------------------------------- players

    async def create_player(self, name: str) -> tuple[Player, str]:
        """A new guest and its secret token (stored only as a sha256)."""
        name = name.strip()
        if not name or not name.isprintable():
            raise AppError(422, "invalid", "name must be 1-32 printable characters", "name")
        player = Player(str(uuid.uuid4()), name)
        token = secrets.token_urlsafe(32)
        async with self.engine.begin() as conn:
            await conn.execute(
                sa.text("INSERT INTO players (id, name, token_hash) VALUES (:id, :name, :h)"),
                {"id": player.id, "name": name, "h": token_hash(token)},
            )
        _log.info("player_created", player_id=player.id)
        return player, token

    async def rename_player(self, player: Player, token: str, name: str) -> Player:
        """The same guest under a new display name (seats already taken keep the name
        they were taken with: events are never rewritten). Other instances' token caches
        may show the old name for new seats until their entry expires (`_PLAYER_TTL`)."""
        name = name.strip()
        if not name or not name.isprintable():
            raise AppError(422, "invalid", "name must be 1-32 printable characters", "name")
        async with self.engine.begin() as conn:
            await conn.execute(
                sa.text("UPDATE players SET name = :name WHERE id = :id"),
                {"id": player.id, "name": name},
            )
        renamed = Player(player.id, name)
        _remember(
            self._players,
            token_hash(token),
            (time.monotonic() + _PLAYER_TTL, renamed),
            _PLAYER_CACHE,
        )
        _log.info("player_renamed", player_id=player.id)
        return renamed

    async def player_exists(self, player_id: str) -> bool:
        async with self._reader.connect() as conn:
            found = await conn.scalar(
                sa.text("SELECT 1 FROM players WHERE id = :id"), {"id": player_id}
            )
        return found is not None

    async def player_for_token(self, token: str) -> Player | None:
        digest = token_hash(token)
        cached = self._players.get(digest)
        now = time.monotonic()
        if cached is not None and cached[0] > now:
            return cached[1]
        async with self._reader.connect() as conn:
            row = (
                await conn.execute(
                    sa.text("SELECT id, name FROM players WHERE token_hash = :h"),
                    {"h": digest},
                )
            ).one_or_none()
        if row is None:  # unknown tokens are not cached (a guest may be created meanwhile)
            return None
        player = Player(row.id, row.name)
        _remember(self._players, digest, (now + _PLAYER_TTL, player), _PLAYER_CACHE)
        return player

    # ---------------------------------------------------------------------------- parties

    async def load_party(self, party_id: str) -> pd.PartyState:
        party_id = check_id(party_id, "party")
        stored = await self.store.read_stream(party_stream(party_id))
        state = pd.fold([pd.decode_party_event(e.data) for e in stored])
        if state.status == "new":
            raise AppError(404, "not_found", "no such party")
        return state

    async def list_parties(self, limit: int = 100) -> list[dict[str, Any]]:
        async with self.engine.connect() as conn:
            rows = await conn.execute(
                sa.text(
                    "SELECT settings FROM parties WHERE status = 'open' "
                    "ORDER BY updated_at DESC LIMIT :limit"
                ),
                {"limit": limit},
            )
            return [dict(r.settings) for r in rows]

    async def create_party(
        self,
        player: Player,
        *,
        seats: int,
        rules: dict[str, Any] | None,
        turn_limit: int | None,
        ranked: bool,
        client_seed: str,
        key: str | None,
    ) -> tuple[str, pd.PartyState]:
        """Open a table with `player` as host in seat 0."""
        command_id = _command_id(player, key)
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
        )
        state = await self.party_command(party_id, lambda _s: command, player, key, new=True)
        return party_id, state

    async def party_command(
        self,
        party_id: str,
        make: Callable[[pd.PartyState], pd.PartyCommand],
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
        command_id = _command_id(player, key)
        for attempt in range(_PARTY_ATTEMPTS):
            stored = await self.store.read_stream(stream)
            state = pd.fold([pd.decode_party_event(e.data) for e in stored])
            command = make(state)
            request = _fingerprint(command)
            if command_id is not None:
                done = await self.store.find_command(command_id, stream)
                if done is not None:
                    _same_request(done, request)
                    return state
            try:
                return await self._party_append(
                    party_id, stream, state, command, player, command_id, request, new
                )
            except (AppError, ConcurrencyError) as error:
                # An identical request may have committed since the look-up above, and
                # this one was decided on the state before it: answer with its outcome.
                if await self._done_meanwhile(command_id, stream, request) is not None:
                    return await self.load_party(party_id)
                if not isinstance(error, ConcurrencyError) or attempt + 1 == _PARTY_ATTEMPTS:
                    raise
        raise AssertionError("unreachable")  # the last attempt returned or raised

    async def _party_append(
        self,
        party_id: str,
        stream: str,
        state: pd.PartyState,
        command: pd.PartyCommand,
        player: Player,
        command_id: str | None,
        request: str,
        new: bool,
    ) -> pd.PartyState:
        if state.status == "new" and not new:
            raise AppError(404, "not_found", "no such party")
        decided = pd.decide(command, state)
        if isinstance(decided, pd.PartyRejection):
            raise rejection_error(decided.code, decided.reason, _party_field(decided.field))
        async with self.engine.connect() as conn:
            async with conn.begin():
                result = await self.store.append(
                    stream,
                    state.version,
                    decided,
                    command_id=command_id,
                    metadata=_metadata(player.id, command_id, request),
                    conn=conn,
                )
                if result.duplicate:  # the same key won a race meanwhile
                    _same_request(result, request)
                    return await self.load_party(party_id)
                pd.fold(decided, state)
                await self._save_party_listing(conn, party_id, state)
            await self.store.notify(result, conn)
        _log.info("party_command", party_id=party_id, events=[type(e).__name__ for e in decided])
        return state

    async def start_match(
        self, party_id: str, player: Player, key: str | None, *, rematch: bool
    ) -> tuple[pd.PartyState, str]:
        """Start (host) or rematch: MatchOpened, the seed, MatchCreated + MatchStarted, in
        ONE transaction. Returns the party and the new match id."""
        party_id = check_id(party_id, "party")
        stream = party_stream(party_id)
        command_id = _command_id(player, key)
        request = "rematch" if rematch else "start"
        if command_id is not None:
            done = await self.store.find_command(command_id, stream)
            if done is not None:
                _same_request(done, request)
                return await self._started(party_id, done)
        try:
            return await self._start_match(party_id, stream, player, command_id, rematch)
        except (AppError, ConcurrencyError):
            # The same request with the same key may have started it since the look-up.
            done = await self._done_meanwhile(command_id, stream, request)
            if done is None:
                raise
            return await self._started(party_id, done)

    async def _started(self, party_id: str, done: AppendResult) -> tuple[pd.PartyState, str]:
        """The party and the match id a start or rematch that already appended opened."""
        opened = pd.decode_party_event(done.events[0].data)
        assert isinstance(opened, pd.MatchOpened)
        return await self.load_party(party_id), opened.match_id

    async def _start_match(
        self, party_id: str, stream: str, player: Player, command_id: str | None, rematch: bool
    ) -> tuple[pd.PartyState, str]:
        state = await self.load_party(party_id)
        match_id = str(uuid.uuid4())
        command: pd.PartyCommand
        if rematch:
            finished = False
            if state.match_id is not None:
                current = await self._state(match_stream(state.match_id))
                finished = current.status == "finished"
            command = pd.Rematch(player_id=player.id, match_id=match_id, current_finished=finished)
        else:
            command = pd.StartParty(player_id=player.id, match_id=match_id)
        decided = pd.decide(command, state)
        if isinstance(decided, pd.PartyRejection):
            raise rejection_error(decided.code, decided.reason, _party_field(decided.field))
        opened = decided[0]
        assert isinstance(opened, pd.MatchOpened)

        server_seed = secrets.token_bytes(32)
        seats = pd.seat_specs(state)
        match_state = MatchState()
        match_events: list[Event] = []
        for match_command in (
            CreateMatch(
                ruleset=parse_ruleset(state.ruleset),
                seats=seats,
                seed_hash=seed_commitment(server_seed),
                first_seat=opened.first_seat,
            ),
            StartMatch(client_seeds=tuple(s.client_seed for s in state.seats if s is not None)),
        ):
            events = decide(match_command, match_state)
            if isinstance(events, Rejection):  # pragma: no cover - the party validated it all
                raise rejection_error(events.code, events.reason)
            fold(events, match_state)
            match_events.extend(events)

        mstream = match_stream(match_id)
        structlog.contextvars.bind_contextvars(match_id=match_id)
        row = MatchRow(party_id, state.turn_limit, state.ranked)
        async with self.engine.connect() as conn:
            async with conn.begin():
                party_result = await self.store.append(
                    stream,
                    state.version,
                    decided,
                    command_id=command_id,
                    metadata=_metadata(player.id, command_id, "rematch" if rematch else "start"),
                    conn=conn,
                )
                await conn.execute(
                    sa.text("INSERT INTO match_seeds (stream_id, server_seed) VALUES (:s, :seed)"),
                    {"s": mstream, "seed": server_seed},
                )
                await conn.execute(
                    sa.text(
                        "INSERT INTO matches (stream_id, party_id, turn_limit, ranked) "
                        "VALUES (:s, :p, :t, :r)"
                    ),
                    {"s": mstream, "p": party_id, "t": row.turn_limit, "r": row.ranked},
                )
                await self._set_deadline(conn, mstream, match_state, row)
                match_result = await self.store.append(
                    mstream, 0, match_events, metadata={"actor": player.id}, conn=conn
                )
                pd.fold(decided, state)
                await self._save_party_listing(conn, party_id, state)
            await self.store.notify(party_result, conn)
            await self.store.notify(match_result, conn)
        # Committed: remember what never changes (the seed stays in this process only).
        _remember(self._seeds, mstream, server_seed, _ROW_CACHE)
        _remember(self._rows, mstream, row, _ROW_CACHE)
        _log.info("match_started", first_seat=opened.first_seat, game=opened.game)
        return state, match_id

    async def _save_party_listing(
        self, conn: AsyncConnection, party_id: str, state: pd.PartyState
    ) -> None:
        view = party_view(party_id, state)
        await conn.execute(
            _UPSERT_PARTY,
            {
                "party_id": party_id,
                "status": state.status,
                "settings": msgspec.json.encode(view).decode(),
            },
        )

    # ---------------------------------------------------------------------------- matches

    async def _fold(self, stream: str) -> tuple[MatchState, list[StoredEvent]]:
        """The whole stream and its fold (for the event and fairness views)."""
        stored = await self.store.read_stream(stream)
        state = MatchState()
        for e in stored:
            apply(state, e.event)
        return state, stored

    async def _state(self, stream: str) -> MatchState:
        """The current fold of a match: a cached fold plus the events appended since.

        The cache only saves reading and folding old events again; the events after the
        cached version always come from the database, so the state is never staler than
        a fresh read, and every append still checks the version it was decided on.
        """
        return (await self._state_and_head(stream))[0]

    async def _state_and_head(self, stream: str) -> tuple[MatchState, bytes]:
        """`_state`, and the hash of the stream's last event (GENESIS: no events)."""
        cached = self._states.get(stream)
        state, head = (MatchState(), GENESIS) if cached is None else (cached[0].copy(), cached[1])
        events, last_hash = await self.store.read_events_and_hash(stream, state.version)
        for event in events:
            apply(state, event)
        if last_hash is not None:
            head = last_hash
        if state.version:
            self._states[stream] = (state.copy(), head)
            self._states.move_to_end(stream)
            while len(self._states) > _STATE_CACHE:
                self._states.popitem(last=False)
        return state, head

    async def load_match(self, match_id: str) -> tuple[MatchState, list[StoredEvent]]:
        """The folded state and stored events of a match (404 if unknown)."""
        match_id = check_id(match_id, "match")
        state, stored = await self._fold(match_stream(match_id))
        if state.status == "new":
            raise AppError(404, "not_found", "no such match")
        return state, stored

    async def match_state(self, match_id: str) -> MatchState:
        """The current state of a match (404 if unknown), without its events."""
        match_id = check_id(match_id, "match")
        state = await self._state(match_stream(match_id))
        if state.status == "new":
            raise AppError(404, "not_found", "no such match")
        return state

    async def match_row(self, match_id: str) -> MatchRow | None:
        stream = match_stream(match_id)
        if (cached := self._rows.get(stream)) is not None:
            return cached
        async with self._reader.connect() as conn:
            return await self._load_row(conn, stream)

    async def _load_row(self, conn: AsyncConnection, stream: str) -> MatchRow | None:
        row = (
            await conn.execute(
                sa.text("SELECT party_id, turn_limit, ranked FROM matches WHERE stream_id = :s"),
                {"s": stream},
            )
        ).one_or_none()
        if row is None:
            return None
        found = MatchRow(row.party_id, row.turn_limit, row.ranked)
        _remember(self._rows, stream, found, _ROW_CACHE)
        return found

    async def deadline(self, match_id: str) -> tuple[str, str] | None:
        async with self.engine.connect() as conn:
            row = (
                await conn.execute(
                    sa.text("SELECT kind, due_at FROM turn_deadlines WHERE stream_id = :s"),
                    {"s": match_stream(match_id)},
                )
            ).one_or_none()
        return None if row is None else (row.kind, row.due_at.isoformat())

    async def _seed(self, conn: AsyncConnection | None, stream: str) -> bytes:
        """The match's server seed: from this process's memory, else `match_seeds` (on
        `conn`, or on a connection of its own)."""
        if (cached := self._seeds.get(stream)) is not None:
            return cached
        query = sa.text("SELECT server_seed FROM match_seeds WHERE stream_id = :s")
        if conn is None:
            async with self._reader.connect() as own:
                seed = await own.scalar(query, {"s": stream})
        else:
            seed = await conn.scalar(query, {"s": stream})
        if seed is None:  # pragma: no cover - written with MatchCreated
            raise RuntimeError(f"no seed stored for {stream}")
        seed = bytes(seed)
        _remember(self._seeds, stream, seed, _ROW_CACHE)
        return seed

    async def execute(
        self,
        match_id: str,
        make: MakeCommand,
        *,
        actor: str,
        command_id: str | None = None,
        request: str = "",
        expected_version: int | None = None,
        conn: AsyncConnection | None = None,
    ) -> AppendResult:
        """Carry out one match command (see the module docstring). Raises `AppError` for a
        rejection and `ConcurrencyError` when another command got there first.

        `request` says what the caller asked (`"move:2"`): a `command_id` already used for
        another request is refused (422 `idempotency_key_reused`)."""
        match_id = check_id(match_id, "match")
        stream = match_stream(match_id)
        structlog.contextvars.bind_contextvars(match_id=match_id)
        if command_id is not None:
            done = await self.store.find_command(command_id, stream)
            if done is not None:
                _same_request(done, request)
                return done
        try:
            return await self._execute(
                stream, make, actor, command_id, request, expected_version, conn
            )
        except (AppError, ConcurrencyError):
            done = await self._done_meanwhile(command_id, stream, request)
            if done is None:
                raise
            return done

    async def _done_meanwhile(
        self, command_id: str | None, stream: str, request: str
    ) -> AppendResult | None:
        """After a refusal or a version conflict: the first outcome of `command_id` if an
        identical request with the same key committed since this one looked it up (it
        then decided on the state that request had already changed), else None. A key
        used for another request is still refused (`idempotency_key_reused`)."""
        if command_id is None:
            return None
        done = await self.store.find_command(command_id, stream)
        if done is not None:
            _same_request(done, request)
        return done

    async def _execute(
        self,
        stream: str,
        make: MakeCommand,
        actor: str,
        command_id: str | None,
        request: str,
        expected_version: int | None,
        conn: AsyncConnection | None,
    ) -> AppendResult:
        state, head = await self._state_and_head(stream)
        if state.status == "new":
            raise AppError(404, "not_found", "no such match")
        if expected_version is not None and state.version != expected_version:
            raise ConcurrencyError(stream, expected_version, state.version)
        command = make(state)
        if conn is not None:
            async with conn.begin_nested():
                return await self._decide_and_append(
                    conn, stream, state, command, actor, command_id, request
                )
        # No caller's transaction: the events, the command record and the deadline row
        # go in as one statement, which is atomic on its own.
        events, after, command = await self._decide(None, stream, state, command)
        if (row := self._rows.get(stream)) is None:
            async with self._reader.connect() as reader:
                row = await self._load_row(reader, stream) or _NO_ROW
        result = await self.store.append(
            stream,
            state.version,
            events,
            command_id=command_id,
            metadata=_metadata(actor, command_id, request),
            prev_hash=head,
            side=[self._deadline_write(stream, after, row)],
        )
        if result.duplicate:  # the same key won a race since `find_command`
            _same_request(result, request)
        self._log_command(result, command, actor, events)
        return result

    async def _decide(
        self, conn: AsyncConnection | None, stream: str, state: MatchState, command: Command
    ) -> tuple[list[Event], MatchState, Command]:
        """The events of `command` (with the fair die, and the seed reveal when they end
        the match), the state after them, and the command as decided."""
        if isinstance(command, Roll):
            # The die is never the caller's: it is the fair derivation of DESIGN.md §4.
            die = None
            if needs_die(state):
                seed = await self._seed(conn, stream)
                die = die_for_roll(seed, state.client_seed, state.rolls_made)
            command = Roll(seat=command.seat, die=die)
        decided = decide(command, state)
        if isinstance(decided, Rejection):
            # An illegal move is the request's `piece` at fault; other rejections are the
            # match's state (turn, phase), not a field.
            field = "piece" if decided.code == "illegal_move" else None
            raise rejection_error(decided.code, decided.reason, field)
        after = fold(decided, state.copy())
        events = list(decided)
        if after.status == "finished" and after.server_seed is None:
            seed = await self._seed(conn, stream)
            reveal = decide(RevealSeed(server_seed=seed.hex()), after)
            assert isinstance(reveal, list)
            fold(reveal, after)
            events.extend(reveal)
        return events, after, command

    def _log_command(
        self, result: AppendResult, command: Command, actor: str, events: list[Event]
    ) -> None:
        if not result.duplicate:
            _log.info(
                "match_command",
                command=type(command).__name__,
                actor=actor,
                version=result.next_version,
                events=[type(e).__name__ for e in events],
            )

    async def _decide_and_append(
        self,
        conn: AsyncConnection,
        stream: str,
        state: MatchState,
        command: Command,
        actor: str,
        command_id: str | None,
        request: str = "",
    ) -> AppendResult:
        events, after, command = await self._decide(conn, stream, state, command)
        row = await self._match_row_in(conn, stream)
        await self._set_deadline(conn, stream, after, row)
        result = await self.store.append(
            stream,
            state.version,
            events,
            command_id=command_id,
            metadata=_metadata(actor, command_id, request),
            conn=conn,
        )
        if result.duplicate:
            _same_request(result, request)
        self._log_command(result, command, actor, events)
        return result

    async def _match_row_in(self, conn: AsyncConnection, stream: str) -> MatchRow:
        row = self._rows.get(stream) or await self._load_row(conn, stream)
        return _NO_ROW if row is None else row

    def deadline_timing(self, state: MatchState, row: MatchRow) -> tuple[str, float] | None:
        """The kind and length of the match's next deadline; None: no deadline."""
        if state.status != "playing":
            return None
        if cpu_controls(state, state.turn):
            return "cpu", self.settings.cpu_delay
        if row.turn_limit:
            return "turn", float(row.turn_limit)
        return None

    def _deadline_write(self, stream: str, state: MatchState, row: MatchRow) -> SideWrite:
        """`_set_deadline` as a side write of the append."""
        timing = self.deadline_timing(state, row)
        if timing is None:
            return SideWrite(_DELETE_DEADLINE_SIDE, {"dl_stream": stream}, _LOCK_DEADLINE)
        kind, secs = timing
        return SideWrite(
            _SET_DEADLINE_SIDE,
            {"dl_stream": stream, "dl_secs": secs, "dl_version": state.version, "dl_kind": kind},
            _LOCK_DEADLINE,
        )

    async def _set_deadline(
        self, conn: AsyncConnection, stream: str, state: MatchState, row: MatchRow
    ) -> None:
        """The match's one deadline row, derived from the state after the append."""
        timing = self.deadline_timing(state, row)
        if timing is None:
            await conn.execute(_DELETE_DEADLINE, {"stream_id": stream})
            return
        kind, secs = timing
        await conn.execute(
            _SET_DEADLINE,
            {"stream_id": stream, "secs": secs, "version": state.version, "kind": kind},
        )

    async def refresh_deadline(self, conn: AsyncConnection, stream: str) -> None:
        """Recompute a match's deadline from its current state (after a stale firing)."""
        state = await self._state(stream)
        row = await self._match_row_in(conn, stream)
        await self._set_deadline(conn, stream, state, row)

    # ------------------------------------------------------------------------ player acts

    async def act(
        self,
        match_id: str,
        player: Player,
        action: str,
        *,
        piece: int | None = None,
        key: str | None = None,
    ) -> AppendResult:
        """Roll, move, leave or reclaim for the seat `player` holds."""

        def make(state: MatchState) -> Command:
            seat = _seat_of(state, player)
            if seat is None:
                raise AppError(403, "not_your_seat", "your token holds no seat in this match")
            if action == "reclaim":
                return Reclaim(seat=seat)
            if action == "leave":
                return LeaveSeat(seat=seat)
            if state.status == "playing" and state.stood_in[seat] is not None:
                raise AppError(409, "stood_in", "a CPU plays for your seat; reclaim it first")
            if state.status == "playing" and seat == state.turn and state.timed_out_this_turn:
                raise AppError(
                    409, "cpu_playing", "your turn timed out; the CPU plays the rest of it"
                )
            if action == "roll":
                return Roll(seat=seat)
            assert piece is not None
            return MovePiece(seat=seat, piece=piece)

        command_id = _command_id(player, key)
        request = action if piece is None else f"{action}:{piece}"
        if action not in ("leave", "reclaim"):
            # A roll or a move was chosen on the state the player saw: a lost race goes
            # back to them (409).
            return await self.execute(
                match_id, make, actor=player.id, command_id=command_id, request=request
            )
        # Leaving and reclaiming mean the same on any state. They are decided holding the
        # match's deadline row, as the scheduler holds it while it fires: no CPU or timer
        # appends meanwhile (a CPU standing in at full speed would otherwise win every
        # race). Another player's command can still come first: then try again.
        stream = match_stream(check_id(match_id, "match"))
        for attempt in range(_RECLAIM_TRIES):
            try:
                async with self.engine.connect() as conn:
                    async with conn.begin():
                        await conn.execute(_HOLD_DEADLINE, {"stream_id": stream})
                        result = await self.execute(
                            match_id,
                            make,
                            actor=player.id,
                            command_id=command_id,
                            request=request,
                            conn=conn,
                        )
                    await self.store.notify(result, conn)
                return result
            except ConcurrencyError:
                if attempt == _RECLAIM_TRIES - 1:
                    raise
        raise AssertionError("unreachable")  # pragma: no cover

    # --------------------------------------------------------------------------- presence

    async def connected(self, match_id: str, player: Player) -> int | None:
        """A live connection of `player` to the match opened: count it (and log it in
        `seat_connections`), cancel any grace deadline, and give the seat back if a CPU
        stands in for it (`SeatReclaimed`). Returns the player's seat (None: a spectator)."""
        state = await self.match_state(match_id)
        seat = _seat_of(state, player)
        if seat is None:
            return None
        stream = match_stream(check_id(match_id, "match"))
        async with self.engine.begin() as conn:
            await conn.execute(_CONNECTED, {"stream_id": stream, "seat": seat})
            await conn.execute(
                _LOG_CONNECTION, {"stream_id": stream, "seat": seat, "kind": "connected"}
            )
        if state.status == "playing" and state.stood_in[seat] is not None:
            # `act` retries the version race with a stand-in playing on another instance;
            # still losing after every try, or the match ended meanwhile: nothing to do.
            with contextlib.suppress(ConcurrencyError, AppError):
                await self.act(match_id, player, "reclaim")
        return seat

    async def disconnected(self, match_id: str, seat: int) -> None:
        """A live connection to `seat` closed; with none left, the grace period starts.
        Every close is logged in `seat_connections` (the dispute report reads it)."""
        stream = match_stream(check_id(match_id, "match"))
        async with self.engine.begin() as conn:
            await conn.execute(
                _DISCONNECTED,
                {"stream_id": stream, "seat": seat, "grace": self.settings.reconnect_grace},
            )
            await conn.execute(
                _LOG_CONNECTION, {"stream_id": stream, "seat": seat, "kind": "disconnected"}
            )

    async def fire_grace(
        self, conn: AsyncConnection, stream: str, seat: int
    ) -> AppendResult | None:
        """The seat's player has not come back within the grace period: a CPU stands in,
        unless the match is over or a CPU already plays for the seat."""
        state = await self._state(stream)
        result = None
        if (
            state.status == "playing"
            and state.seats[seat].cpu is None
            and state.stood_in[seat] is None
        ):
            # A ConcurrencyError leaves grace_due set, so the next poll tries again.
            result = await self.execute(
                stream.removeprefix("match-"),
                lambda _state: StandIn(seat=seat, reason="disconnected"),
                actor="scheduler:grace",
                expected_version=state.version,
                conn=conn,
            )
        await conn.execute(_GRACE_DONE, {"stream_id": stream, "seat": seat})
        return result

    # -------------------------------------------------------------------------- scheduler

    async def fire_deadline(
        self, conn: AsyncConnection, stream: str, expected_version: int, kind: str
    ) -> AppendResult:
        """Fire a claimed deadline inside the scheduler's transaction on `conn`."""
        match_id = stream.removeprefix("match-")

        def make(state: MatchState) -> Command:
            seat = state.turn
            if kind == "turn" and not cpu_controls(state, seat):
                return TimeOut(seat=seat)
            if state.phase == "roll":
                return Roll(seat=seat)
            moves = current_legal_moves(state)
            level = state.seats[seat].cpu or "normal"
            move = choose_move(level, state, moves, f"{match_id}:{seat}")
            return MovePiece(seat=seat, piece=move.piece)

        return await self.execute(
            match_id,
            make,
            actor=f"scheduler:{kind}",
            expected_version=expected_version,
            conn=conn,
        )


def _remember(cache: OrderedDict[Any, Any], key: Any, value: Any, size: int) -> None:
    """Put `key` in the LRU `cache`, dropping the oldest entries beyond `size`."""
    cache[key] = value
    cache.move_to_end(key)
    while len(cache) > size:
        cache.popitem(last=False)


def _seat_of(state: MatchState, player: Player) -> int | None:
    return next((i for i, s in enumerate(state.seats) if s.player_id == player.id), None)


def _fingerprint(command: msgspec.Struct) -> str:
    """What a party command asks, as kept beside its Idempotency-Key (see `_same_request`)."""
    return hashlib.sha256(msgspec.json.encode(command)).hexdigest()[:32]


def _metadata(actor: str, command_id: str | None, request: str) -> dict[str, str]:
    """Event metadata: the actor, and with an Idempotency-Key what the request asked."""
    if command_id is None:
        return {"actor": actor}
    return {"actor": actor, "request": request}


def _same_request(done: AppendResult, request: str) -> None:
    """A repeated Idempotency-Key must repeat its request: a key first used to move piece
    0 and now sent to move piece 1 (or to leave) is refused, not answered with the first
    outcome as if the new request had been carried out. Records from before the request
    was kept (no `request` in the metadata) are taken as the same."""
    recorded = done.events[0].metadata.get("request") if done.events else None
    if recorded is not None and recorded != request:
        raise AppError(
            422,
            "idempotency_key_reused",
            "this Idempotency-Key already named a different request; use a new key",
            "Idempotency-Key",
        )


def _command_id(player: Player, key: str | None) -> str | None:
    if key is None:
        return None
    if not 1 <= len(key) <= 100 or not all(" " < ch <= "~" for ch in key):
        raise AppError(
            422,
            "invalid",
            "Idempotency-Key must be 1-100 printable ASCII characters without spaces",
            "Idempotency-Key",
        )
    return f"{player.id}:{key}"
