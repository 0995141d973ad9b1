"""Train the value network of the `hard` CPU (domain/cpu/learned.py) by self-play.

    python -m tools.train_hard_value --out runs/v1 --iterations 14 --matches 4000 --lr 1e-3
    python -m tools.train_hard_value --out runs/v1 --resume runs/v1/params_13.npz \\
        --first 14 --iterations 5 --matches 5000 --lr 7e-4
    python -m tools.train_hard_value --out runs/v1 --resume runs/v1/params_18.npz \\
        --first 19 --iterations 5 --matches 5000 --lr 5e-4
    python -m tools.train_hard_value --write-weights runs/v1/params_23.npz

(the three runs that made the shipped weights, ~95 minutes on 2 cores with the compiled
engine; docs/cpu.md, "The learned value"). Needs numpy (the `dev` extra); the service does
not: `learned.py` evaluates the network in plain Python.

Each iteration plays `--matches` matches of the learner against three `normal` under the
`standard` rules (seats rotated, fresh seeds per iteration), recording the position after
each of the learner's turns and the value the network gave it, then fits the network to
TD(λ) targets: the λ-return over the following positions' values, ending in the result
(1 for a win). In iteration 0 the untrained network plays `hard`'s own moves (its output
is a logistic of the hand-made evaluation alone) and is fitted to the plain results
(λ = 1). The learner chooses as `hard` does (the expectimax over bonus rolls
of domain/cpu/hard.py) with the network at the leaves.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import re
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from domain.cpu import CPU_LEVELS
from domain.cpu.evaluation import DEFAULT, evaluate
from domain.cpu.features import bonus_rolls, opponents
from domain.cpu.hard import _after
from domain.cpu.learned import HIDDEN, INPUTS, SHAPES, WEIGHTS, encode
from domain.cpu.weights import pack
from domain.moves import legal_moves
from domain.rules import parse_ruleset
from domain.selfplay import play_match
from ludo_cli.simulate import match_seeds, seat_layout

HAND_SCALE = 0.01  # the hand-made evaluation enters in hundreds of squares

Params = dict[str, Any]

# ----------------------------------------------------------------------------- the learner

_PARAMS: Params = {}
_RECORD: list[tuple[list[int], float, float]] = []  # (inputs on, hand, value) per turn end


def _values(on: np.ndarray, hand: np.ndarray) -> Any:
    h = np.tanh(_PARAMS["W1"][on].sum(1) + _PARAMS["b1"])
    y = h @ _PARAMS["w2"] + _PARAMS["b2"] + _PARAMS["a"] * hand
    return 1.0 / (1.0 + np.exp(-y))


def _choose(state: Any, moves: Any, seed: str) -> Any:
    """`hard`'s choice with the network (numpy, one batch per decision) at the leaves."""
    board, me = state.board, state.turn
    die = state.die if state.die is not None else 0
    foes = opponents(board.players, me, state.finished)
    leaves: list[Any] = []
    plan: list[Any] = []  # per move: None (it wins), leaf index, or per-die leaf indices
    for move in moves:
        after = _after(state.pieces, me, move)
        if move.to == board.goal and all(p == board.goal for p in after[me]):
            plan.append(None)
            continue
        if state.rolls_left + bonus_rolls(board, die, bool(move.captures), move.to) > 0:
            forfeit = board.ruleset.three_sixes and die == 6 and state.sixes == 2
            here = -1
            per_die = []
            for d in range(1, 7):
                ids = []
                if not (d == 6 and forfeit):
                    for follow in legal_moves(board, after, me, d):
                        leaves.append(_after(after, me, follow))
                        ids.append(len(leaves) - 1)
                if not ids:
                    if here < 0:
                        leaves.append(after)
                        here = len(leaves) - 1
                    ids.append(here)
                per_die.append(ids)
            plan.append(per_die)
        else:
            leaves.append(after)
            plan.append(len(leaves) - 1)
    if leaves:
        on = np.array([encode(p, me) for p in leaves])
        hand = np.array([evaluate(board, p, me, foes, DEFAULT) for p in leaves]) * HAND_SCALE
        v = _values(on, hand)
    best, best_i = -1.0, 0
    for i, entry in enumerate(plan):
        if entry is None:
            return moves[i]
        value = (
            v[entry] if isinstance(entry, int) else sum(max(v[j] for j in ids) for ids in entry) / 6
        )
        if value > best:
            best, best_i = value, i
    if isinstance(plan[best_i], int):
        j = plan[best_i]
        _RECORD.append((list(on[j]), float(hand[j]), float(v[j])))
    return moves[best_i]


def _play(task: tuple[Params, int, int, int]) -> tuple[list[Any], list[float]]:
    """Matches `start`.. of seed set `seeds`: the learner's records and results."""
    params, seeds, start, count = task
    _PARAMS.update(params)
    CPU_LEVELS["hard"] = _choose
    ruleset = parse_ruleset({"preset": "standard"})
    records: list[Any] = []
    results: list[float] = []
    for k in range(start, start + count):
        server, cpu = match_seeds(seeds, k)
        levels = seat_layout(("hard", "normal", "normal", "normal"), k, True)
        _RECORD.clear()
        placements = play_match(
            ruleset, levels, server_seed=server, cpu_seed=cpu, keep_events=False
        ).state.placements
        assert placements is not None
        firsts = placements.count(1)
        won = 1.0 / firsts if placements[levels.index("hard")] == 1 else 0.0
        records.append(list(_RECORD))
        results.append(won)
    return records, results


# ---------------------------------------------------------------------------- the training


def _init(rng: np.random.Generator) -> Params:
    # w2 = 0: the output is a logistic of the hand-made evaluation alone (a > 0), so the
    # untrained learner plays `hard`'s moves.
    return {
        "W1": rng.standard_normal((INPUTS, HIDDEN)) * 0.05,
        "b1": np.zeros(HIDDEN),
        "w2": np.zeros(HIDDEN),
        "b2": np.zeros(()),
        "a": np.array(1.0),
    }


def _targets(records: list[Any], results: list[float], lam: float) -> tuple[Any, Any, Any]:
    """Inputs, hand values and TD(λ) targets of every recorded position, in play order:
    G_t = (1 - λ) V(s_t+1) + λ G_t+1, and the result after a match's last position."""
    on: list[list[int]] = []
    hand: list[float] = []
    target: list[float] = []
    for match, won in zip(records, results, strict=True):
        returns = [0.0] * len(match)
        g = won
        for i in range(len(match) - 1, -1, -1):
            if i < len(match) - 1:
                g = (1 - lam) * match[i + 1][2] + lam * g
            returns[i] = g
        on.extend(m[0] for m in match)
        hand.extend(m[1] for m in match)
        target.extend(returns)
    return np.array(on, dtype=np.int64), np.array(hand), np.array(target)


def _fit(p: Params, on: Any, hand: Any, g: Any, rng: Any, epochs: int, lr: float) -> Params:
    """Adam on the cross-entropy between the network's value and the targets."""
    moment = {k: np.zeros_like(v) for k, v in p.items()}
    second = {k: np.zeros_like(v) for k, v in p.items()}
    step, n, batch = 0, len(g), 512
    for _ in range(epochs):
        order = rng.permutation(n)
        for b0 in range(0, n, batch):
            rows = order[b0 : b0 + batch]
            size = len(rows)
            x = np.zeros((size, INPUTS))
            x[np.repeat(np.arange(size), 16), on[rows].ravel()] = 1.0
            h = np.tanh(x @ p["W1"] + p["b1"])
            v = 1 / (1 + np.exp(-(h @ p["w2"] + p["b2"] + p["a"] * hand[rows])))
            dy = (v - g[rows]) / size
            dh = np.outer(dy, p["w2"]) * (1 - h * h)
            grads = {
                "W1": x.T @ dh + 1e-6 * p["W1"],
                "b1": dh.sum(0),
                "w2": h.T @ dy,
                "b2": np.array(dy.sum()),
                "a": np.array((dy * hand[rows]).sum()),
            }
            step += 1
            for k in p:
                moment[k] = 0.9 * moment[k] + 0.1 * grads[k]
                second[k] = 0.999 * second[k] + 0.001 * grads[k] ** 2
                mh, sh = moment[k] / (1 - 0.9**step), second[k] / (1 - 0.999**step)
                p[k] = p[k] - lr * mh / (np.sqrt(sh) + 1e-8)
    return p


def _write_weights(source: Path) -> None:
    """The shipped weights (domain/cpu/hard_weights.bin and .json) from a parameters file."""
    p = dict(np.load(source))
    arrays = {
        "W1": p["W1"],
        "B1": p["b1"],
        "W2": p["w2"],
        "B2": p["b2"],
        "HAND": np.asarray(float(p["a"]) * HAND_SCALE),
    }
    iteration = re.fullmatch(r"params_(\d+)\.npz", source.name)
    data, header = pack(
        {
            name: (SHAPES[name], np.asarray(a, dtype=np.float64).ravel().tolist())
            for name, a in arrays.items()
        },
        {
            "about": "the weights of domain/cpu/learned.py's network, written by "
            'tools/train_hard_value.py; do not edit (docs/cpu.md, "The learned value")',
            "source": source.name,
            "iteration": int(iteration.group(1)) if iteration else None,
        },
    )
    folder = Path(__file__).resolve().parent.parent / "domain" / "cpu"
    (folder / f"{WEIGHTS}.bin").write_bytes(data)
    (folder / f"{WEIGHTS}.json").write_text(header, "utf-8")
    print(f"wrote {WEIGHTS}.bin and {WEIGHTS}.json in {folder}", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("runs/hard-value"))
    parser.add_argument("--iterations", type=int, default=14)
    parser.add_argument("--matches", type=int, default=4000, help="matches per iteration")
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--lam", type=float, default=0.8, help="TD(λ)")
    parser.add_argument("--resume", type=Path, help="start from these parameters")
    parser.add_argument("--first", type=int, default=0, help="number of the first iteration")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--write-weights", type=Path, metavar="PARAMS", help="and stop")
    args = parser.parse_args(argv)
    if args.write_weights:
        _write_weights(args.write_weights)
        return 0
    args.out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    params = dict(np.load(args.resume)) if args.resume else _init(rng)
    context = multiprocessing.get_context("spawn")
    with context.Pool(args.jobs) as pool:
        for it in range(args.first, args.first + args.iterations):
            start = time.monotonic()
            chunks = [
                (params, 5000 + it, s, min(100, args.matches - s))
                for s in range(0, args.matches, 100)
            ]
            done = pool.map(_play, chunks)
            records = [m for r, _ in done for m in r]
            results = [w for _, ws in done for w in ws]
            rate = sum(results) / len(results)
            if it == 0:
                # Untrained, the learner plays `hard`'s moves; fit its first value to the
                # plain results (λ = 1), three short passes at a higher rate.
                on, hand, target = _targets(records, results, 1.0)
                for _ in range(3):
                    params = _fit(params, on, hand, target, rng, 1, 3e-3)
            else:
                on, hand, target = _targets(records, results, args.lam)
                params = _fit(params, on, hand, target, rng, 2, args.lr)
            np.savez(args.out / f"params_{it}.npz", **params)
            print(
                f"iteration {it}: won {100 * rate:.2f}% of {len(results)}, "
                f"{len(target)} positions, {time.monotonic() - start:.0f} s",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
