"""What the match analyses add up to (docs/analysis.md, API): a player's averages and dice,
the site's dice per day, the matches with the largest luck gaps.

Read from the two tables the analysis consumer writes (`analysis_seats`, `match_analyses`;
services/ranking/tables.py), never from the analyses' bodies:

- public `GET /api/ratings/players/{player_id}/analysis` (`getPlayerAnalysis`): over the
  player's last `WINDOW` analysed matches, the mean luck per match, the error rate
  (Σ own_error / Σ choices) and the share of best choices; over all their rolls, the count
  of each face, sixes per 100 rolls and each face's share with its 95% Wilson interval,
  against 1/6;
- operator `GET /api/ranking/dice?days=` (`getSiteDice`): every seat's rolls (CPUs too)
  per face per UTC day, with Pearson's chi-square against a fair die (5 degrees of
  freedom) and its p-value, per day and over the window;
- operator `GET /api/ranking/luck-gaps?days=&limit=` (`getLuckGaps`): the analysed matches
  with the largest difference of luck between two seats, each with its seats and the path
  of its replay on the match site.

The statistics (`wilson`, `chi_square`, `chi_square_p`) are pure Python: the p-value is the
regularized upper incomplete gamma function Q(k/2, x/2). `AnalysisQueries` holds the reads;
the routes are in services/ranking/analysis/routes.py, the shapes in schemas.py beside it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import UTC, date, datetime, timedelta
from typing import Any, Final

import msgspec
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from services.ranking.analysis.schemas import (
    DayDice,
    Dice,
    FaceShare,
    GapSeat,
    LuckGap,
    PlayerAnalysis,
    PlayerDice,
    SiteDice,
)

__all__ = [
    "FAIR",
    "WINDOW",
    "AnalysisQueries",
    "chi_square",
    "chi_square_p",
    "regularized_gamma_q",
    "wilson",
]

WINDOW: Final = 50  # a player's averages: their last 50 analysed matches
FAIR: Final = 1 / 6  # each face's share under a fair die
Z95: Final = 1.959963984540054  # the normal quantile of 0.975: a two-sided 95% interval
FACES: Final = 6


# ------------------------------------------------------------------------- statistics


def wilson(count: int, n: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of a share `count / n` (n = 0: the whole of [0, 1])."""
    if n <= 0:
        return 0.0, 1.0
    p = count / n
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


def chi_square(faces: Sequence[int]) -> float | None:
    """Pearson's chi-square of the face counts against equal chances (None: no roll)."""
    n = sum(faces)
    if n == 0:
        return None
    expected = n / len(faces)
    return sum((f - expected) ** 2 for f in faces) / expected


def regularized_gamma_q(a: float, x: float) -> float:
    """Q(a, x) = Γ(a, x) / Γ(a), for a > 0 and x ≥ 0: the series of P below a + 1, the
    continued fraction of Q above (Lentz's method), as in Numerical Recipes §6.2."""
    if x <= 0:
        return 1.0
    log_front = -x + a * math.log(x) - math.lgamma(a)
    if x < a + 1:
        term = total = 1 / a
        ap = a
        for _ in range(10_000):
            ap += 1
            term *= x / ap
            total += term
            if abs(term) < abs(total) * 1e-16:
                break
        return max(0.0, 1 - total * math.exp(log_front))
    tiny = 1e-300
    b = x + 1 - a
    c = 1 / tiny
    d = 1 / b
    h = d
    for i in range(1, 10_000):
        an = -i * (i - a)
        b += 2
        d = an * d + b
        d = tiny if abs(d) < tiny else d
        c = b + an / c
        c = tiny if abs(c) < tiny else c
        d = 1 / d
        delta = d * c
        h *= delta
        if abs(delta - 1) < 1e-16:
            break
    return min(1.0, math.exp(log_front) * h)


def chi_square_p(statistic: float, dof: int = FACES - 1) -> float:
    """The chance of a chi-square at least `statistic` with `dof` degrees of freedom."""
    return regularized_gamma_q(dof / 2, statistic / 2)


def _dice(faces: Sequence[int]) -> Dice:
    statistic = chi_square(faces)
    return Dice(
        rolls=sum(faces),
        faces=list(faces),
        chi_square=statistic,
        p_value=None if statistic is None else chi_square_p(statistic),
    )


def _player_dice(faces: Sequence[int], matches: int) -> PlayerDice:
    base = _dice(faces)
    n = base.rolls
    shares = []
    for i, count in enumerate(faces):
        low, high = wilson(count, n)
        shares.append(
            FaceShare(face=i + 1, count=count, share=count / n if n else 0.0, low=low, high=high)
        )
    return PlayerDice(
        **msgspec.structs.asdict(base),
        matches=matches,
        sixes_per_100=100 * faces[5] / n if n else 0.0,
        expected=FAIR,
        shares=shares,
    )


# ---------------------------------------------------------------------------- queries

_SUMS: Final = ", ".join(f"coalesce(sum(faces[{i}]), 0) AS f{i}" for i in range(1, FACES + 1))


def _faces(row: Any) -> list[int]:
    return [int(getattr(row, f"f{i}")) for i in range(1, FACES + 1)]


class AnalysisQueries:
    """The reads of this module over one of the ranking service's engines (the standby's
    when it has one: the `reads` dependency)."""

    def __init__(self, engine: AsyncEngine) -> None:
        self.engine = engine

    async def _rows(self, sql: str, params: dict[str, Any]) -> list[Any]:
        async with self.engine.connect() as conn:
            return list((await conn.execute(sa.text(sql), params)).all())

    async def stored(self, match_id: str) -> tuple[str, bytes] | None:
        """A match's stored analysis: its evaluator and its bytes (None: not written)."""
        rows = await self._rows(
            "SELECT evaluator, body FROM match_analyses WHERE match_id = :m", {"m": match_id}
        )
        return (rows[0].evaluator, bytes(rows[0].body)) if rows else None

    async def known(self, player_id: str) -> bool:
        """Whether the ranking service has seen the player: an analysed seat, an ended
        match in the reputation fold or a rating (in the order of their indexes' use: the
        first two by `player_id`, `ratings` by model first, the rare last resort)."""
        rows = await self._rows(
            "SELECT EXISTS (SELECT 1 FROM analysis_seats WHERE player_id = :p) "
            "OR EXISTS (SELECT 1 FROM reputation_matches WHERE player_id = :p) "
            "OR EXISTS (SELECT 1 FROM ratings WHERE player_id = :p) AS known",
            {"p": player_id},
        )
        return bool(rows[0].known)

    async def player(self, player_id: str) -> PlayerAnalysis:
        """The player's averages over their last `WINDOW` analysed matches and their
        dice over all of them (zeros without any)."""
        async with self.engine.connect() as conn:
            recent = (
                await conn.execute(
                    sa.text(
                        "SELECT count(*) AS matches, coalesce(avg(luck), 0) AS luck, "
                        "coalesce(sum(own_error), 0) AS own_error, "
                        "coalesce(sum(choices), 0) AS choices, "
                        "coalesce(sum(best_choices), 0) AS best FROM ("
                        "SELECT luck, own_error, choices, best_choices FROM analysis_seats "
                        "WHERE player_id = :p ORDER BY ended_at DESC, match_id DESC "
                        "LIMIT :window) AS recent"
                    ),
                    {"p": player_id, "window": WINDOW},
                )
            ).one()
            dice = (
                await conn.execute(
                    sa.text(
                        f"SELECT count(*) AS matches, {_SUMS} FROM analysis_seats "
                        "WHERE player_id = :p"
                    ),
                    {"p": player_id},
                )
            ).one()
        choices = int(recent.choices)
        return PlayerAnalysis(
            player_id=player_id,
            window=WINDOW,
            matches=int(recent.matches),
            luck=float(recent.luck),
            choices=choices,
            error_rate=float(recent.own_error) / choices if choices else 0.0,
            best_share=int(recent.best) / choices if choices else 0.0,
            dice=_player_dice(_faces(dice), int(dice.matches)),
        )

    async def site_dice(self, days: int) -> SiteDice:
        """Every seat's rolls per UTC day over the last `days` days, today included."""
        async with self.engine.connect() as conn:
            today: date = (
                await conn.execute(sa.text("SELECT (now() AT TIME ZONE 'UTC')::date"))
            ).scalar_one()
            since = today - timedelta(days=days - 1)
            rows = (
                await conn.execute(
                    sa.text(
                        f"SELECT (ended_at AT TIME ZONE 'UTC')::date AS day, {_SUMS} "
                        "FROM analysis_seats WHERE ended_at >= :start "
                        "GROUP BY day ORDER BY day"
                    ),
                    {"start": datetime(since.year, since.month, since.day, tzinfo=UTC)},
                )
            ).all()
        per_day = []
        totals = [0] * FACES
        for row in rows:
            faces = _faces(row)
            totals = [t + f for t, f in zip(totals, faces, strict=True)]
            per_day.append(DayDice(day=row.day, **msgspec.structs.asdict(_dice(faces))))
        per_day = [d for d in per_day if d.rolls]
        return SiteDice(
            days=days,
            since=since,
            until=today,
            expected=FAIR,
            total=_dice(totals),
            per_day=per_day,
        )

    async def luck_gaps(self, days: int, limit: int) -> list[LuckGap]:
        """The analysed matches that ended in the last `days` days with the largest luck
        gaps (ties: the newest first), each with its seats in seat order."""
        async with self.engine.connect() as conn:
            matches = (
                await conn.execute(
                    sa.text(
                        "SELECT match_id, ended_at, players, luck_gap, evaluator "
                        "FROM match_analyses "
                        "WHERE ended_at >= now() - make_interval(days => :days) "
                        "ORDER BY luck_gap DESC, ended_at DESC, match_id LIMIT :limit"
                    ),
                    {"days": days, "limit": limit},
                )
            ).all()
            ids = [m.match_id for m in matches]
            seats = (
                await conn.execute(
                    sa.text(
                        "SELECT match_id, seat, player_id, name, luck, place "
                        "FROM analysis_seats WHERE match_id = ANY(:ids) ORDER BY match_id, seat"
                    ),
                    {"ids": ids},
                )
            ).all()
        by_match: dict[str, list[GapSeat]] = {i: [] for i in ids}
        for s in seats:
            by_match[s.match_id].append(
                GapSeat(seat=s.seat, player_id=s.player_id, name=s.name, luck=s.luck, place=s.place)
            )
        return [
            LuckGap(
                match_id=m.match_id,
                ended_at=m.ended_at,
                players=m.players,
                luck_gap=m.luck_gap,
                evaluator=m.evaluator,
                replay=f"/replay/{m.match_id}",
                seats=by_match[m.match_id],
            )
            for m in matches
        ]
