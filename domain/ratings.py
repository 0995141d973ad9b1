"""Rating models as pure functions: no I/O, no clock, deterministic floats
(docs/design.md#the-ranking-service).

A rated match is a list of `Entry(player_id, place, left)` (CPU seats already removed,
leavers already placed last and flagged; see `services.ranking.ratings.consumer.match_outcome`).
Equal places are a draw between those players. Every model maps the players' current
`Skill`s and the entries to new `Skill`s; the same inputs in the same order always give
bit-identical outputs, which is what makes `ludo ranking recompute` reproduce the live
ratings exactly.

Models (`MODELS`, key -> `Model`):

- `openskill` (default): OpenSkill `BradleyTerryFull` with its default parameters
  (mu 25, sigma 25/3, beta 25/6, tau 25/300). Every pair of players is compared; tied
  places share a rank and score 0.5 in the pair, so for any player count a draw moves mu
  by exactly half of what a win would (win, draw and loss give the same sigma). Sigma
  shrinks with every match, also after a draw: a draw between equals leaves mu unchanged.
  Operator rating (`Model.display`): `1500 + 30 * ordinal`, ordinal = mu - 3 sigma (a
  conservative estimate: it rises as sigma falls, even after a loss). Player rating
  (`Model.player_rating`): `1500 + 30 * (mu - 25)`. Both show 1500 for a new player; 30
  points per mu unit puts 200 points near Elo's 200 at converged sigma.
  Provisional while sigma > 3.
- `elo`: pairwise Elo. Each pair scores 1 / 0.5 / 0; expected scores use the ratings from
  before the match; K = 32 / (n - 1) so a match weighs the same for any player count.
  Start 1500. `sigma` is 0 (unused). Provisional for the first 10 matches.
- `glicko2`: Glicko-2 (Glickman 2012), hand-written below from the paper's steps 1-8;
  each match is one rating period whose results are the pairwise scores against every
  other player (their ratings from before the match). Start 1500 / RD 350 / volatility
  0.06, tau 0.5, convergence 1e-6. `mu`/`sigma` hold rating and RD, `volatility` the
  volatility. Provisional while RD > 110.

Leavers: a player flagged `left` never gains mu from the match (their mu after is at most
their mu before; sigma, RD and volatility are updated as computed). Without this rule a
leaver tied for last with a stronger leaver scores a pairwise draw against them and can
gain (openskill 18 -> 18.28, elo 1300 -> 1303, glicko2 1300 -> 1331 in
tests/services/ranking/test_ratings.py): an abandonment must never pay.

What players see is `Model.player_rating`, a rating on mu alone, because in all three
models the mu update has the sign of the sum over opponents of (actual - expected)
pairwise score, with positive weights (OpenSkill: sigma_i^2 / c_iq; Elo: K / (n - 1);
Glicko-2: 173.7178 * phi'^2 * g(phi_j)). Hence, for every model, to the last bit:

- a win (the sole first place: every pairwise score is 1, above any expectation) never
  lowers the player rating;
- a loss (the sole last place: every pairwise score is 0) never raises it, and neither
  does an abandonment (a player placed last as a leaver by the consumer's rule, alone or
  sharing last place with other leavers: the leaver rule above);
- a draw between equals (every player tied, all with equal skills: every expectation is
  exactly 0.5) leaves it unchanged.

The ordinal (`display`) has none of these: a new player's ordinal rises after a loss,
because sigma falls faster than mu. It stays the operators' conservative leaderboard (the
`rating` columns of `ratings` and `rating_changes`). tests/services/ranking/test_ratings.py pins the
properties with hypothesis, through `rate` and through `match_outcome`.

Every `RatingChange` records the model, its parameters and the library version.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Mapping, Sequence
from importlib.metadata import version
from typing import Any, Final

import msgspec
from openskill.models import BradleyTerryFull

from domain.errors import Invalid

__all__ = [
    "DEFAULT_MODEL",
    "MODELS",
    "OPENSKILL_DIRECT",
    "UPDATES",
    "Entry",
    "Model",
    "Skill",
    "elo_update",
    "glicko2_update",
    "model_named",
    "openskill_update",
    "rate",
    "rate_match",
]


class Entry(msgspec.Struct, frozen=True):
    """A rated player of a match and their place (1 = best; equal places are a draw);
    `left`: they left and never came back (placed last; their mu cannot rise)."""

    player_id: str
    place: int
    left: bool = False


class Skill(msgspec.Struct, frozen=True, kw_only=True):
    """A player's rating state in one model."""

    mu: float
    sigma: float
    volatility: float = 0.0
    matches: int = 0


class Model(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    library: str
    params: dict[str, Any]

    def initial(self) -> Skill:
        return _INITIAL[self.name](self)

    def display(self, skill: Skill) -> float:
        """The operators' rating (1500-based): for openskill the conservative ordinal
        `1500 + 30 * (mu - 3 sigma)`, which rises as sigma falls; else the rating. Stored
        in the `rating` columns; players are shown `player_rating`."""
        if self.name == "openskill":
            scale = float(self.params["display_scale"])
            return float(self.params["display_base"]) + scale * (skill.mu - 3.0 * skill.sigma)
        return skill.mu

    def player_rating(self, skill: Skill) -> float:
        """The rating players see (1500-based), a function of mu alone, increasing.

        openskill: `1500 + 30 * (mu - 25)`; elo and glicko2: the rating (`mu`). With
        `rate`, for every model and to the last bit: a win (sole first place) never lowers
        it, a loss (sole last place) or an abandonment (placed last as a leaver, see
        `Entry.left`) never raises it, and a draw between equals (all players tied, all
        with equal skills) leaves it unchanged. See the module docstring for why."""
        if self.name == "openskill":
            scale = float(self.params["display_scale"])
            base = float(self.params["display_base"])
            return base + scale * (skill.mu - float(self.params["mu"]))
        return skill.mu

    def shown_rating(self, mu: float) -> int:
        """The player rating of a stored mu as the site shows it: rounded to the nearest
        integer (it depends on mu alone). The public reads and the operator's leaderboard
        both show this figure."""
        return round(self.player_rating(Skill(mu=mu, sigma=0.0)))

    def provisional(self, skill: Skill) -> bool:
        if self.name == "elo":
            return skill.matches < int(self.params["provisional_matches"])
        return skill.sigma > float(self.params["provisional_sigma"])


# ------------------------------------------------------------------------------ openskill

_OPENSKILL: Final = BradleyTerryFull()
_TAU_SQUARED: Final = _OPENSKILL.tau * _OPENSKILL.tau


def _openskill_public(skills: Sequence[Skill], places: Sequence[int]) -> list[Skill]:
    """Through `BradleyTerryFull.rate`, the library's public entry point."""
    teams = [[_OPENSKILL.rating(mu=s.mu, sigma=s.sigma)] for s in skills]
    rated = _OPENSKILL.rate(teams, ranks=[float(p) for p in places])
    return [
        Skill(mu=float(team[0].mu), sigma=float(team[0].sigma), matches=s.matches + 1)
        for s, team in zip(skills, rated, strict=True)
    ]


class _Teams(threading.local):
    """Rating objects re-used from match to match, one list of one-player teams per
    player count (per thread). Making one costs a `uuid4()` (its `id`, which the maths
    never reads), and `rate` deep-copies every one it is given: that was two thirds of
    the time of an update."""

    def __init__(self) -> None:
        self.by_count: dict[int, list[list[Any]]] = {}


_TEAMS: Final = _Teams()


def _openskill_direct(skills: Sequence[Skill], places: Sequence[int]) -> list[Skill]:
    """The same arithmetic as `_openskill_public`, without its per-call objects.

    `BradleyTerryFull.rate` (openskill 6.2) checks its arguments, deep-copies the teams,
    adds tau (`sigma = sqrt(sigma * sigma + tau * tau)`), sorts the teams by rank (a
    stable sort), calls the model's `_compute`, and puts the results back in the input
    order (`limit_sigma` is off by default). This does exactly those steps on re-used
    rating objects and calls the library's own `_compute` for the model. It is used only
    while it gives bit-identical results to `rate` (checked when this module loads, and
    by tests/services/ranking/test_ratings.py on random inputs)."""
    n = len(skills)
    teams = _TEAMS.by_count.get(n)
    if teams is None:
        teams = _TEAMS.by_count[n] = [[_OPENSKILL.rating()] for _ in range(n)]
    order = sorted(range(n), key=places.__getitem__)
    for k, i in enumerate(order):
        player, s = teams[k][0], skills[i]
        player.mu = s.mu
        player.sigma = math.sqrt(s.sigma * s.sigma + _TAU_SQUARED)
    result = _OPENSKILL._compute(teams=teams, ranks=[float(places[i]) for i in order])
    out: list[Skill] = list(skills)
    for k, i in enumerate(order):
        r = result[k][0]
        out[i] = Skill(mu=float(r.mu), sigma=float(r.sigma), matches=skills[i].matches + 1)
    return out


def _direct_agrees() -> bool:
    """Whether `_openskill_direct` reproduces `rate` on a fixed set of matches (ties,
    unequal sigmas, 2-4 players); False also when the library's internals changed shape."""
    s = [Skill(mu=25.0, sigma=25.0 / 3.0), Skill(mu=31.5, sigma=2.25, matches=40)]
    s += [Skill(mu=18.25, sigma=5.5, matches=3), Skill(mu=25.0, sigma=0.9, matches=400)]
    cases = [(s[:2], [1, 2]), (s[:2], [2, 1]), (s[:2], [1, 1]), (s[:3], [3, 1, 2])]
    cases += [(s[:3], [2, 2, 1]), (s, [1, 2, 3, 4]), (s, [4, 1, 1, 3]), (s, [2, 2, 2, 2])]
    cases += [(s[::-1], [1, 3, 2, 3]), ([s[0]] * 4, [3, 1, 2, 2])]
    try:
        return all(_openskill_direct(k, p) == _openskill_public(k, p) for k, p in cases)
    except Exception:
        return False


OPENSKILL_DIRECT: Final = _direct_agrees()


def openskill_update(skills: Sequence[Skill], places: Sequence[int]) -> list[Skill]:
    """OpenSkill Bradley-Terry (full pairing): one team per player, ranks = places."""
    if OPENSKILL_DIRECT:
        return _openskill_direct(skills, places)
    return _openskill_public(skills, places)


# ------------------------------------------------------------------------------------ elo

ELO_K: Final = 32.0


def _score(mine: int, theirs: int) -> float:
    return 1.0 if mine < theirs else 0.5 if mine == theirs else 0.0


def elo_update(skills: Sequence[Skill], places: Sequence[int], k: float = ELO_K) -> list[Skill]:
    """Pairwise Elo: K / (n - 1) per pair, scores 1 / 0.5 / 0, pre-match ratings."""
    n = len(skills)
    out = []
    for i, s in enumerate(skills):
        delta = 0.0
        for j, other in enumerate(skills):
            if i == j:
                continue
            expected = 1.0 / (1.0 + 10.0 ** ((other.mu - s.mu) / 400.0))
            delta += _score(places[i], places[j]) - expected
        out.append(Skill(mu=s.mu + k / (n - 1) * delta, sigma=0.0, matches=s.matches + 1))
    return out


# -------------------------------------------------------------------------------- glicko-2

GLICKO_SCALE: Final = 173.7178
GLICKO_TAU: Final = 0.5
GLICKO_EPSILON: Final = 1e-6


_PI_SQUARED: Final = math.pi * math.pi


def _g(phi: float) -> float:
    return 1.0 / math.sqrt(1.0 + 3.0 * phi * phi / _PI_SQUARED)


def _glicko2_one(
    s: Skill, opponents: Sequence[tuple[Skill, float]], tau: float = GLICKO_TAU
) -> Skill:
    return _glicko2_scaled(
        s,
        [
            ((o.mu - 1500.0) / GLICKO_SCALE, _g(o.sigma / GLICKO_SCALE), score)
            for o, score in opponents
        ],
        tau,
    )


def _glicko2_scaled(
    s: Skill, opponents: Sequence[tuple[float, float, float]], tau: float = GLICKO_TAU
) -> Skill:
    """Steps 2-8 for one player; `opponents` are (mu_j, g(phi_j), score) on the Glicko-2
    scale (each opponent's mu_j and g computed once per match, not once per pair)."""
    mu = (s.mu - 1500.0) / GLICKO_SCALE
    phi = s.sigma / GLICKO_SCALE
    sigma = s.volatility
    v_inv = 0.0
    delta_sum = 0.0
    for mu_j, g, score in opponents:
        e = 1.0 / (1.0 + math.exp(-g * (mu - mu_j)))
        v_inv += g * g * e * (1.0 - e)
        delta_sum += g * (score - e)
    v = 1.0 / v_inv
    delta = v * delta_sum
    # Step 5: the new volatility (Illinois algorithm).
    a = math.log(sigma * sigma)

    def f(x: float) -> float:
        ex = math.exp(x)
        num = ex * (delta * delta - phi * phi - v - ex)
        den = 2.0 * (phi * phi + v + ex) ** 2
        return num / den - (x - a) / (tau * tau)

    big_a = a
    if delta * delta > phi * phi + v:
        big_b = math.log(delta * delta - phi * phi - v)
    else:
        k = 1
        while f(a - k * tau) < 0:
            k += 1
        big_b = a - k * tau
    f_a, f_b = f(big_a), f(big_b)
    while abs(big_b - big_a) > GLICKO_EPSILON:
        big_c = big_a + (big_a - big_b) * f_a / (f_b - f_a)
        f_c = f(big_c)
        if f_c * f_b <= 0:
            big_a, f_a = big_b, f_b
        else:
            f_a = f_a / 2.0
        big_b, f_b = big_c, f_c
    new_sigma = math.exp(big_a / 2.0)
    phi_star = math.sqrt(phi * phi + new_sigma * new_sigma)
    new_phi = 1.0 / math.sqrt(1.0 / (phi_star * phi_star) + 1.0 / v)
    # r' = r + 173.7178 * phi'^2 * sum: the paper's mu' = mu + phi'^2 * sum on the
    # rating scale, added to the unscaled rating so that a zero sum (a draw between
    # equals) gives the very same float back, and the sign of the change is the sign of
    # the sum to the last bit (scaling there and back could move it by an ulp).
    return Skill(
        mu=s.mu + GLICKO_SCALE * (new_phi * new_phi * delta_sum),
        sigma=GLICKO_SCALE * new_phi,
        volatility=new_sigma,
        matches=s.matches + 1,
    )


def glicko2_update(skills: Sequence[Skill], places: Sequence[int]) -> list[Skill]:
    """Glicko-2 with the match as one rating period of pairwise results."""
    scaled = [((o.mu - 1500.0) / GLICKO_SCALE, _g(o.sigma / GLICKO_SCALE)) for o in skills]
    return [
        _glicko2_scaled(
            s,
            [
                (mu_j, g, _score(places[i], places[j]))
                for j, (mu_j, g) in enumerate(scaled)
                if j != i
            ],
        )
        for i, s in enumerate(skills)
    ]


# --------------------------------------------------------------------------------- models

# The built-in models' `library` names the module they were first written in: every rating
# change records it, and a recompute must write the rows it replaces, so it stays.
MODELS: Final[dict[str, Model]] = {
    "openskill": Model(
        name="openskill",
        library=f"openskill {version('openskill')}",
        params={
            "model": "BradleyTerryFull",
            "mu": _OPENSKILL.mu,
            "sigma": _OPENSKILL.sigma,
            "beta": _OPENSKILL.beta,
            "tau": _OPENSKILL.tau,
            "kappa": _OPENSKILL.kappa,
            "display_base": 1500.0,
            "display_scale": 30.0,
            "provisional_sigma": 3.0,
            "leaver_mu": "never rises",
        },
    ),
    "elo": Model(
        name="elo",
        library="services.ranking.ratings (built in)",
        params={
            "k": ELO_K,
            "start": 1500.0,
            "pairing": "full",
            "provisional_matches": 10,
            "leaver_mu": "never rises",
        },
    ),
    "glicko2": Model(
        name="glicko2",
        library="services.ranking.ratings (built in, Glickman 2012)",
        params={
            "start": 1500.0,
            "rd": 350.0,
            "volatility": 0.06,
            "tau": GLICKO_TAU,
            "epsilon": GLICKO_EPSILON,
            "provisional_sigma": 110.0,
            "leaver_mu": "never rises",
        },
    ),
}
DEFAULT_MODEL: Final = "openskill"


def model_named(name: str) -> Model:
    """The rating model called `name`; any other name is `Invalid` (a 422 naming the
    `model` query parameter, for both APIs)."""
    model = MODELS.get(name)
    if model is None:
        raise Invalid(f"model: one of {', '.join(MODELS)}", field="model")
    return model


_INITIAL = {
    "openskill": lambda m: Skill(mu=float(m.params["mu"]), sigma=float(m.params["sigma"])),
    "elo": lambda m: Skill(mu=float(m.params["start"]), sigma=0.0),
    "glicko2": lambda m: Skill(
        mu=float(m.params["start"]),
        sigma=float(m.params["rd"]),
        volatility=float(m.params["volatility"]),
    ),
}
UPDATES: Final[dict[str, Callable[[Sequence[Skill], Sequence[int]], list[Skill]]]] = {
    "openskill": openskill_update,
    "elo": elo_update,
    "glicko2": glicko2_update,
}


def rate_match(
    model: str, skills: Sequence[Skill], places: Sequence[int], left: Sequence[bool]
) -> list[Skill]:
    """The model's update, then the leaver rule: a leaver's mu never rises (their other
    fields are updated as computed). The one routine the consumer and `rate` share."""
    updated = UPDATES[model](skills, places)
    for i, gone in enumerate(left):
        if gone and updated[i].mu > skills[i].mu:
            updated[i] = msgspec.structs.replace(updated[i], mu=skills[i].mu)
    return updated


def rate(model: str, current: Mapping[str, Skill], entries: Sequence[Entry]) -> dict[str, Skill]:
    """New skills of the entries' players after the match (missing players start fresh)."""
    m = MODELS[model]
    skills = [current.get(e.player_id) or m.initial() for e in entries]
    updated = rate_match(model, skills, [e.place for e in entries], [e.left for e in entries])
    return {e.player_id: s for e, s in zip(entries, updated, strict=True)}
