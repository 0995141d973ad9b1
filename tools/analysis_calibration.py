"""How far to trust the match analysis's evaluator (docs/analysis.md, "How far to trust it").

    python -m tools.analysis_calibration collect --split train --variant std4 \\
        --matches 1500 --jobs 2 --out runs/cal/train-std4.npz
    python -m tools.analysis_calibration collect --split test --variant std4 \\
        --matches 1500 --jobs 2 --out runs/cal/test-std4.npz
    python -m tools.analysis_calibration report --train runs/cal/train-*.npz \\
        --test runs/cal/test-*.npz

Needs numpy (the `dev` extra). `collect` self-plays matches of one variant (`std4`,
`std2`, `std3`, `bga4`, `bga3`, `bga2`: the preset and the number of players) between
mixed CPU levels (`hard`, `normal` and `easy` rotated over the seats, the first seat
rotated too), on seeds of its own (`analysis-calibration:SPLIT:VARIANT:i`: the training
split and the held-out split share none, and neither shares any with the network's
training, `ludo-simulate:…`). At every `TurnEnded` up to where the analysis stops (the
first place decided) it records, for every seat still playing: the analysis's own value
(`domain.analysis.CHANCES.value`, "raw"), the value the graph shows
(`domain.analysis._chances`, "shown": the raw values shared out to sum to 1), the
hand-made evaluation, the seat's pips to go and pieces in the nest, whether the seat's
turn just ended ("mover": the position the evaluator is defined on, and the one luck and
error are made of), and whether the seat placed first.

`report` fits on the training files, and measures on the held-out files only:

- the fallback's slope per number of seats (`FALLBACK_SLOPE`): a logistic regression of
  "placed first" on `evaluate / 100` with the offset fixed at log(1 / (seats − 1)) (the
  fallback's centring), on the movers' positions, by Newton's method;
- the pip baseline: a conditional logit over the seats of a position, each seat's weight
  exp(−(b·pips / 100 + c·nest)), pips counting a piece in the nest as `goal + 1` squares,
  fitted per variant;
- for the network, a monotone recalibration a + b·logit(raw) (fitted, proposed, not used).

Then, per held-out variant: predicted chance against observed frequency in 10 bins, and the
Brier score of raw, shown, the pip baseline and the even share (1 / seats), with a 95%
interval for the differences from matches resampled (positions of one match are not
independent).
"""

from __future__ import annotations

import argparse
import hashlib
import math
import multiprocessing
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from domain.analysis import CHANCES, FALLBACK_SLOPE, FALLBACK_VERSION, _chances
from domain.cpu.evaluation import evaluate
from domain.cpu.features import opponents
from domain.decider import MatchState, apply
from domain.events import CpuLevel, MatchFinished, PlayerFinished, TurnEnded
from domain.rules import parse_ruleset
from domain.selfplay import play_match

VARIANTS: dict[str, tuple[str, int]] = {
    "std4": ("standard", 4),
    "std3": ("standard", 3),
    "std2": ("standard", 2),
    "bga4": ("bga", 4),
    "bga3": ("bga", 3),
    "bga2": ("bga", 2),
}
LEVELS: tuple[CpuLevel, ...] = ("hard", "normal", "easy")
FIELDS = ("match", "turn", "seat", "mover", "playing", "raw", "shown", "hand", "pips",
          "nest", "first")  # fmt: skip


def lineup(players: int, i: int) -> list[CpuLevel]:
    """The CPU levels by seat of match i: the three levels rotated over the seats (two
    players: each pairing, both ways round)."""
    if players == 2:
        a, b = LEVELS[i % 3], LEVELS[(i + 1) % 3]
        return [b, a] if (i // 3) % 2 else [a, b]
    return [LEVELS[(i + s) % 3] for s in range(players)]


def _play(task: tuple[str, str, int]) -> list[tuple[float, ...]]:
    """One match's records (see the module docstring)."""
    split, variant, i = task
    preset, players = VARIANTS[variant]
    seed = hashlib.sha256(f"analysis-calibration:{split}:{variant}:{i}".encode()).digest()
    match = play_match(
        parse_ruleset({"preset": preset}),
        lineup(players, i),
        server_seed=seed,
        cpu_seed=seed.hex()[:16],
        first_seat=i % players,
    )
    state = MatchState()
    rows: list[list[float]] = []
    first: list[float] = [0.0] * players
    turn = 0
    for event in match.events:
        apply(state, event)
        if isinstance(event, PlayerFinished):
            first = [1.0 if s == event.seat else 0.0 for s in range(players)]
            break
        if isinstance(event, MatchFinished):
            firsts = [s for s, p in enumerate(event.placements) if p == 1]
            first = [1.0 / len(firsts) if s in firsts else 0.0 for s in range(players)]
            break
        if not isinstance(event, TurnEnded):
            continue
        board = state.board
        assert board is not None
        shown = _chances(state)
        for s in range(players):
            if s in state.finished:
                continue
            foes = opponents(board.players, s, state.finished)
            pieces = state.pieces[s]
            rows.append(
                [
                    i,
                    turn,
                    s,
                    float(s == event.seat),
                    len(foes) + 1,
                    CHANCES.value(board, state.pieces, s, foes),
                    shown[s],
                    evaluate(board, state.pieces, s, foes),
                    sum(board.goal - p if p >= 0 else board.goal + 1 for p in pieces),
                    sum(p < 0 for p in pieces),
                ]
            )
        turn += 1
    return [(*row, first[int(row[2])]) for row in rows]


def collect(args: argparse.Namespace) -> int:
    tasks = [(args.split, args.variant, i) for i in range(args.matches)]
    parts: list[np.ndarray] = []
    with multiprocessing.Pool(args.jobs) as pool:
        for n, part in enumerate(pool.imap(_play, tasks, chunksize=4), start=1):
            parts.append(np.array(part, dtype=np.float64).reshape(-1, len(FIELDS)))
            if n % 500 == 0:
                print(f"  {n}/{args.matches} matches", file=sys.stderr, flush=True)
    data = np.concatenate(parts)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(
        args.out,
        data=data,
        variant=args.variant,
        split=args.split,
        slopes=np.array([FALLBACK_SLOPE[k] for k in (2, 3, 4)]),
    )
    print(f"{args.out}: {args.matches} matches, {len(data)} positions")
    return 0


# ------------------------------------------------------------------------------- fitting


def load(paths: Sequence[str]) -> dict[str, dict[str, np.ndarray]]:
    """The records by variant, as columns. Where the fallback's slopes the file was
    collected with differ from the code's, its fallback values (raw, and shown: raw shared
    out) are those of the code's slopes, from the recorded evaluation, after checking that
    the file's own slopes give back its recorded values."""
    out: dict[str, dict[str, np.ndarray]] = {}
    for path in paths:
        with np.load(path) as f:
            variant = str(f["variant"])
            data = f["data"]
            recorded = [float(b) for b in f["slopes"]] if "slopes" in f else None
        cols = {name: data[:, k] for k, name in enumerate(FIELDS)}
        now = [FALLBACK_SLOPE[k] for k in (2, 3, 4)]
        if variant != "std4" and recorded is not None and recorded != now:
            old = dict(zip((2, 3, 4), recorded, strict=True))
            then = _fallback(cols["hand"], cols["playing"], old)
            assert np.allclose(then, cols["raw"], rtol=0, atol=1e-12), path
            cols["raw"] = _fallback(cols["hand"], cols["playing"], FALLBACK_SLOPE)
            g = _groups(cols)
            cols["shown"] = np.round(cols["raw"] / np.bincount(g, weights=cols["raw"])[g], 6)
        out[variant] = cols
    return out


def fit_slope(
    hand: np.ndarray, y: np.ndarray, offset: float, weight: np.ndarray | None = None
) -> float:
    """The b of P(first) = σ(offset + b·hand/100), maximum (weighted) likelihood (Newton)."""
    x = hand / 100.0
    w = np.ones_like(x) if weight is None else weight
    b = 0.0
    for _ in range(50):
        p = 1.0 / (1.0 + np.exp(-(offset + b * x)))
        step = float(np.sum(w * (y - p) * x)) / float(np.sum(w * p * (1 - p) * x * x))
        b += step
        if abs(step) < 1e-10:
            break
    return b


def fit_logistic(x: np.ndarray, y: np.ndarray, weight: np.ndarray | None = None) -> np.ndarray:
    """Weights w of P = σ(x·w) (x with its own constant column), maximum likelihood."""
    r = np.ones(len(y)) if weight is None else weight
    w = np.zeros(x.shape[1])
    for _ in range(50):
        p = 1.0 / (1.0 + np.exp(-(x @ w)))
        h = (x * (r * p * (1 - p))[:, None]).T @ x
        step = np.linalg.solve(h, x.T @ (r * (y - p)))
        w += step
        if np.max(np.abs(step)) < 1e-10:
            break
    return w


def _groups(cols: dict[str, np.ndarray]) -> np.ndarray:
    """A position's index per row (rows of one position share match and turn)."""
    key = cols["match"] * 100_000 + cols["turn"]
    _, index = np.unique(key, return_inverse=True)
    return index


def pip_shares(cols: dict[str, np.ndarray], w: np.ndarray) -> np.ndarray:
    """The pip baseline's chance per row: each seat's share of exp(−u) in its position."""
    g = _groups(cols)
    u = -(w[0] * cols["pips"] / 100.0 + w[1] * cols["nest"])
    e = np.exp(u - u.max())
    total = np.bincount(g, weights=e)
    shares: np.ndarray = e / total[g]
    return shares


def fit_pips(cols: dict[str, np.ndarray]) -> np.ndarray:
    """The pip baseline's (b, c), maximum likelihood of the conditional logit (Newton)."""
    g = _groups(cols)
    x = np.stack([-cols["pips"] / 100.0, -cols["nest"]], axis=1)
    y = cols["first"]
    w = np.zeros(2)
    for _ in range(50):
        p = pip_shares(cols, w)
        mean = np.stack([np.bincount(g, weights=p * x[:, k]) for k in range(2)], axis=1)
        d = x - mean[g]
        grad = d.T @ (y - p)
        h = (d * p[:, None]).T @ d
        step = np.linalg.solve(h, grad)
        w += step
        if np.max(np.abs(step)) < 1e-10:
            break
    return w


def _logit(p: np.ndarray) -> np.ndarray:
    q = np.clip(p, 1e-9, 1 - 1e-9)
    out: np.ndarray = np.log(q / (1 - q))
    return out


# ------------------------------------------------------------------------------ reporting


def bins(p: np.ndarray, y: np.ndarray) -> list[tuple[str, int, float, float]]:
    """Ten bins of width 0.1: (range, positions, mean predicted, observed frequency)."""
    out = []
    k = np.minimum((p * 10).astype(int), 9)
    for b in range(10):
        m = k == b
        n = int(m.sum())
        out.append(
            (f"{b / 10:.1f}–{(b + 1) / 10:.1f}", n,
             float(p[m].mean()) if n else math.nan, float(y[m].mean()) if n else math.nan)
        )  # fmt: skip
    return out


def brier(p: np.ndarray, y: np.ndarray) -> float:
    return float(np.mean((p - y) ** 2))


def diff_interval(
    a: np.ndarray, b: np.ndarray, y: np.ndarray, match: np.ndarray, rounds: int = 400
) -> tuple[float, float, float]:
    """Brier(a) − Brier(b) and its 95% interval, matches resampled with replacement."""
    per = (a - y) ** 2 - (b - y) ** 2
    ids, index = np.unique(match, return_inverse=True)
    sums = np.bincount(index, weights=per)
    counts = np.bincount(index)
    rng = np.random.default_rng(0)
    draws = rng.integers(0, len(ids), size=(rounds, len(ids)))
    stats = sums[draws].sum(1) / counts[draws].sum(1)
    lo, hi = np.percentile(stats, [2.5, 97.5])
    return float(per.mean()), float(lo), float(hi)


def _fallback(hand: np.ndarray, playing: np.ndarray, slopes: dict[int, float]) -> np.ndarray:
    slope = np.array([slopes.get(int(k), slopes[4]) for k in playing])
    y = np.log(1.0 / (playing - 1)) + slope * hand / 100.0
    out: np.ndarray = 1.0 / (1.0 + np.exp(-y))
    return out


def report(args: argparse.Namespace) -> int:
    train, test = load(args.train), load(args.test)
    print("## Fitted on the training split\n")
    slopes: dict[int, float] = {}
    intercepts: dict[int, tuple[float, float]] = {}  # the form with a free intercept
    for k in (2, 3, 4):
        hands, ys, weights = [], [], []
        for variant, cols in train.items():
            m = (cols["mover"] == 1) & (cols["playing"] == k)
            if variant == "std4" or not m.any():
                continue  # std4: the network's, not the fallback's
            hands.append(cols["hand"][m])
            ys.append(cols["first"][m])
            weights.append(np.full(int(m.sum()), 1.0 / int(m.sum())))  # each preset alike
        if not hands:
            continue
        hand, y, weight = np.concatenate(hands), np.concatenate(ys), np.concatenate(weights)
        slopes[k] = fit_slope(hand, y, math.log(1.0 / (k - 1)), weight)
        free = fit_logistic(np.stack([np.ones_like(hand), hand / 100.0], axis=1), y, weight)
        intercepts[k] = (float(free[0]), float(free[1]))
        print(
            f"- {k} seats: slope {slopes[k]:.3f} per 100 squares ({len(y)} mover positions, "
            "each preset weighing the same); "
            f"with a free intercept: {free[0]:+.3f} (the fixed offset: "
            f"{math.log(1.0 / (k - 1)):+.3f}) and slope {free[1]:.3f}"
        )
        for variant, cols in sorted(train.items()):
            m = (cols["mover"] == 1) & (cols["playing"] == k)
            if variant != "std4" and m.any():
                b = fit_slope(cols["hand"][m], cols["first"][m], math.log(1.0 / (k - 1)))
                print(f"  - {variant} alone: {b:.3f}")
    pips = {variant: fit_pips(cols) for variant, cols in train.items()}
    for variant, w in sorted(pips.items()):
        print(f"- pip baseline, {variant}: b = {w[0]:.3f} per 100 pips, c = {w[1]:.3f} per nest")
    recal = None
    if "std4" in train:
        cols = train["std4"]
        m = cols["mover"] == 1
        recal = fit_logistic(
            np.stack([np.ones(m.sum()), _logit(cols["raw"][m])], axis=1), cols["first"][m]
        )
        a, b = recal
        print(f"- network recalibration (movers): logit p' = {a:+.3f} + {b:.3f}·logit p")
    print(f"\n(the code's fallback: {FALLBACK_VERSION}, slopes {FALLBACK_SLOPE})")

    for variant, cols in sorted(test.items(), key=lambda kv: list(VARIANTS).index(kv[0])):
        preset, players = VARIANTS[variant]
        y = cols["first"]
        matches = len(np.unique(cols["match"]))
        print(f"\n## Held out: {preset}, {players} players ({matches} matches, {len(y)} rows)\n")
        base = pip_shares(cols, pips[variant]) if variant in pips else None
        even = 1.0 / cols["playing"]
        mover = cols["mover"] == 1
        preds: dict[str, np.ndarray] = {"raw": cols["raw"], "shown": cols["shown"]}
        if base is not None:
            preds["pips"] = base
        preds["even"] = even
        if variant != "std4":
            old = {2: 2.0, 3: 2.0, 4: 2.0}
            preds["slope 2.0 (logistic-1)"] = _fallback(cols["hand"], cols["playing"], old)
            if players in intercepts:
                a, b = intercepts[players]
                z = a + b * cols["hand"] / 100.0
                preds["free intercept (proposed)"] = 1 / (1 + np.exp(-z))
        elif recal is not None:
            z = recal[0] + recal[1] * _logit(cols["raw"])
            preds["raw recalibrated"] = 1 / (1 + np.exp(-z))
        for label, m in (("every seat", np.ones_like(mover)), ("movers", mover)):
            print(f"Calibration, {label} ({int(m.sum())} positions): predicted / observed (n)\n")
            shown_names = [n for n in ("raw", "shown", "pips") if n in preds]
            print("| bin | " + " | ".join(shown_names) + " |")
            print("|---|" + "---:|" * len(shown_names))
            tables = {n: bins(preds[n][m], y[m]) for n in shown_names}
            for b in range(10):
                cells = []
                for n in shown_names:
                    _, count, pm, obs = tables[n][b]
                    cells.append("–" if not count else f"{pm:.3f} / {obs:.3f} ({count})")
                print(f"| {tables[shown_names[0]][b][0]} | " + " | ".join(cells) + " |")
            print()
            print("| predictor | Brier | vs pips (95%) |")
            print("|---|---:|---:|")
            for name, p in preds.items():
                line = f"| {name} | {brier(p[m], y[m]):.4f} |"
                if base is not None and name != "pips":
                    d, lo, hi = diff_interval(p[m], base[m], y[m], cols["match"][m])
                    line += f" {d:+.4f} [{lo:+.4f}, {hi:+.4f}] |"
                else:
                    line += " |"
                print(line)
            print()
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tools.analysis_calibration", description=(__doc__ or "").split("\n")[0]
    )
    sub = parser.add_subparsers(dest="command", required=True)
    c = sub.add_parser("collect", help="self-play one variant and record its positions")
    c.add_argument("--split", choices=("train", "test"), required=True)
    c.add_argument("--variant", choices=tuple(VARIANTS), required=True)
    c.add_argument("--matches", type=int, default=1000)
    c.add_argument("--jobs", type=int, default=1)
    c.add_argument("--out", required=True)
    r = sub.add_parser("report", help="fit on the training files, measure on the held-out ones")
    r.add_argument("--train", nargs="+", required=True)
    r.add_argument("--test", nargs="+", required=True)
    args = parser.parse_args(argv)
    run: Any = collect if args.command == "collect" else report
    return int(run(args))


if __name__ == "__main__":
    sys.exit(main())
