"""`ludo bench domain`: how fast the rules engine plays whole matches, on one core.

Plays full 4-player matches between CPUs through the same `decide`/`apply` path and the same
fair dice (HMAC per roll, docs/design.md#fair-dice) as live play, then times legal-move generation
alone over positions sampled from those matches, and in the same run plays the public
engine `ludo-king-engine` with its first-legal-move policy as the peer to compare with.

On a shared machine the load changes from second to second, so the work is split into
`--rounds` interleaved rounds (each level's share, then the peer's share, round after
round): every engine sees about the same load, and the ratio to the peer holds better
than either figure alone. Besides wall time it reports process CPU time, which leaves out
the time the process waited for the core. Nothing here asserts a time; it prints figures
for docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import hashlib
import platform
import time
from typing import Any

import msgspec

from benchmarks import peer
from benchmarks.harness import Bench, Figures, Say
from domain.board import Board
from domain.decider import MatchState, apply
from domain.engine_form import engine_form
from domain.events import CpuLevel, DieRolled
from domain.moves import legal_moves
from domain.rules import parse_ruleset
from domain.selfplay import play_match
from ludo_cli.arguments import cpu_levels, positive_int, rules_json
from ludo_cli.progress import Progress

__all__ = ["BENCH", "measure", "table"]


class LevelFigures(msgspec.Struct):
    level: CpuLevel
    matches: int = 0
    seconds: float = 0.0
    cpu_seconds: float = 0.0
    events: int = 0
    rolls: int = 0

    @property
    def matches_per_s(self) -> float:
        return self.matches / self.seconds

    @property
    def cpu_matches_per_s(self) -> float:
        return self.matches / self.cpu_seconds if self.cpu_seconds > 0 else 0.0

    @property
    def events_per_s(self) -> float:
        return self.events / self.seconds


def _options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--matches", type=positive_int, default=300, help="matches per CPU level")
    parser.add_argument(
        "--peer-matches", type=positive_int, default=None, help="default: --matches"
    )
    parser.add_argument(
        "--levels", type=cpu_levels, default=("easy", "normal"), help="CPU levels to measure"
    )
    parser.add_argument(
        "--rules", type=rules_json, default='{"preset": "standard"}', help="ruleset JSON"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--rounds",
        type=positive_int,
        default=10,
        help="interleave levels and peer in this many rounds",
    )


def _server_seed(seed: int, index: int) -> bytes:
    return hashlib.sha256(f"bench:{seed}:{index}".encode()).digest()


def _play_level(
    ruleset: Any, figures: LevelFigures, indices: range, seed: int, bar: Progress
) -> None:
    """Play matches `indices` with four CPUs of `figures.level`, adding to `figures`."""
    levels: list[CpuLevel] = [figures.level] * 4
    for i in indices:
        start = time.perf_counter()
        cpu = time.process_time()
        record = play_match(
            ruleset,
            levels,
            server_seed=_server_seed(seed, i),
            cpu_seed=str(i),
            keep_events=False,
        )
        figures.cpu_seconds += time.process_time() - cpu
        figures.seconds += time.perf_counter() - start
        figures.matches += 1
        figures.events += record.event_count
        figures.rolls += record.state.rolls_made
        bar.advance()


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


def measure(args: argparse.Namespace, say: Say) -> Figures:
    ruleset = parse_ruleset(msgspec.json.decode(args.rules))
    levels: list[CpuLevel] = list(args.levels)
    figures = [LevelFigures(level) for level in levels]
    has_peer = peer.peer_available()
    if not has_peer:
        say("peer engine not installed: pip install -e '.[bench]'")
    n_peer = args.peer_matches if args.peer_matches is not None else args.matches
    rounds = max(1, min(args.rounds, args.matches))
    peer_matches = peer_turns = 0
    peer_seconds = peer_cpu = 0.0
    total = args.matches * len(levels) + (n_peer if has_peer else 0)
    with Progress(total, "matches") as bar:
        for r in range(rounds):
            part = range(args.matches * r // rounds, args.matches * (r + 1) // rounds)
            for f in figures:
                _play_level(ruleset, f, part, args.seed, bar)
            k = n_peer * (r + 1) // rounds - n_peer * r // rounds
            if has_peer and k:
                cpu = time.process_time()
                # round r's peer games are seeded seed + r (one round: the old single run)
                run_r = peer.play_peer_matches(k, args.seed + r, lambda _d: bar.advance())
                peer_cpu += time.process_time() - cpu
                peer_matches += run_r.matches
                peer_seconds += run_r.seconds
                peer_turns += run_r.turns
    peer_run = (
        peer.PeerRun(matches=peer_matches, seconds=peer_seconds, turns=peer_turns)
        if has_peer and peer_matches
        else None
    )
    peer_cpu_rate = peer_matches / peer_cpu if peer_cpu > 0 else 0.0
    movegen_us, movegen_n = _movegen_us(ruleset, args.seed)
    result: dict[str, Any] = {
        "python": platform.python_version(),
        "engine": engine_form(),
        "machine": platform.machine(),
        "rules": args.rules,
        "rounds": rounds,
        "levels": [
            {
                "level": f.level,
                "matches": f.matches,
                "matches_per_s": round(f.matches_per_s, 1),
                "cpu_matches_per_s": round(f.cpu_matches_per_s, 1),
                "events_per_s": round(f.events_per_s),
                "events_per_match": round(f.events / f.matches, 1),
                "rolls_per_match": round(f.rolls / f.matches, 1),
                "vs_peer": round(f.matches_per_s / peer_run.matches_per_s, 2) if peer_run else None,
                "cpu_vs_peer": round(f.cpu_matches_per_s / peer_cpu_rate, 2)
                if peer_run and peer_cpu_rate
                else None,
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
            "cpu_matches_per_s": round(peer_cpu_rate, 1),
            "rolls_per_match": round(peer_run.turns / max(peer_run.matches, 1), 1),
        },
    }
    return result


def table(result: Figures) -> None:
    pinned = result["pinned_to_one_core"]
    print(
        f"ludo bench domain — Python {result['python']} ({result['machine']}), "
        f"{result['engine']} engine, "
        f"{'pinned to one core' if pinned else 'not pinned'}, rules {result['rules']}, "
        f"{result['rounds']} interleaved rounds"
    )
    print(
        f"{'engine':<36}{'matches/s':>11}{'vs peer':>9}{'CPU m/s':>10}{'vs peer':>9}"
        f"{'events/s':>11}{'rolls/match':>13}"
    )

    def ratio(value: float | None) -> str:
        return f"{value:.2f}x" if value is not None else "-"

    for row in result["levels"]:
        print(
            f"{'ludo (' + row['level'] + ' CPUs)':<36}{row['matches_per_s']:>11,.1f}"
            f"{ratio(row['vs_peer']):>9}{row['cpu_matches_per_s']:>10,.1f}"
            f"{ratio(row['cpu_vs_peer']):>9}{row['events_per_s']:>11,}{row['rolls_per_match']:>13}"
        )
    if result["peer"]:
        p = result["peer"]
        print(
            f"{p['name'] + ' (first move)':<36}{p['matches_per_s']:>11,.1f}{'1.00x':>9}"
            f"{p['cpu_matches_per_s']:>10,.1f}{'1.00x':>9}{'-':>11}{p['rolls_per_match']:>13}"
        )
    print(
        f"legal-move generation: {result['legal_move_generation_us']:.2f} µs per call "
        f"(mean over {result['legal_move_generation_samples']:,} positions from real matches)"
    )


BENCH = Bench(
    name="domain",
    help="full CPU matches/s, events/s, legal-move generation µs, vs a peer engine",
    options=_options,
    measure=measure,
    table=table,
    pin=True,
)
