"""Verify a match from its events alone: the hash chain, the dice, every move, the result.

The checks run in this order and stop at the first failure, which names the event (stream
version) and the check:

    hash_chain   versions 0..n in sequence, each prev_hash the previous hash, each hash
                 the sha256 of the event's exact bytes (domain.chain)
    events       every event decodes (after upcasting) into a known event type
    header       a replay file's summary agrees with the events it carries
    seed         the revealed seed hashes to the commitment published at creation (and,
                 in an audit, is the seed the database kept)
    dice         every DieRolled is roll number n of the match and its value is the die
                 the seed and client seed give for n (docs/design.md#fair-dice)
    turn_order   every command comes from the seat whose turn it is, in the right phase
    legal_move   every move is one the rules allow, with the outcome the rules give
    bonus_rolls  extra rolls are granted exactly when the rules grant them
    placements   players finish, and the match ends, with the places the rules give
    sequence     every other event is one the rules produce at that point
    finished     the match is over and its seed revealed (a live match is audited
                 without this check, and `live=True` verifies a live export without it)

A live export (a match still in play) carries no seed: with `live=True` every check but
`finished` runs up to its last event, except the dice values, which nothing can check
before the seed is revealed; the verdict says so (`dice_checked` false).

The replay re-decides every command with `domain.decider.decide` -- the same code that
judged it live -- and requires the recorded events to be exactly the events it produces.
Pure: no I/O, no clock.
"""

from __future__ import annotations

from collections.abc import Sequence
from operator import itemgetter
from typing import Final, TypeVar, assert_never, cast

import msgspec
from mypy_extensions import mypyc_attr

from domain.chain import ChainLink, first_break
from domain.commands import (
    Command,
    Concede,
    CreateMatch,
    MovePiece,
    Reclaim,
    RevealSeed,
    Roll,
    StandIn,
    StartMatch,
    TimeOut,
)
from domain.decider import MatchState, apply, decide
from domain.dice import DiceStream, seed_commitment
from domain.events import (
    EVENT_TYPES,
    DieRolled,
    Event,
    MatchConceded,
    MatchCreated,
    MatchFinished,
    MatchStarted,
    MatchTable,
    PieceMoved,
    PlayerFinished,
    RollPassed,
    SeatReclaimed,
    SeatStoodIn,
    SeedRevealed,
    TurnEnded,
    TurnTimedOut,
    decode_event,
)
from domain.rules import RulesetError, parse_ruleset
from domain.streams import match_stream
from replays.format import ReplayFile, stored_ruleset

__all__ = ["CHECKS", "Failure", "Verdict", "verify_links", "verify_replay"]

CHECKS: Final = (
    "hash_chain",
    "events",
    "header",
    "seed",
    "dice",
    "turn_order",
    "legal_move",
    "bonus_rolls",
    "placements",
    "sequence",
    "finished",
)


# Ordinary Python classes even when mypyc compiles this module (pyproject.toml
# [tool.ludo]): msgspec Structs and exceptions cannot be native classes.
@mypyc_attr(native_class=False)
class Failure(msgspec.Struct, frozen=True, kw_only=True):
    """The first check that failed: which one, at which event, and why."""

    check: str
    version: int | None
    event_type: str | None
    message: str

    def describe(self) -> str:
        where = "" if self.version is None else f"event {self.version}"
        if self.event_type:
            where += f" ({self.event_type})"
        return f"{where + ': ' if where else ''}{self.check}: {self.message}"


@mypyc_attr(native_class=False)
class Verdict(msgspec.Struct, frozen=True, kw_only=True):
    """What verification found. `ok` only when every check held."""

    ok: bool
    stream_id: str
    events: int
    rolls: int
    moves: int
    finished: bool
    placements: tuple[int, ...] | None
    failure: Failure | None = None
    # Whether the dice values were checked against a seed (revealed, or kept by the
    # database in an audit). False for a live export: roll numbers, turn order and moves
    # are checked, the values cannot be until the seed is revealed.
    dice_checked: bool = False


# Rejection codes by the check a recorded command that draws them fails.
_REJECTION_CHECK: Final = {
    "not_your_turn": "turn_order",
    "roll_first": "turn_order",
    "move_first": "turn_order",
    "illegal_move": "legal_move",
    "bad_die": "dice",
    "bad_ruleset": "events",
    "bad_seed": "seed",
    "already_revealed": "seed",
    "not_finished": "seed",
}


@mypyc_attr(native_class=False)
class _Stop(Exception):
    def __init__(self, failure: Failure) -> None:
        self.failure = failure


def _fail(check: str, version: int | None, event: Event | str | None, message: str) -> _Stop:
    name = event if isinstance(event, str) or event is None else type(event).__name__
    return _Stop(Failure(check=check, version=version, event_type=name, message=message))


def verify_replay(replay: ReplayFile, *, live: bool = False) -> Verdict:
    """Verify a replay file: its events, and that its header agrees with them.

    `live`: the file may be the export of a match still in play; it is checked up to its
    last event (the dice only if the seed is in it) instead of failing `finished`."""
    stream = replay.stream_id
    links: list[ChainLink] = [
        (stream, e.version, e.type, e.schema_version, e.data.encode(), e.prev_hash, e.hash)
        for e in replay.events
    ]
    return verify_links(stream, links, header=replay, require_finished=not live)


def verify_links(
    stream_id: str,
    links: Sequence[ChainLink],
    *,
    header: ReplayFile | None = None,
    kept_seed: bytes | None = None,
    require_finished: bool = True,
) -> Verdict:
    """Verify one stream's stored events (in version order).

    `kept_seed`: the server seed as the database keeps it (an audit); the revealed seed
    must equal it, and before the reveal it checks the dice rolled so far.
    `require_finished`: False audits a match still in play.
    """
    counts = [0, 0]  # rolls, moves
    state = MatchState()
    seed: bytes | None = None
    try:
        events, kinds = _decode(stream_id, links)
        if header is not None:
            _check_header(header, events, kinds, links[0][4])
        seed = _seed(events, kinds, kept_seed)
        _replay(events, state, seed, counts)
        if require_finished and (state.status != "finished" or state.server_seed is None):
            raise _fail(
                "finished",
                None,
                None,
                "the match is not over and its seed not revealed, so not every check can run"
                if state.status != "finished"
                else "the match is over but its seed was never revealed",
            )
    except _Stop as stop:
        return _verdict(stream_id, len(links), state, counts, stop.failure, seed is not None)
    return _verdict(stream_id, len(links), state, counts, None, seed is not None)


def _verdict(
    stream_id: str,
    n: int,
    state: MatchState,
    counts: list[int],
    failure: Failure | None,
    dice_checked: bool,
) -> Verdict:
    return Verdict(
        ok=failure is None,
        stream_id=stream_id,
        events=n,
        rolls=counts[0],
        moves=counts[1],
        finished=state.status == "finished",
        placements=tuple(state.placements) if state.placements else None,
        failure=failure,
        dice_checked=dice_checked,
    )


def _decode(stream_id: str, links: Sequence[ChainLink]) -> tuple[list[Event], list[type]]:
    """The stream's events, and their classes in the same order (for finding events by
    class without a Python loop)."""
    broken = first_break(links)
    if broken is not None:
        position, reason = broken  # the event's index: `links[position]` is the culprit
        raise _fail("hash_chain", position, links[position][2], reason)
    if not links:
        raise _fail("events", None, None, f"stream {stream_id!r} has no events")
    # The columns taken with `map(itemgetter)`: no Python step per event. A stream has a
    # handful of (type, schema version) pairs: checked once each, not per event.
    if all(
        (cls := EVENT_TYPES.get(type_name)) is not None and schema == cls.schema_version
        for type_name, schema in set(map(_TYPE_AND_SCHEMA, links))
    ):
        # Every event at its current version: one decode call for the whole stream
        # instead of one per event (a third of the decoding time).
        try:
            events = _stream_decoder.decode(b"[" + b",".join(map(_DATA, links)) + b"]")
        except msgspec.DecodeError:
            pass  # one event is bad: the slow path below names it
        else:
            kinds: list[type] = list(map(type, events))
            if kinds == list(map(EVENT_TYPES.__getitem__, map(_TYPE, links))):
                return events, kinds
    events = []
    for _sid, version, type_name, schema, data, _prev, _hash in links:
        try:
            events.append(decode_event(data, type_name=type_name, schema_version=schema))
        except (ValueError, msgspec.DecodeError) as error:
            raise _fail("events", version, type_name, f"does not decode: {error}") from None
        if type(events[-1]).__name__ != type_name:
            raise _fail(
                "events", version, type_name, f"data is a {type(events[-1]).__name__} event"
            )
    return events, list(map(type, events))


_stream_decoder: msgspec.json.Decoder[list[Event]] = msgspec.json.Decoder(list[Event])
# Fields of a `ChainLink`.
_TYPE: Final = itemgetter(2)
_TYPE_AND_SCHEMA: Final = itemgetter(2, 3)
_DATA: Final = itemgetter(4)


_E = TypeVar("_E", bound=Event)


def _first(events: list[Event], kinds: list[type], kind: type[_E]) -> tuple[int, _E | None]:
    """The first event of class `kind` and its index; (-1, None) if there is none.
    `list.index` finds it at C speed: this runs for every verified file."""
    try:
        at = kinds.index(kind)
    except ValueError:
        return -1, None
    return at, cast(_E, events[at])


def _check_header(
    header: ReplayFile, events: list[Event], kinds: list[type], first_data: bytes
) -> None:
    # The match id is not hashed, the stream id is (every event's hash covers it): the
    # file's `match_id` must be the one its stream names, or a file could pass for
    # another match.
    if header.stream_id != match_stream(header.match_id):
        raise _fail(
            "header",
            None,
            None,
            f"the file's `match_id` ({header.match_id!r}) is not the match of its stream "
            f"({header.stream_id!r})",
        )
    first = events[0]
    if not isinstance(first, MatchCreated):
        raise _fail("sequence", 0, first, "a match stream starts with MatchCreated")
    started = _first(events, kinds, MatchStarted)[1]
    finished = _first(events, kinds, MatchFinished)[1]
    revealed = _first(events, kinds, SeedRevealed)[1]
    expected = {
        "ruleset": stored_ruleset(first_data),  # as stored: the header repeats that form
        "seats": first.seats,
        "first_seat": first.first_seat,
        "seed_hash": first.seed_hash,
        "client_seeds": started.client_seeds if started else None,
        "client_seed": started.client_seed if started else None,
        "server_seed": revealed.server_seed if revealed else None,
        "placements": finished.placements if finished else None,
    }
    for field, value in expected.items():
        if getattr(header, field) != value:
            raise _fail(
                "header",
                None,
                None,
                f"the file's `{field}` ({getattr(header, field)!r}) is not what its events "
                f"say ({value!r})",
            )


def _seed(events: list[Event], kinds: list[type], kept_seed: bytes | None) -> bytes | None:
    """The server seed to check dice with: the revealed one (checked against the
    commitment and the kept seed), else the kept one, else None (dice checked later)."""
    first = events[0]
    seed_hash = first.seed_hash if isinstance(first, MatchCreated) else ""
    version, event = _first(events, kinds, SeedRevealed)
    if event is not None:
        try:
            revealed = bytes.fromhex(event.server_seed)
        except ValueError:
            raise _fail("seed", version, event, "the revealed seed is not hex") from None
        if seed_commitment(revealed) != seed_hash:
            raise _fail(
                "seed",
                version,
                event,
                f"sha256 of the revealed seed is {seed_commitment(revealed)}, but the "
                f"match committed to {seed_hash}",
            )
        if kept_seed is not None and revealed != kept_seed:
            raise _fail("seed", version, event, "the revealed seed is not the seed kept")
        return revealed
    if kept_seed is not None and seed_commitment(kept_seed) != seed_hash:
        raise _fail("seed", 0, first, "the seed kept does not match the match's commitment")
    return kept_seed


def _command_for(event: Event, state: MatchState, version: int) -> Command:
    """The command whose outcome starts with `event`: what the recorded events claim."""
    match event:
        case DieRolled():
            return Roll(seat=event.seat, die=event.value)
        case PieceMoved():
            if state.status == "playing" and state.phase == "roll":
                if event.die is not None:
                    raise _fail(
                        "turn_order",
                        version,
                        event,
                        f"seat {event.seat} moved by {event.die} without rolling it",
                    )
                return Roll(seat=event.seat, die=None)  # auto_enter
            return MovePiece(seat=event.seat, piece=event.piece)
        case MatchCreated():
            try:
                ruleset = parse_ruleset(event.ruleset)
            except RulesetError as error:
                raise _fail("events", version, event, f"bad ruleset: {error}") from None
            return CreateMatch(
                ruleset=ruleset,
                seats=event.seats,
                seed_hash=event.seed_hash,
                first_seat=event.first_seat,
                table=event.table if isinstance(event.table, MatchTable) else None,
            )
        case MatchStarted():
            return StartMatch(client_seeds=event.client_seeds)
        case TurnTimedOut():
            return TimeOut(seat=event.seat)
        case SeatStoodIn():
            return StandIn(seat=event.seat, reason=event.reason)
        case SeatReclaimed():
            return Reclaim(seat=event.seat)
        case SeedRevealed():
            return RevealSeed(server_seed=event.server_seed)
        case MatchConceded():
            # Whether the match was ranked is not in its events: the service judged that
            # when it was conceded; the rest of the rule (a CPU at every other seat still
            # playing, the places) is judged here again.
            return Concede(seat=event.seat)
        case RollPassed() | TurnEnded() | PlayerFinished() | MatchFinished():
            # Only the outcome of another command: recorded first, the rules never called
            # for it.
            raise _fail(
                _mismatch_check(event, None),
                version,
                event,
                "no command produces this event here: the rules did not call for it",
            )
        case _:
            assert_never(event)


def _replay(events: list[Event], state: MatchState, seed: bytes | None, counts: list[int]) -> None:
    dice: DiceStream | None = None
    i, n = 0, len(events)
    while i < n:
        event = events[i]
        kind = type(event)
        if state.status == "finished" and state.server_seed is not None:
            raise _fail("sequence", i, event, "an event after the match ended")
        command: Command
        # `kind is X` checks, then `cast`: isinstance asserts here cost 5% of verification.
        if kind is DieRolled:
            event = cast(DieRolled, event)
            if event.n != state.rolls_made:
                raise _fail(
                    "dice", i, event, f"roll number {event.n} where {state.rolls_made} was due"
                )
            if seed is not None:
                if dice is None:  # the client seed is fixed at the start, before any roll
                    dice = DiceStream(seed, state.client_seed)
                expected = dice(event.n)
                if event.value != expected:
                    raise _fail(
                        "dice",
                        i,
                        event,
                        f"roll {event.n} shows {event.value}, but the seed gives {expected}",
                    )
            counts[0] += 1
            command = Roll(seat=event.seat, die=event.value)
        elif kind is PieceMoved and state.phase == "move":
            event = cast(PieceMoved, event)
            command = MovePiece(seat=event.seat, piece=event.piece)
        else:
            command = _command_for(event, state, i)
        decided = decide(command, state)
        # Not a list: a Rejection. Narrows `decided` with no cast call (interpreted) and is
        # one type-flag test compiled, where `isinstance(decided, Rejection)` of a list is a
        # slow generic check.
        if not isinstance(decided, list):
            raise _fail(_REJECTION_CHECK.get(decided.code, "sequence"), i, event, decided.reason)
        end = i + len(decided)
        if events[i:end] != decided:
            _raise_first_difference(events, i, decided)
        for recorded in decided:
            apply(state, recorded)
        if kind is PieceMoved:  # a move is always the first event of its command's outcome
            counts[1] += 1
        i = end


def _raise_first_difference(events: list[Event], i: int, decided: list[Event]) -> None:
    """Name the first recorded event that differs from what the rules decided."""
    for at, expected_event in enumerate(decided, start=i):
        if at >= len(events):
            raise _fail(
                "sequence",
                at,
                None,
                f"the stream ends, but the rules follow with {_show(expected_event)}",
            )
        recorded = events[at]
        if recorded != expected_event:
            raise _fail(
                _mismatch_check(recorded, expected_event),
                at,
                recorded,
                f"recorded {_show(recorded)}, but the rules give {_show(expected_event)}",
            )
    raise AssertionError("no difference found")  # pragma: no cover


def _mismatch_check(recorded: Event, expected: Event | None) -> str:
    """Which rule a recorded event breaks, given the event the rules produce instead."""
    kinds = {type(recorded), type(expected)}
    if kinds & {PlayerFinished, MatchFinished}:
        return "placements"
    if type(recorded) is not type(expected):
        return "bonus_rolls" if TurnEnded in kinds else "sequence"
    if isinstance(recorded, TurnEnded):
        return "turn_order"
    if isinstance(recorded, PieceMoved):
        assert isinstance(expected, PieceMoved)
        return "bonus_rolls" if recorded.bonus != expected.bonus else "legal_move"
    if isinstance(recorded, RollPassed):
        assert isinstance(expected, RollPassed)
        return "bonus_rolls" if recorded.retry != expected.retry else "legal_move"
    return "sequence"


def _show(event: Event) -> str:
    fields = msgspec.structs.asdict(event)
    inner = ", ".join(f"{k}={v!r}" for k, v in fields.items())
    return f"{type(event).__name__}({inner})"
