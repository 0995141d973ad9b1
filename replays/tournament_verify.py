"""Verify an arena from its tournament file alone: the chain, every decision, every match.

The checks run in this order and stop at the first failure, which names the check and the
arena event (stream version) or the match:

    hash_chain  the arena stream's chain (`domain.chain.first_break`, as a replay's)
    events      every arena event decodes, as the type its row names, upcast from the
                schema version its row names (`domain.arena.UPCASTERS`)
    header      the file's `tournament_id` is the arena of its stream and of its
                ArenaCreated (the stream id is hashed into every event; the id is not)
    sequence    each event other than a pairing or a result is what `domain.arena.decide`
                yields for the command it records, at the time it records, on the fold
                before it (the first one an ArenaCreated): a join, continue, pause or
                cancel recorded at or after the arena's end is refused
    pairing     each TablesPaired is what `PairTables(now=at, its table ids, absent=its
                skipped)` yields on the state before it, with match ids never used before
    match       the match of each result has one replay in the file, which verifies as
                `ludo replay verify` does (dice included), seats the table's players in
                its seat order and plays the arena's rules; no replay of a match the
                arena never paired
    result      each ResultScored is what the `ScoreMatch` of its replay's end
                (`match_outcome`, by the arena's scoring revision) yields on the state
                before it; every paired match is scored
    standings   the header's standings are the fold's

Walking the stream in order, a match is checked when its result comes: a forged pairing
is named as a pairing, not as the replays it would leave unmatched. Pure: no I/O, no clock.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final, assert_never

import msgspec

from domain import arena
from domain.arena import (
    ArenaCancelled,
    ArenaCommand,
    ArenaCreated,
    ArenaEnded,
    ArenaEvent,
    ArenaJoined,
    ArenaState,
    ArenaTable,
    CancelArena,
    ContinueArena,
    CreateArena,
    EndArena,
    JoinArena,
    PairTables,
    PauseArena,
    PlayerContinued,
    PlayerPaused,
    ResultScored,
    ScoreMatch,
    TablesPaired,
)
from domain.chain import first_break
from domain.decider import fold as fold_match
from domain.rules import PRESETS, Ruleset, RulesetError, options_to_dict, parse_ruleset
from domain.streams import tournament_stream
from replays.format import ReplayFile
from replays.tournament import TournamentFile, standing_lines
from replays.verify import verify_replay

__all__ = ["CHECKS", "TournamentFailure", "TournamentVerdict", "verify_tournament"]

CHECKS: Final = (
    "hash_chain",
    "events",
    "header",
    "sequence",
    "pairing",
    "match",
    "result",
    "standings",
)


class TournamentFailure(msgspec.Struct, frozen=True, kw_only=True):
    """The first check that failed, where (`version`: the arena event; `match_id`: the
    match, when the failure is a match's), and why."""

    check: str
    where: str
    message: str
    version: int | None = None
    match_id: str | None = None

    def describe(self) -> str:
        return f"{self.where + ': ' if self.where else ''}{self.check}: {self.message}"


class TournamentVerdict(msgspec.Struct, frozen=True, kw_only=True):
    """What verification found: `ok` only when every check held; the figures count the
    file's arena events, its matches and the arena's players (as far as the walk got)."""

    ok: bool
    tournament_id: str
    events: int
    matches: int
    players: int
    failure: TournamentFailure | None = None

    def describe(self) -> str:
        """One line: the figures, or the failure."""
        if self.failure is not None:
            return self.failure.describe()
        return (
            f"tournament {self.tournament_id}: {self.events} arena events, {self.matches} "
            f"matches, {self.players} players; every pairing, match, result and the "
            "standings hold"
        )


class _Stop(Exception):
    def __init__(self, failure: TournamentFailure) -> None:
        self.failure = failure


def _at(check: str, version: int, kind: str, message: str) -> _Stop:
    """A failure at an arena event."""
    where = f"event {version} ({kind})"
    return _Stop(TournamentFailure(check=check, where=where, message=message, version=version))


def _of_match(check: str, match_id: str, message: str, version: int | None = None) -> _Stop:
    """A failure of a match (with the arena event that needed it, if any)."""
    where = f"match {match_id}" + ("" if version is None else f" (event {version})")
    return _Stop(
        TournamentFailure(
            check=check, where=where, message=message, version=version, match_id=match_id
        )
    )


def verify_tournament(
    tournament: TournamentFile, *, on_match: Callable[[], None] | None = None
) -> TournamentVerdict:
    """Verify a tournament file (the checks of the module docstring, in order).
    `on_match` is called after each match's replay is verified (a progress bar)."""
    state = ArenaState()
    try:
        _check_chain(tournament)
        events = _decode(tournament)
        _check_header(tournament, events)
        replays = _replays_by_match(tournament)
        _walk(events, state, replays, on_match or (lambda: None))
        _check_leftovers(state, replays)
        _check_standings(tournament, events)
    except _Stop as stop:
        return _verdict(tournament, state, stop.failure)
    return _verdict(tournament, state, None)


def _verdict(
    tournament: TournamentFile, state: ArenaState, failure: TournamentFailure | None
) -> TournamentVerdict:
    return TournamentVerdict(
        ok=failure is None,
        tournament_id=tournament.tournament_id,
        events=len(tournament.events),
        matches=len(tournament.matches),
        players=len(state.entrants),
        failure=failure,
    )


def _check_chain(tournament: TournamentFile) -> None:
    links = [e.link(tournament.stream_id) for e in tournament.events]
    broken = first_break(links)
    if broken is not None:
        position, reason = broken  # the event's index: `links[position]` is the culprit
        raise _at("hash_chain", position, links[position][2], reason)
    if not links:
        raise _Stop(TournamentFailure(check="events", where="", message="the file has no events"))


def _decode(tournament: TournamentFile) -> list[ArenaEvent]:
    events: list[ArenaEvent] = []
    for stored in tournament.events:
        try:
            # Upcast from the version the row names (an older event reads as it was meant).
            event = arena.decode_arena_event(
                stored.data.encode("utf-8"),
                type_name=stored.type,
                schema_version=stored.schema_version,
            )
        except ValueError as error:  # msgspec's DecodeError, or an upcaster's refusal
            raise _at("events", stored.version, stored.type, f"does not decode: {error}") from None
        kind = type(event)
        if kind.__name__ != stored.type:
            raise _at(
                "events",
                stored.version,
                stored.type,
                f"data is a {kind.__name__} event, the row says {stored.type} at schema "
                f"version {stored.schema_version}",
            )
        events.append(event)
    return events


def _check_header(tournament: TournamentFile, events: list[ArenaEvent]) -> None:
    # The id is not hashed, the stream id is: the file's id must be the one its stream
    # names, or a file could pass for another arena.
    if tournament.stream_id != tournament_stream(tournament.tournament_id):
        raise _Stop(
            TournamentFailure(
                check="header",
                where="",
                message=f"the file's `tournament_id` ({tournament.tournament_id!r}) is not "
                f"the arena of its stream ({tournament.stream_id!r})",
            )
        )
    first = events[0]
    if isinstance(first, ArenaCreated) and first.arena_id != tournament.tournament_id:
        raise _at(
            "header",
            0,
            "ArenaCreated",
            f"the arena created is {first.arena_id!r}, the file's `tournament_id` "
            f"{tournament.tournament_id!r}",
        )


def _replays_by_match(tournament: TournamentFile) -> dict[str, ReplayFile]:
    replays: dict[str, ReplayFile] = {}
    for replay in tournament.matches:
        if replay.match_id in replays:
            raise _of_match("match", replay.match_id, "the file holds two replays of it")
        replays[replay.match_id] = replay
    return replays


def _walk(
    events: list[ArenaEvent],
    state: ArenaState,
    replays: dict[str, ReplayFile],
    on_match: Callable[[], None],
) -> None:
    """Re-decide every event on the fold before it, then apply it."""
    for version, event in enumerate(events):
        kind = type(event).__name__
        check = {TablesPaired: "pairing", ResultScored: "result"}.get(type(event), "sequence")
        if (version == 0) != isinstance(event, ArenaCreated):
            raise _at(
                "sequence", version, kind, "an arena stream starts with its ArenaCreated, once"
            )
        if isinstance(event, TablesPaired):
            _check_fresh(event, state, version)
        command = _command_for(event, state, replays, version, on_match)
        decided = arena.decide(command, state)
        if not isinstance(decided, list):
            raise _at(check, version, kind, f"decide refuses it: {decided.code}: {decided.reason}")
        if decided != [event]:
            raise _at(check, version, kind, _difference(event, decided))
        arena.apply(state, event)


def _check_fresh(event: TablesPaired, state: ArenaState, version: int) -> None:
    """`decide` takes the table ids it is given: that each match is new is checked here
    (a match paired twice would be scored twice)."""
    seen = set(state.running) | set(state.results)
    for table in event.tables:
        if table.match_id in seen:
            raise _at(
                "pairing", version, "TablesPaired", f"match {table.match_id} was paired before"
            )
        seen.add(table.match_id)


def _command_for(
    event: ArenaEvent,
    state: ArenaState,
    replays: dict[str, ReplayFile],
    version: int,
    on_match: Callable[[], None],
) -> ArenaCommand:
    """The command the event records (a result's from its match's replay)."""
    match event:
        case ResultScored():
            table = state.running.get(event.match_id)
            if table is None:  # `decide` names it: not a running match of this arena
                return ScoreMatch(match_id=event.match_id, places=(), left=())
            assert state.created is not None  # the walk is past the ArenaCreated
            outcome = _match_outcome(
                table,
                replays.get(event.match_id),
                version,
                PRESETS[state.created.rules],
                state.created.scoring,
            )
            on_match()
            return outcome
        case TablesPaired():
            ids = tuple((t.party_id, t.match_id) for t in event.tables)
            return PairTables(now=event.at, table_ids=ids, absent=frozenset(event.skipped))
        case ArenaCreated():
            return CreateArena(**msgspec.structs.asdict(event))
        case ArenaJoined():
            fields = msgspec.structs.asdict(event)
            return JoinArena(now=fields.pop("at"), **fields)
        case PlayerPaused():
            return PauseArena(player_id=event.player_id, reason=event.reason, now=event.at)
        case PlayerContinued():
            return ContinueArena(player_id=event.player_id, rating=event.rating, now=event.at)
        case ArenaEnded():
            return EndArena(now=event.at)
        case ArenaCancelled():
            return CancelArena(reason=event.reason, by=event.by, now=event.at)
        case _:
            assert_never(event)


def _match_outcome(
    table: ArenaTable, replay: ReplayFile | None, version: int, rules: Ruleset, scoring: int
) -> ScoreMatch:
    """The `ScoreMatch` the match's own events give, read by the arena's scoring revision,
    once its replay has passed every check of `match`."""
    match_id = table.match_id
    if replay is None:
        raise _of_match("match", match_id, "the file has no replay of this match", version)
    verdict = verify_replay(replay)
    if verdict.failure is not None:
        raise _of_match(
            "match", match_id, f"its replay does not verify: {verdict.failure.describe()}", version
        )
    seated = tuple(seat.player_id for seat in replay.seats)
    if seated != table.players:
        raise _of_match(
            "match",
            match_id,
            f"its seats are {list(seated)}, the arena paired {list(table.players)}",
            version,
        )
    _check_rules(replay, match_id, version, rules)
    # The replay verified: its events decode and fold to its end.
    match = fold_match(e.event() for e in replay.events)
    assert match.placements is not None
    return arena.match_outcome(match_id, match.placements, match.stood_in, scoring=scoring)


def _check_rules(replay: ReplayFile, match_id: str, version: int, preset: Ruleset) -> None:
    """The match played the arena's preset: its options, whatever revision of the rules'
    reading it pinned (a replay keeps the ruleset as stored, `revision` included)."""
    try:
        played = options_to_dict(parse_ruleset(replay.ruleset))
    except RulesetError as error:  # pragma: no cover - verify_replay refuses it first
        raise _of_match(
            "match", match_id, f"its ruleset does not parse: {error}", version
        ) from None
    rules = options_to_dict(preset)
    if played != rules:
        changed = sorted(k for k in rules if played.get(k) != rules[k])
        raise _of_match(
            "match",
            match_id,
            f"it was not played under the arena's rules: {', '.join(changed)} differ",
            version,
        )


def _check_leftovers(state: ArenaState, replays: dict[str, ReplayFile]) -> None:
    for match_id in state.running:
        raise _of_match(
            "result",
            match_id,
            "paired but never scored: the file is of an arena whose matches are not all over",
        )
    for match_id in replays:
        if match_id not in state.results:
            raise _of_match(
                "match", match_id, "the file holds its replay, but the arena never paired it"
            )


def _check_standings(tournament: TournamentFile, events: list[ArenaEvent]) -> None:
    expected = standing_lines(events)
    for line, (given, fold_line) in enumerate(zip(tournament.standings, expected, strict=False), 1):
        if given != fold_line:
            raise _Stop(
                TournamentFailure(
                    check="standings",
                    where=f"line {line}",
                    message=f"the file says {_show(given)}, the events give {_show(fold_line)}",
                )
            )
    if len(tournament.standings) != len(expected):
        raise _Stop(
            TournamentFailure(
                check="standings",
                where="",
                message=f"the file has {len(tournament.standings)} lines, the events give "
                f"{len(expected)}",
            )
        )


def _difference(recorded: ArenaEvent, decided: list[ArenaEvent]) -> str:
    """What the recorded event says that `decide` does not, field by field (seat by seat
    for a result, table by table for a pairing)."""
    if len(decided) != 1 or type(decided[0]) is not type(recorded):
        shown = ", ".join(_show(e) for e in decided) or "nothing"
        return f"recorded {_show(recorded)}, but decide gives {shown}"
    return "; ".join(_fields_apart(recorded, decided[0], ""))


def _fields_apart(recorded: msgspec.Struct, expected: msgspec.Struct, prefix: str) -> list[str]:
    """`field: recorded X, decide gives Y` for each field that differs, looking inside
    tuples of structs of the same length (a result's seats, a pass's tables)."""
    parts = []
    for field in recorded.__struct_fields__:
        mine, theirs = getattr(recorded, field), getattr(expected, field)
        if mine == theirs:
            continue
        if (
            isinstance(mine, tuple)
            and isinstance(theirs, tuple)
            and len(mine) == len(theirs)
            and all(isinstance(x, msgspec.Struct) for x in (*mine, *theirs))
        ):
            for i, (a, b) in enumerate(zip(mine, theirs, strict=True)):
                if a != b:
                    parts += _fields_apart(a, b, f"{prefix}{field}[{i}].")
        else:
            parts.append(f"{prefix}{field}: recorded {_show(mine)}, decide gives {_show(theirs)}")
    return parts


def _show(value: object) -> str:
    if isinstance(value, msgspec.Struct):
        inner = ", ".join(f"{k}={v!r}" for k, v in msgspec.structs.asdict(value).items())
        return f"{type(value).__name__}({inner})"
    return repr(value)
