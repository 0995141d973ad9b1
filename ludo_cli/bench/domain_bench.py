"""`ludo bench domain`: how fast the rules engine plays whole matches, on one core.

Plays full 4-player matches between CPUs through the same `decide`/`apply` path and the same
fair dice (HMAC per roll, DESIGN.md §4) as live play, then times legal-move generation
alone over positions sampled from those matches, and in the same run plays the public
engine `ludo-king-engine` with its first-legal-move policy as the peer to compare with.
Nothing here asserts a time; it prints figures for docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import platform
import sys
import time
from typing import Any

import msgspec

from domain.board import Board
from domain.decider import MatchState, apply
from domain.events import CpuLevel, DieRolled
from domain.moves import legal_moves
from domain.rules import parse_ruleset
from domain.selfplay import play_match
from ludo_cli.bench import peer
from ludo_cli.progress import Progress

__all__ = ["register", "run"]


class LevelFigures(msgspec.Struct):
    level: str
    matches: int
    seconds: float
    events: int
    rolls: int

    @property
    def matches_per_s(self) -> float:
        return self.matches / self.seconds

    @property
    def events_per_s(self) -> float:
        return self.events / self.seconds


def register(targets: Any) -> None:
    parser = targets.add_parser(
        "domain", help="full CPU matches/s, events/s, legal-move generation µs, vs a peer engine"
    )
    parser.add_argument("--matches", type=int, default=300, help="matches per CPU level")
    parser.add_argument("--peer-matches", type=int, default=None, help="default: --matches")
    parser.add_argument("--levels", default="easy,normal", help="CPU levels to measure")
    parser.add_argument("--rules", default='{"preset": "standard"}', help="ruleset JSON")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-pin", action="store_true", help="do not pin to one CPU core")
    parser.add_argument("--json", action="store_true", help="print figures as JSON")
    parser.set_defaults(func=run)


def _server_seed(seed: int, index: int) -> bytes:
    return hashlib.sha256(f"bench:{seed}:{index}".encode()).digest()


def _play_level(ruleset: Any, level: CpuLevel, matches: int, seed: int) -> LevelFigures:
    levels = [level] * 4
    seconds = 0.0
    events = rolls = 0
    with Progress(matches, f"{level:>6}") as bar:
        for i in range(matches):
            start = time.perf_counter()
            record = play_match(
                ruleset,
                levels,
                server_seed=_server_seed(seed, i),
                cpu_seed=str(i),
                keep_events=False,
            )
            seconds += time.perf_counter() - start
            events += record.event_count
            rolls += record.state.rolls_made
            bar.advance()
    return LevelFigures(level, matches, seconds, events, rolls)


def _movegen_us(ruleset: Any, seed: int, samples_from: int = 20) -> tuple[float, int]:
    """Mean µs per `legal_moves` call (generator drained) over positions from real matches."""
    positions: list[tuple[Board, list[list[int]], int, int]] = []
    for i in range(samples_from):
        record = play_match(ruleset, ["easy"] * 4, server_seed=_server_seed(seed, 10_000 + i))
        state = MatchState()
        for event in record.events:
            apply(state, event)
            if type(event) is DieRolled:
                assert state.board is not None
                positions.append(
                    (state.board, [r[:] for r in state.pieces], event.seat, event.value)
                )
    start = time.perf_counter()
    for board, pieces, seat, die in positions:
        for _ in legal_moves(board, pieces, seat, die):
            pass
    elapsed = time.perf_counter() - start
    return elapsed / len(positions) * 1e6, len(positions)


def run(args: argparse.Namespace) -> int:
    pinned = False
    if not args.no_pin and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
        pinned = True
    ruleset = parse_ruleset(msgspec.json.decode(args.rules))
    levels: list[CpuLevel] = [lvl.strip() for lvl in args.levels.split(",")]  # type: ignore[misc]
    figures = [_play_level(ruleset, level, args.matches, args.seed) for level in levels]
    movegen_us, movegen_n = _movegen_us(ruleset, args.seed)
    peer_run = None
    if peer.peer_available():
        n = args.peer_matches if args.peer_matches is not None else args.matches
        with Progress(n, "  peer") as bar:
            peer_run = peer.play_peer_matches(n, args.seed, on_progress=lambda _d: bar.advance())
    else:
        print("peer engine not installed: pip install -e '.[bench]'", file=sys.stderr)
    result: dict[str, Any] = {
        "python": platform.python_version(),
        "machine": platform.machine(),
        "pinned_to_one_core": pinned,
        "rules": args.rules,
        "levels": [
            {
                "level": f.level,
                "matches": f.matches,
                "matches_per_s": round(f.matches_per_s, 1),
                "events_per_s": round(f.events_per_s),
                "events_per_match": round(f.events / f.matches, 1),
                "rolls_per_match": round(f.rolls / f.matches, 1),
                "vs_peer": round(f.matches_per_s / peer_run.matches_per_s, 2) if peer_run else None,
            }
            for f in figures
        ],
        "legal_move_generation_us": round(movegen_us, 2),
        "legal_move_generation_samples": movegen_n,
        "peer": None
        if peer_run is None
        else {
            "name": f"{peer.PEER_NAME} {peer.peer_version()}",
            "policy": "first legal move",
            "matches": peer_run.matches,
            "matches_per_s": round(peer_run.matches_per_s, 1),
            "rolls_per_match": round(peer_run.turns / max(peer_run.matches, 1), 1),
        },
    }
    if args.json:
        print(msgspec.json.encode(result).decode())
        return 0
    print(
        f"ludo bench domain — Python {result['python']} ({result['machine']}), "
        f"{'pinned to one core' if pinned else 'not pinned'}, rules {args.rules}"
    )
    print(f"{'engine':<28}{'matches/s':>11}{'events/s':>11}{'rolls/match':>13}{'vs peer':>9}")
    for row in result["levels"]:
        vs = f"{row['vs_peer']:.2f}x" if row["vs_peer"] is not None else "-"
        print(
            f"{'ludo (' + row['level'] + ' CPUs)':<28}{row['matches_per_s']:>11,.1f}"
            f"{row['events_per_s']:>11,}{row['rolls_per_match']:>13}{vs:>9}"
        )
    if result["peer"]:
        p = result["peer"]
        print(
            f"{p['name'] + ' (first move)':<28}{p['matches_per_s']:>11,.1f}{'-':>11}"
            f"{p['rolls_per_match']:>13}{'1.00x':>9}"
        )
    print(
        f"legal-move generation: {movegen_us:.2f} µs per call "
        f"(mean over {movegen_n:,} positions from real matches)"
    )
    return 0
