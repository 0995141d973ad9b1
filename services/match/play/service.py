"""Match commands: load a stream, fold, decide, append.

`MatchCommands.execute` is the ONE path by which any match command is carried out, for
HTTP handlers, sockets and the deadline scheduler alike:

1. the stream is read and folded (`MatchReads.for_command`); the caller's `make` turns
   the state into a command (this is where the seat is resolved from the token, or the CPU
   picks its move);
2. a `Roll`'s die is ALWAYS `die_for_roll(server_seed, client_seed, state.rolls_made)`,
   whatever the command carried;
3. `decide` -> a rejection raises (nothing is written) or events; a finishing command also
   gets `SeedRevealed`;
4. the append (`EventStore.append`), with the fold's head hash and the deadline row as a
   side write: from a request, ONE autocommit statement that locks the match's deadline
   row (so a scheduler holding it is waited for), then NOTIFY on the same connection; from
   the scheduler (or a leave/reclaim, which hold the deadline row), the same statement
   inside the caller's transaction, committed by it;
5. a command id (`"{player_id}:{Idempotency-Key}"`) already used on the stream returns its
   first outcome and appends nothing: the append statement records the id with the events
   and finds an earlier record; a command refused or beaten in a race looks for one
   (`done_meanwhile`), since an identical request may have committed first.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import structlog
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from domain.commands import (
    Command,
    Concede,
    LeaveSeat,
    MovePiece,
    Reclaim,
    Rejection,
    RevealSeed,
    Roll,
    StandIn,
)
from domain.deadline import deadline_command
from domain.decider import MatchState, decide, fold, needs_die
from domain.dice import die_for_roll
from domain.errors import AppError, Forbidden, NotFound, rejection_error
from domain.events import Event
from domain.streams import match_id_of, match_stream
from services.match.guests import Player
from services.match.idempotency import command_id as command_id_of
from services.match.idempotency import done_meanwhile, metadata, same_request
from services.match.ids import check_id
from services.match.play.deadlines import Deadlines
from services.match.play.reads import MatchReads, settings_of
from services.shared.eventstore import AppendResult, ConcurrencyError, EventStore
from services.shared.metrics import UNCOUNTED, Counters

__all__ = ["CountedCommands", "MakeCommand", "MatchCommands", "seat_of"]

_log = structlog.get_logger(__name__)
_debug = logging.getLogger(__name__)  # its level, which structlog's lines follow

_RECLAIM_TRIES = 20
MakeCommand = Callable[[MatchState], Command]


def seat_of(state: MatchState, player: Player) -> int | None:
    for i, seat in enumerate(state.seats):
        if seat.player_id == player.id:
            return i
    return None


class MatchCommands:
    def __init__(
        self,
        engine: AsyncEngine,
        store: EventStore,
        reads: MatchReads,
        deadlines: Deadlines,
        on_appended: Callable[[AppendResult], None] | None = None,
    ) -> None:
        self.engine = engine
        self.store = store
        self.reads = reads
        self.deadlines = deadlines
        # Told of every append this instance committed on its own (the live hub offers
        # the events to the stream's sockets without reading them back).
        self.on_appended = on_appended

    # ------------------------------------------------------------------ a player's commands

    async def roll(self, match_id: str, player: Player, key: str | None) -> AppendResult:
        return await self._play(
            match_id, player, "roll", key, lambda seat: Roll(seat=seat, by="player")
        )

    async def move(
        self, match_id: str, player: Player, piece: int, key: str | None
    ) -> AppendResult:
        return await self._play(
            match_id,
            player,
            f"move:{piece}",
            key,
            lambda seat: MovePiece(seat=seat, piece=piece, by="player"),
        )

    async def leave(self, match_id: str, player: Player, key: str | None) -> AppendResult:
        return await self._holding(match_id, player, "leave", key, lambda s: LeaveSeat(seat=s))

    async def reclaim(
        self, match_id: str, player: Player, key: str | None, *, returning: bool = False
    ) -> AppendResult:
        """Take the seat back from its stand-in. `returning`: the player's connection came
        back (`Presence.connected`), not a request; `decide` then gives back only a seat
        stood in for a disconnection (409 `stand_in_kept` otherwise)."""
        return await self._holding(
            match_id,
            player,
            "reclaim",
            key,
            lambda s: Reclaim(seat=s, returning=returning),
        )

    async def concede(self, match_id: str, player: Player, key: str | None) -> AppendResult:
        """Give the match up (`Concede`): decided holding the deadline row, as a leave is,
        with whether the match is ranked from its table settings (`settings_of`)."""
        match_id = check_id(match_id, "match")
        row = await self.reads.row(match_stream(match_id))
        ranked = settings_of(await self.reads.state(match_id), row).ranked
        return await self._holding(
            match_id, player, "concede", key, lambda s: Concede(seat=s, ranked=ranked)
        )

    async def _play(
        self,
        match_id: str,
        player: Player,
        request: str,
        key: str | None,
        command: Callable[[int], Command],
    ) -> AppendResult:
        """A roll or a move, chosen on the state the player saw: a lost race goes back to
        them (409). Sent `by="player"`: `decide` refuses it on a seat a CPU plays (409
        `stood_in`, `cpu_playing`)."""

        return await self.execute(
            match_id,
            lambda state: command(_own_seat(state, player)),
            actor=player.id,
            command_id=command_id_of(player, key),
            request=request,
        )

    async def _holding(
        self,
        match_id: str,
        player: Player,
        request: str,
        key: str | None,
        command: Callable[[int], Command],
    ) -> AppendResult:
        """Leaving and reclaiming mean the same on any state. They are decided holding the
        match's deadline row, as the scheduler holds it while it fires: no CPU or timer
        appends meanwhile (a CPU standing in at full speed would otherwise win every
        race). Another player's command can still come first: then try again."""
        stream = match_stream(check_id(match_id, "match"))
        cid = command_id_of(player, key)
        for attempt in range(_RECLAIM_TRIES):
            try:
                async with self.engine.connect() as conn:
                    async with conn.begin():
                        await self.deadlines.hold(conn, stream)
                        result = await self.execute(
                            match_id,
                            lambda state: command(_own_seat(state, player)),
                            actor=player.id,
                            command_id=cid,
                            request=request,
                            conn=conn,
                        )
                    await self.store.notify(result, conn)
                return result
            except ConcurrencyError:
                if attempt == _RECLAIM_TRIES - 1:
                    raise
        raise AssertionError("unreachable")  # pragma: no cover

    # ---------------------------------------------------------------- the scheduler's

    async def fire_deadline(
        self, conn: AsyncConnection, stream: str, expected_version: int, kind: str
    ) -> AppendResult:
        """Fire a claimed deadline inside the scheduler's transaction on `conn`: what it
        does (a timeout, or the CPU's roll or move) is `domain.deadline.deadline_command`;
        `kind` names the deadline in the events' actor."""
        match_id = match_id_of(stream)
        return await self.execute(
            match_id,
            lambda state: deadline_command(state, match_id),
            actor=f"scheduler:{kind}",
            expected_version=expected_version,
            conn=conn,
        )

    async def stand_in(
        self, conn: AsyncConnection, stream: str, seat: int, expected_version: int
    ) -> AppendResult:
        """A CPU stands in for a seat whose player did not come back (the grace period)."""
        return await self.execute(
            match_id_of(stream),
            lambda _state: StandIn(seat=seat, reason="disconnected"),
            actor="scheduler:grace",
            expected_version=expected_version,
            conn=conn,
        )

    # --------------------------------------------------------------------- the one path

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
        try:
            return await self._execute(
                stream, make, actor, command_id, request, expected_version, conn
            )
        except (AppError, ConcurrencyError):
            done = await done_meanwhile(self.store, command_id, stream, request)
            if done is None:
                raise
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
        # A command from a request may be decided on this instance's trusted fold, with no
        # read (`MatchReads.for_command`); if that fold was stale, the refusal or
        # the lost race says so, and it is decided once more on a fresh read.
        trusting = conn is None and expected_version is None
        while True:
            state, head, trusted = await self.reads.for_command(stream, fresh=not trusting)
            try:
                return await self._decide_and_append(
                    stream, state, head, make, actor, command_id, request, expected_version, conn
                )
            except (AppError, ConcurrencyError):
                if not trusted:
                    raise
                self.reads.distrust(stream)

    async def _decide_and_append(
        self,
        stream: str,
        state: MatchState,
        head: bytes,
        make: MakeCommand,
        actor: str,
        command_id: str | None,
        request: str,
        expected_version: int | None,
        conn: AsyncConnection | None,
    ) -> AppendResult:
        if state.status == "new":
            raise NotFound("no such match")
        if expected_version is not None and state.version != expected_version:
            raise ConcurrencyError(stream, expected_version, state.version)
        command = make(state)
        version = state.version
        events, after, command = await self._decide(conn, stream, state, command)
        row = await self.reads.row(stream, conn)

        def committed(result: AppendResult) -> None:
            # Before the NOTIFY hint: the fold at the new head is this instance's own, and
            # the stream's sockets here get the events without reading them back.
            self.reads.appended(stream, after, result.events[-1].hash)
            if self.on_appended is not None:
                self.on_appended(result)

        result = await self.store.append(
            stream,
            version,
            events,
            command_id=command_id,
            metadata=metadata(actor, command_id, request),
            prev_hash=head,
            side=[self.deadlines.side_write(stream, after, row)],
            conn=conn,
            on_commit=committed if conn is None else None,
        )
        if result.duplicate:  # the same key appended before: its first outcome
            self.reads.distrust(stream)
            same_request(result, request)
            return result
        # At debug: every command is in the event store, with its actor (`metadata`); at
        # info this line cost a twentieth of the service's CPU per command under load, and
        # even dropped by the level its arguments and logger cost a thirtieth.
        if _debug.isEnabledFor(logging.DEBUG):
            _log.debug(
                "match_command",
                command=type(command).__name__,
                actor=actor,
                version=result.next_version,
                events=[type(e).__name__ for e in events],
            )
        return result

    async def _decide(
        self, conn: AsyncConnection | None, stream: str, state: MatchState, command: Command
    ) -> tuple[list[Event], MatchState, Command]:
        """The events of `command` (with the fair die, and the seed reveal when they end
        the match), the state after them (`state` itself, advanced), and the command as
        decided."""
        if isinstance(command, Roll):
            # The die is never the caller's: it is the fair derivation of docs/design.md#fair-dice.
            die = None
            if needs_die(state):
                seed = await self.reads.seed(conn, stream)
                die = die_for_roll(seed, state.client_seed, state.rolls_made)
            command = Roll(seat=command.seat, die=die, by=command.by)
        decided = decide(command, state)
        if isinstance(decided, Rejection):
            # An illegal move is the request's `piece` at fault; other rejections are the
            # match's state (turn, phase), not a field.
            field = "piece" if decided.code == "illegal_move" else None
            raise rejection_error(decided.code, decided.reason, field, decided.why)
        # Folded in place: `state` is this command's own (`MatchReads` hands out copies),
        # and a command that fails is decided again on a state read afresh.
        after = fold(decided, state)
        events = list(decided)
        if after.status == "finished" and after.server_seed is None:
            seed = await self.reads.seed(conn, stream)
            reveal = decide(RevealSeed(server_seed=seed.hex()), after)
            assert isinstance(reveal, list)
            fold(reveal, after)
            events.extend(reveal)
        return events, after, command


def _own_seat(state: MatchState, player: Player) -> int:
    seat = seat_of(state, player)
    if seat is None:
        raise Forbidden("your token holds no seat in this match", code="not_your_seat")
    return seat


class CountedCommands(MatchCommands):
    """`MatchCommands` whose one path (`execute`: requests, sockets, the scheduler) counts
    each command's outcome in `ludo_match_commands_total` (its app's `counters`)."""

    def __init__(
        self,
        engine: AsyncEngine,
        store: EventStore,
        reads: MatchReads,
        deadlines: Deadlines,
        on_appended: Callable[[AppendResult], None] | None = None,
        counters: Counters = UNCOUNTED,
    ) -> None:
        super().__init__(engine, store, reads, deadlines, on_appended)
        self.counters = counters

    async def execute(
        self, match_id: str, make: MakeCommand, *, actor: str, **options: Any
    ) -> AppendResult:
        try:
            result = await super().execute(match_id, make, actor=actor, **options)
        except AppError:
            self.counters.command(actor, "rejected")
            raise
        except ConcurrencyError:
            self.counters.command(actor, "conflict")
            raise
        except Exception:
            self.counters.command(actor, "failed")
            raise
        self.counters.command(actor, "duplicate" if result.duplicate else "appended")
        return result
