"""A small, real arena for the tests: its events decided by `domain.arena.decide`, its
matches played through `domain.decider` with the dice of docs/design.md#fair-dice, and a way to
store it all in an event store as the service would.

The arena (`build_arena`): six players join a 2-player arena of 20 minutes; a pass pairs
three tables; at the first table the second seat leaves (a CPU plays it out for `left`,
so the result pauses them); after the results one player pauses, and a second pass, with
one player absent (`skipped`), pairs one table; the paused player continues; a third
pass pairs two tables (the player on a streak of two firsts scores double if they win
again); the clock runs out. Every match ends with its seed revealed, so its replay checks the dice.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Sequence
from typing import Final

import msgspec
import sqlalchemy as sa

from domain import arena
from domain.arena import (
    ArenaCommand,
    ArenaEvent,
    ArenaState,
    ArenaTable,
    ContinueArena,
    CreateArena,
    EndArena,
    JoinArena,
    PairTables,
    PauseArena,
    TablesPaired,
)
from domain.chain import GENESIS, event_hash
from domain.commands import CreateMatch, LeaveSeat, MovePiece, RevealSeed, Roll, StartMatch
from domain.cpu import choose_move
from domain.decider import MatchState, current_legal_moves, needs_die
from domain.decider import fold as fold_match
from domain.dice import die_for_roll, seed_commitment
from domain.events import Event, SeatSpec
from domain.rules import PRESETS
from domain.selfplay import execute
from domain.streams import match_stream, tournament_stream
from replays.format import ReplayEvent, replay_from_events
from replays.tournament import TournamentFile, tournament_from_events
from services.shared.eventstore import EventStore

ARENA_ID: Final = "7d1c2b3a-4e5f-4a6b-8c7d-9e0f1a2b3c4d"
# Seconds since the epoch: 2026-09-21, in the past of any test run.
STARTS_AT: Final = 1_790_000_000.0
# (player id, name, display rating), in the order they join.
PLAYERS: Final = (
    ("a1b2c3d4-0000-4000-8000-000000000001", "ann", 1620.0),
    ("a1b2c3d4-0000-4000-8000-000000000002", "bob", 1580.0),
    ("a1b2c3d4-0000-4000-8000-000000000003", "cho", 1500.0),
    ("a1b2c3d4-0000-4000-8000-000000000004", "dai", 1490.0),
    ("a1b2c3d4-0000-4000-8000-000000000005", "eri", 1450.0),
    ("a1b2c3d4-0000-4000-8000-000000000006", "fumi", 1400.0),
)


class ArenaRecord(msgspec.Struct, kw_only=True):
    """A played arena: its id, its events in order, each match's events and server seed
    (by match id, in pairing order), and who `left` and who `paused` (asked)."""

    arena_id: str
    events: list[ArenaEvent]
    matches: dict[str, list[Event]]
    seeds: dict[str, bytes]
    left: str
    paused: str


def match_seed(match_id: str) -> bytes:
    """The server seed of an arena match (derived from its id: the tests need no secret)."""
    return hashlib.sha256(f"arena-match:{match_id}".encode()).digest()


def play_arena_match(
    table: ArenaTable,
    names: dict[str, str],
    client_seeds: dict[str, str],
    rules: str,
    *,
    leaver: int | None = None,
) -> list[Event]:
    """A whole match of `table`'s players in its seat order, every command through
    `decide`, moves chosen by the easy CPU, dice from the match's seed; seat `leaver`
    leaves at roll 10 (a CPU plays it out); the seed is revealed at the end."""
    seed = match_seed(table.match_id)
    seats = tuple(SeatSpec(name=names[p], player_id=p) for p in table.players)
    state = MatchState()
    events: list[Event] = []
    ruleset = PRESETS[rules]
    execute(
        state, CreateMatch(ruleset=ruleset, seats=seats, seed_hash=seed_commitment(seed)), events
    )
    execute(state, StartMatch(client_seeds=tuple(client_seeds[p] for p in table.players)), events)
    while state.status != "finished":
        if leaver is not None and state.rolls_made >= 10 and state.stood_in[leaver] is None:
            execute(state, LeaveSeat(seat=leaver), events)
        if state.phase == "roll":
            die = (
                die_for_roll(seed, state.client_seed, state.rolls_made)
                if needs_die(state)
                else None
            )
            execute(state, Roll(seat=state.turn, die=die), events)
        else:
            moves = current_legal_moves(state)
            move = choose_move("easy", state, moves, f"{table.match_id}:{state.turn}")
            execute(state, MovePiece(seat=state.turn, piece=move.piece), events)
    execute(state, RevealSeed(server_seed=seed.hex()), events)
    return events


def build_arena(arena_id: str = ARENA_ID, rules: str = "standard") -> ArenaRecord:
    """The arena of the module docstring, every event decided on the fold before it."""
    state = ArenaState()
    events: list[ArenaEvent] = []
    matches: dict[str, list[Event]] = {}
    names = {p: name for p, name, _ in PLAYERS}
    client_seeds = {p: f"seed of {name}" for p, name, _ in PLAYERS}

    def run(command: ArenaCommand) -> list[ArenaEvent]:
        decided = arena.decide(command, state)
        assert isinstance(decided, list), f"{command!r} refused: {decided!r}"
        arena.fold(decided, state)
        events.extend(decided)
        return decided

    def pair(now: float, absent: frozenset[str]) -> tuple[ArenaTable, ...]:
        first = len(state.running) + len(state.results)
        ids = tuple(
            (table_id(arena_id, "party", n), table_id(arena_id, "match", n))
            for n in range(first, first + len(PLAYERS))
        )
        [paired] = run(PairTables(now=now, table_ids=ids, absent=absent))
        assert isinstance(paired, TablesPaired)
        return paired.tables

    def play(table: ArenaTable, leaver: int | None = None) -> None:
        played = play_arena_match(table, names, client_seeds, rules, leaver=leaver)
        matches[table.match_id] = played
        end = fold_match(played)
        assert end.placements is not None
        assert state.created is not None
        scoring = state.created.scoring
        run(arena.match_outcome(table.match_id, end.placements, end.stood_in, scoring=scoring))

    run(
        CreateArena(
            arena_id=arena_id,
            name="test arena",
            seats=2,
            rules=rules,
            turn_limit=30,
            starts_at=STARTS_AT,
            minutes=20,
        )
    )
    for i, (player_id, name, rating) in enumerate(PLAYERS):
        run(
            JoinArena(
                player_id=player_id,
                name=name,
                rating=rating,
                now=STARTS_AT - 300 + i,
                client_seed=client_seeds[player_id],
            )
        )
    first_round = pair(STARTS_AT + 2, frozenset())
    play(first_round[0], leaver=1)
    for table in first_round[1:]:
        play(table)
    left = first_round[0].players[1]
    paused = first_round[2].players[0]
    run(PauseArena(player_id=paused, now=STARTS_AT + 350))
    waiting = [p for p, e in state.entrants.items() if e.state == "waiting"]
    for table in pair(STARTS_AT + 400, frozenset(waiting[:1])):
        play(table)
    run(ContinueArena(player_id=paused, rating=1400.0, now=STARTS_AT + 700))
    for table in pair(STARTS_AT + 701, frozenset()):
        play(table)
    run(EndArena(now=STARTS_AT + 20 * 60))
    return ArenaRecord(
        arena_id=arena_id,
        events=events,
        matches=matches,
        seeds={m: match_seed(m) for m in matches},
        left=left,
        paused=paused,
    )


def table_id(arena_id: str, kind: str, n: int) -> str:
    """The id of the `n`th party or match of an arena (uuid5: the same on every run)."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"ludo-test:{arena_id}:{kind}:{n}"))


def arena_file(record: ArenaRecord) -> TournamentFile:
    """The tournament file of a record, built without a database."""
    replays = [replay_from_events(m, events) for m, events in record.matches.items()]
    return tournament_from_events(record.arena_id, record.events, replays)


async def store_arena(
    store: EventStore, record: ArenaRecord, arena_events: Sequence[ArenaEvent] | None = None
) -> None:
    """Append the record's matches (each with its seed in `match_seeds`) and its arena
    stream (or only `arena_events` of it) as the service would."""
    for match_id, events in record.matches.items():
        stream = match_stream(match_id)
        await store.append(stream, 0, events, metadata={"actor": "scheduler:cpu"})
        async with store.engine.begin() as conn:
            await conn.execute(
                sa.text("INSERT INTO match_seeds (stream_id, server_seed) VALUES (:s, :seed)"),
                {"s": stream, "seed": record.seeds[match_id]},
            )
    chosen = record.events if arena_events is None else arena_events
    await store.append(
        tournament_stream(record.arena_id), 0, list(chosen), metadata={"actor": "arena"}
    )


def rehash(events: list[ReplayEvent], stream_id: str, start: int) -> None:
    """Recompute the chain from event `start` on, as a forger who knows how would: the
    chain then holds, and only the rules can catch what was changed."""
    prev = GENESIS if start == 0 else bytes.fromhex(events[start - 1].hash)
    for stored in events[start:]:
        digest = event_hash(
            prev,
            stream_id,
            stored.version,
            stored.type,
            stored.schema_version,
            stored.data.encode("utf-8"),
        )
        stored.prev_hash, stored.hash = prev.hex(), digest.hex()
        prev = digest


def forge_event(
    events: list[ReplayEvent], stream_id: str, version: int, forged: msgspec.Struct
) -> None:
    """Put `forged` in place of event `version` (its bytes as the store writes an arena
    event's) and re-hash the chain from there."""
    events[version].data = msgspec.json.encode(forged).decode("utf-8")
    rehash(events, stream_id, version)
