"""Matches to replay: self-played under any ruleset, scripted with timeouts, stand-ins
and reclaims, or conceded (for the replay tests, `ludo replay` and the replay store's)."""

from __future__ import annotations

import hashlib
import random

from domain.commands import (
    Command,
    Concede,
    CreateMatch,
    LeaveSeat,
    MovePiece,
    Reclaim,
    RevealSeed,
    Roll,
    StandIn,
    StartMatch,
    TimeOut,
)
from domain.cpu import choose_move
from domain.decider import MatchState, current_legal_moves, needs_die
from domain.dice import die_for_roll, seed_commitment
from domain.events import Event, SeatSpec
from domain.rules import Ruleset
from domain.selfplay import execute


def server_seed(name: str) -> bytes:
    return hashlib.sha256(name.encode()).digest()


def scripted_match(
    ruleset: Ruleset, players: int, seed: bytes, *, rng_seed: int = 0, cpu_seats: int = 0
) -> tuple[list[Event], list[str]]:
    """A whole match with human seats that time out, leave, drop and come back.

    Every command goes through `decide` (a rejection fails the test); the humans' moves
    are the easy CPU's. Returns the events and, per event, the actor that caused it, the
    way the match service records them.
    """
    rng = random.Random(rng_seed)
    seats = tuple(
        SeatSpec(name=f"cpu-{i}", cpu="easy")
        if i < cpu_seats
        else SeatSpec(name=f"p{i}", player_id=f"player-{i}")
        for i in range(players)
    )
    state = MatchState()
    events: list[Event] = []
    actors: list[str] = []

    def run(command: Command, actor: str) -> None:
        count = execute(state, command, events)
        actors.extend([actor] * count)

    run(CreateMatch(ruleset=ruleset, seats=seats, seed_hash=seed_commitment(seed)), "player-0")
    run(StartMatch(client_seeds=tuple(f"c{i}" for i in range(players))), "player-0")
    while state.status != "finished":
        seat = state.turn
        human = seats[seat].cpu is None
        if human and state.stood_in[seat] is not None and rng.random() < 0.2:
            run(Reclaim(seat=seat), seats[seat].player_id or "")
            continue
        if human and state.stood_in[seat] is None and not state.timed_out_this_turn:
            roll = rng.random()
            if roll < 0.03:
                run(TimeOut(seat=seat), "scheduler:turn")
            elif roll < 0.04:
                run(StandIn(seat=seat, reason="disconnected"), "scheduler:grace")
                continue
            elif roll < 0.045:
                run(LeaveSeat(seat=seat), seats[seat].player_id or "")
                continue
        cpu_turn = not human or state.stood_in[seat] is not None or state.timed_out_this_turn
        actor = "scheduler:cpu" if cpu_turn else (seats[seat].player_id or "")
        if state.phase == "roll":
            die = None
            if needs_die(state):
                die = die_for_roll(seed, state.client_seed, state.rolls_made)
            run(Roll(seat=seat, die=die), actor)
        else:
            move = choose_move("easy", state, current_legal_moves(state), f"{rng_seed}:{seat}")
            run(MovePiece(seat=seat, piece=move.piece), actor)
    run(RevealSeed(server_seed=seed.hex()), actors[-1])
    return events, actors


def conceded_match(
    ruleset: Ruleset, players: int, seed: bytes, *, commands: int = 60, humans: int = 1
) -> tuple[list[Event], list[str]]:
    """A match of `humans` guests (the first seats) against easy CPUs, played by the easy
    CPU's choices for `commands` commands, then conceded by seat 0 (and its seed
    revealed). Every command goes through `decide`. Returns the events and their actors."""
    seats = tuple(
        SeatSpec(name=f"p{i}", player_id=f"player-{i}")
        if i < humans
        else SeatSpec(name=f"cpu-{i}", cpu="easy")
        for i in range(players)
    )
    state = MatchState()
    events: list[Event] = []
    actors: list[str] = []

    def run(command: Command, actor: str) -> None:
        actors.extend([actor] * execute(state, command, events))

    run(CreateMatch(ruleset=ruleset, seats=seats, seed_hash=seed_commitment(seed)), "player-0")
    run(StartMatch(client_seeds=("",) * players), "player-0")
    for _ in range(commands):
        seat = state.turn
        actor = seats[seat].player_id or "scheduler:cpu"
        if state.phase == "roll":
            die = (
                die_for_roll(seed, state.client_seed, state.rolls_made)
                if needs_die(state)
                else None
            )
            run(Roll(seat=seat, die=die), actor)
        else:
            move = choose_move("easy", state, current_legal_moves(state), f"c:{seat}")
            run(MovePiece(seat=seat, piece=move.piece), actor)
    run(Concede(seat=0), "player-0")
    run(RevealSeed(server_seed=seed.hex()), "player-0")
    return events, actors
