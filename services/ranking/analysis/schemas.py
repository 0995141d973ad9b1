"""What the analysis routes answer with (services/ranking/analysis/routes.py): a player's
averages and dice, the site's dice per day, the matches with the largest luck gaps. The
stored analyses themselves go out as their bytes (docs/analysis.md)."""

from __future__ import annotations

from datetime import date, datetime

import msgspec

__all__ = [
    "DayDice",
    "Dice",
    "FaceShare",
    "GapSeat",
    "LuckGap",
    "PlayerAnalysis",
    "PlayerDice",
    "SiteDice",
]


class Dice(msgspec.Struct, kw_only=True):
    """Rolls of each face (`faces[i]`: rolls of i + 1); `chi_square` against a fair die and
    its `p_value` (5 degrees of freedom), both null without a roll."""

    rolls: int
    faces: list[int]
    chi_square: float | None
    p_value: float | None


class DayDice(Dice, kw_only=True):
    day: date


class FaceShare(msgspec.Struct, kw_only=True):
    """A face's share of the rolls with its 95% Wilson interval (`low`, `high`); no roll:
    share 0 and the interval [0, 1]."""

    face: int
    count: int
    share: float
    low: float
    high: float


class PlayerDice(Dice, kw_only=True):
    """Over every analysed match of the player (`matches`)."""

    matches: int
    sixes_per_100: float
    expected: float
    shares: list[FaceShare]


class PlayerAnalysis(msgspec.Struct, kw_only=True):
    """`matches`: analysed matches in the window (the last `window`, newest first);
    `luck`: the mean of the seat's luck per match (a chance to place first: 0.02 is two
    points); `error_rate`: Σ own_error / Σ choices; `best_share`: Σ best_choices / Σ
    choices (both 0 without a choice); `dice`: over all their analysed rolls."""

    player_id: str
    window: int
    matches: int
    luck: float
    choices: int
    error_rate: float
    best_share: float
    dice: PlayerDice


class SiteDice(msgspec.Struct, kw_only=True):
    """Every seat's rolls (CPUs too) per UTC day from `since` to `until` (today), the
    days with rolls only, oldest first; `total` over the whole window."""

    days: int
    since: date
    until: date
    expected: float
    total: Dice
    per_day: list[DayDice]


class GapSeat(msgspec.Struct, kw_only=True):
    seat: int
    player_id: str | None
    name: str
    luck: float
    place: int | None


class LuckGap(msgspec.Struct, kw_only=True):
    """An analysed match: `luck_gap` the largest difference of luck between two of its
    seats, `replay` the path of its replay on the match site."""

    match_id: str
    ended_at: datetime
    players: int
    luck_gap: float
    evaluator: str
    replay: str
    seats: list[GapSeat]
