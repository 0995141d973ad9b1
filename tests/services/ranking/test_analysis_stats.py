"""What the match analyses add up to (services/ranking/analysis/stats.py): a player's
averages and dice (public), the site's dice per day and the largest luck gaps (operator),
on rows written into `match_analyses` and `analysis_seats`; the statistics against known
values."""

from __future__ import annotations

import math
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from litestar.testing import AsyncTestClient
from sqlalchemy.ext.asyncio import AsyncEngine

from domain import events as ev
from services.ranking.analysis.consumer import AnalysisConsumer
from services.ranking.analysis.stats import (
    FAIR,
    WINDOW,
    chi_square,
    chi_square_p,
    regularized_gamma_q,
    wilson,
)
from services.ranking.app import create_app
from services.ranking.ratings.consumer import RankingConsumer
from services.shared.eventstore import EventStore
from services.shared.settings import Settings
from tests.services.conftest import Api
from tests.services.ranking.analysed_matches import Seat, insert_analysis
from tests.services.ranking.finished_matches import write_match

pytestmark = pytest.mark.anyio

TOKEN = "op-secret"
OPERATOR = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture
async def client(database_url: str, tmp_path: Path) -> AsyncIterator[AsyncTestClient[Any]]:
    """The ranking app without its consumer; requests carry no token unless they add it."""
    settings = Settings(
        data_dir=tmp_path, database_url=database_url, operator_token=TOKEN, db_pool_size=4
    )
    async with AsyncTestClient(create_app(settings, consume=False)) as c:
        yield c


def _now() -> datetime:
    return datetime.now(UTC)


def _midday(days_ago: int) -> datetime:
    """Noon UTC `days_ago` days before today (whatever the time now, the same UTC day)."""
    today = _now().date() - timedelta(days=days_ago)
    return datetime(today.year, today.month, today.day, 12, tzinfo=UTC)


# ------------------------------------------------------------------------- statistics


def test_chi_square_p_values_match_the_tables() -> None:
    """The quantiles of chi-square with 5 degrees of freedom (to 10 digits, as
    scipy.stats.chi2.ppf gives them) have their p-values, and 3.841459 with 1 has 0.05."""
    quantiles = [
        (1.145476226, 0.95),
        (4.351460191, 0.5),
        (11.07049769, 0.05),
        (15.08627247, 0.01),
        (20.51500566, 0.001),
    ]
    for statistic, p in quantiles:
        assert chi_square_p(statistic) == pytest.approx(p, rel=1e-8)
    assert chi_square_p(0.0) == 1.0
    assert chi_square_p(3.841459, dof=1) == pytest.approx(0.05, abs=1e-6)
    assert 0.0 <= chi_square_p(1e7) < 1e-300  # a die that always shows one face


def test_the_gamma_function_agrees_with_closed_forms() -> None:
    """Q(1, x) = e^-x, and with 5 degrees of freedom the p-value is erfc(√(x/2)) +
    √(2x/π)·e^(-x/2)·(1 + x/3), on both sides of the series/fraction switch."""
    for x in (0.01, 0.5, 2.9, 3.6, 7.3, 25.0, 80.0):
        assert regularized_gamma_q(1, x) == pytest.approx(math.exp(-x), rel=1e-12)
        closed = math.erfc(math.sqrt(x / 2)) + math.sqrt(2 * x / math.pi) * math.exp(-x / 2) * (
            1 + x / 3
        )
        assert chi_square_p(x) == pytest.approx(closed, rel=1e-10, abs=1e-300)


def test_chi_square_and_wilson_intervals() -> None:
    """Pearson's statistic of known counts; Wilson's 95% interval of 10 in 100 is
    0.0552–0.1744, of 0 in 10 starts at 0, and no roll spans [0, 1]."""
    assert chi_square([10] * 6) == 0.0
    assert chi_square([20, 10, 10, 10, 10, 0]) == pytest.approx((100 + 0 + 0 + 0 + 0 + 100) / 10)
    assert chi_square([0] * 6) is None
    low, high = wilson(10, 100)
    assert low == pytest.approx(0.05523, abs=1e-5) and high == pytest.approx(0.17437, abs=1e-5)
    assert wilson(0, 10) == pytest.approx((0.0, 0.27753), abs=1e-5)
    assert wilson(0, 0) == (0.0, 1.0)


# ----------------------------------------------------------------------- player page


async def test_a_players_averages_are_over_their_last_50_matches_and_dice_over_all(
    client: AsyncTestClient[Any], engine: AsyncEngine
) -> None:
    """Luck, error rate and best share from the newest 50 analysed matches; the dice from
    all 52, each face with a Wilson interval; CPU seats and other players left out."""
    old = _now() - timedelta(days=30)
    for i in range(2):  # the two oldest: big luck and errors, out of the window
        await insert_analysis(
            engine,
            [
                Seat("ann", luck=0.9, faces=(1, 0, 0, 0, 0, 0), choices=10, own_error=5.0),
                Seat(None, luck=-0.9, faces=(9, 9, 9, 9, 9, 9)),
            ],
            ended_at=old + timedelta(minutes=i),
        )
    for i in range(WINDOW):
        await insert_analysis(
            engine,
            [
                Seat(
                    "ann",
                    luck=0.02 if i % 2 else -0.01,
                    faces=(2, 2, 2, 2, 2, 3),
                    choices=4,
                    own_error=0.05,
                    best_choices=3,
                    place=1 + i % 2,
                ),
                Seat("ben", luck=0.1, faces=(0, 0, 0, 0, 0, 7), choices=2, own_error=1.0),
            ],
            ended_at=_now() - timedelta(days=1, minutes=i),
        )
    got = await client.get("/api/ratings/players/ann/analysis")
    assert got.status_code == 200, got.text
    body = got.json()
    assert body["player_id"] == "ann" and body["window"] == WINDOW
    assert body["matches"] == WINDOW and body["choices"] == 4 * WINDOW
    assert body["luck"] == pytest.approx(0.005)  # (25 * 0.02 - 25 * 0.01) / 50
    assert body["error_rate"] == pytest.approx(0.05 / 4)
    assert body["best_share"] == pytest.approx(0.75)
    dice = body["dice"]
    faces = [2 * WINDOW + 2] + [2 * WINDOW] * 4 + [3 * WINDOW]
    assert dice["matches"] == WINDOW + 2 and dice["faces"] == faces
    assert dice["rolls"] == sum(faces) == 13 * WINDOW + 2
    assert dice["sixes_per_100"] == pytest.approx(100 * 3 * WINDOW / (13 * WINDOW + 2))
    assert dice["expected"] == pytest.approx(1 / 6)
    assert dice["chi_square"] == pytest.approx(chi_square(faces))
    assert dice["p_value"] == pytest.approx(chi_square_p(chi_square(faces) or 0))
    assert [s["face"] for s in dice["shares"]] == [1, 2, 3, 4, 5, 6]
    for share, count in zip(dice["shares"], faces, strict=True):
        assert share["count"] == count and share["share"] == pytest.approx(count / dice["rolls"])
        assert share["low"] < share["share"] < share["high"]
        assert (share["low"], share["high"]) == pytest.approx(wilson(count, dice["rolls"]))
    assert dice["shares"][5]["low"] > FAIR  # 150 sixes in 652 rolls: loaded


async def test_a_known_player_without_analyses_gets_zeros_and_a_stranger_404(
    client: AsyncTestClient[Any], engine: AsyncEngine, pg_store: EventStore
) -> None:
    """A rated player whose matches are not analysed: 200 with zeros and no test; an id
    the ranking service never saw, or one no player can have: 404 JSON."""
    await write_match(engine, pg_store, ["cat", "dan"], [1, 2])
    await RankingConsumer(engine, pg_store).catch_up()
    got = await client.get("/api/ratings/players/cat/analysis")
    assert got.status_code == 200, got.text
    body = got.json()
    assert body["matches"] == 0 and body["luck"] == 0 and body["error_rate"] == 0
    assert body["best_share"] == 0 and body["choices"] == 0
    dice = body["dice"]
    assert dice["rolls"] == 0 and dice["faces"] == [0] * 6 and dice["sixes_per_100"] == 0
    assert dice["chi_square"] is None and dice["p_value"] is None
    assert all((s["share"], s["low"], s["high"]) == (0, 0, 1) for s in dice["shares"])
    for pid in ("nobody", "%00", "a" * 300, "%E2%9C%93"):
        refused = await client.get(f"/api/ratings/players/{pid}/analysis")
        assert refused.status_code == 404, (pid, refused.text)
        assert refused.json()["error"] == "not_found"


async def test_a_player_with_only_analysed_casual_matches_is_known(
    client: AsyncTestClient[Any], engine: AsyncEngine
) -> None:
    """No rating at all (casual matches only): the analyses still count."""
    await insert_analysis(engine, [Seat("eve", faces=(1, 1, 1, 1, 1, 1)), Seat(None)], ranked=False)
    body = (await client.get("/api/ratings/players/eve/analysis")).json()
    assert body["matches"] == 1 and body["dice"]["rolls"] == 6
    assert body["dice"]["chi_square"] == 0 and body["dice"]["p_value"] == 1


# --------------------------------------------------------------------- operator: dice


async def test_site_dice_per_utc_day_with_a_chi_square_each(
    client: AsyncTestClient[Any], engine: AsyncEngine
) -> None:
    """Every seat's rolls (CPUs too) summed per UTC day within the window, oldest first;
    each day and the window with Pearson's statistic and its p-value."""
    today = [(3, 2, 4, 1, 5, 6), (10, 0, 0, 0, 0, 0)]
    await insert_analysis(
        engine, [Seat("ann", faces=today[0]), Seat(None, faces=today[1])], ended_at=_midday(0)
    )
    await insert_analysis(engine, [Seat("ben", faces=(5, 5, 5, 5, 5, 5))], ended_at=_midday(3))
    await insert_analysis(engine, [Seat("ben", faces=(0, 0, 0, 0, 0, 0))], ended_at=_midday(5))
    await insert_analysis(engine, [Seat("old", faces=(9, 9, 9, 9, 9, 9))], ended_at=_midday(14))

    got = await client.get("/api/ranking/dice", headers=OPERATOR)
    assert got.status_code == 200, got.text
    body = got.json()
    assert body["days"] == 14 and body["until"] == _now().date().isoformat()
    assert body["since"] == (_now().date() - timedelta(days=13)).isoformat()
    assert body["expected"] == pytest.approx(1 / 6)
    days = body["per_day"]
    assert [d["day"] for d in days] == [_midday(3).date().isoformat(), _now().date().isoformat()]
    assert days[0]["faces"] == [5] * 6 and days[0]["chi_square"] == 0 and days[0]["p_value"] == 1
    summed = [a + b for a, b in zip(*today, strict=True)]
    assert days[1]["faces"] == summed and days[1]["rolls"] == 31
    assert days[1]["chi_square"] == pytest.approx(chi_square(summed))
    assert days[1]["p_value"] == pytest.approx(chi_square_p(chi_square(summed) or 0))
    total = body["total"]
    assert total["faces"] == [s + 5 for s in summed] and total["rolls"] == 61
    assert total["p_value"] == pytest.approx(chi_square_p(chi_square(total["faces"]) or 0))

    wide = (await client.get("/api/ranking/dice?days=15", headers=OPERATOR)).json()
    assert len(wide["per_day"]) == 3 and wide["total"]["rolls"] == 61 + 54
    one = (await client.get("/api/ranking/dice?days=1", headers=OPERATOR)).json()
    assert [d["rolls"] for d in one["per_day"]] == [31] and one["since"] == one["until"]


async def test_site_dice_with_no_analysis_yet(client: AsyncTestClient[Any]) -> None:
    """No analysed match: no day, a total of zero rolls and no test (nulls), not an error."""
    body = (await client.get("/api/ranking/dice", headers=OPERATOR)).json()
    assert body["per_day"] == []
    assert body["total"] == {"rolls": 0, "faces": [0] * 6, "chi_square": None, "p_value": None}


# ---------------------------------------------------------------- operator: luck gaps


async def test_luck_gaps_largest_first_with_seats_and_replay(
    client: AsyncTestClient[Any], engine: AsyncEngine
) -> None:
    """The largest gaps of the window first, each with its seats in seat order (a CPU's
    player_id null) and the path of its replay; older matches and `limit` cut the list."""
    small = await insert_analysis(engine, [Seat("ann", luck=0.1), Seat("ben", luck=-0.1)])
    big = await insert_analysis(
        engine,
        [
            Seat("ann", luck=-0.3, place=3),
            Seat(None, name="CPU", luck=0.05, place=2),
            Seat("cat", name="Cat", luck=0.4, place=1),
        ],
        ended_at=_now() - timedelta(days=6),
    )
    await insert_analysis(
        engine, [Seat("ann", luck=0.9), Seat("ben", luck=-0.9)], ended_at=_now() - timedelta(8)
    )
    got = await client.get("/api/ranking/luck-gaps", headers=OPERATOR)
    assert got.status_code == 200, got.text
    rows = got.json()
    assert [r["match_id"] for r in rows] == [big, small]
    assert rows[0]["luck_gap"] == pytest.approx(0.7) and rows[0]["players"] == 3
    assert rows[0]["replay"] == f"/replay/{big}" and rows[0]["evaluator"] == "test-evaluator"
    assert rows[0]["seats"] == [
        {"seat": 0, "player_id": "ann", "name": "ann", "luck": -0.3, "place": 3},
        {"seat": 1, "player_id": None, "name": "CPU", "luck": 0.05, "place": 2},
        {"seat": 2, "player_id": "cat", "name": "Cat", "luck": 0.4, "place": 1},
    ]
    assert rows[1]["seats"][1]["place"] is None
    top = (await client.get("/api/ranking/luck-gaps?days=30&limit=1", headers=OPERATOR)).json()
    assert len(top) == 1 and top[0]["luck_gap"] == pytest.approx(1.8)
    assert (await client.get("/api/ranking/luck-gaps?days=1", headers=OPERATOR)).json()[0][
        "match_id"
    ] == small


# ------------------------------------------------------------------------ bad input


@pytest.mark.parametrize(
    ("path", "field"),
    [
        ("/api/ranking/dice?days=0", "days"),
        ("/api/ranking/dice?days=3651", "days"),
        ("/api/ranking/dice?days=ten", "days"),
        ("/api/ranking/dice?days=99999999999999999999", "days"),
        ("/api/ranking/luck-gaps?days=0", "days"),
        ("/api/ranking/luck-gaps?days=-7", "days"),
        ("/api/ranking/luck-gaps?limit=0", "limit"),
        ("/api/ranking/luck-gaps?limit=501", "limit"),
        ("/api/ranking/luck-gaps?limit=1.5", "limit"),
    ],
)
async def test_out_of_range_parameters_are_a_422_naming_them(
    client: AsyncTestClient[Any], path: str, field: str
) -> None:
    """Days and limits out of their bounds: 422 {error, detail, field}, never a 500."""
    got = await client.get(path, headers=OPERATOR)
    assert got.status_code == 422, got.text
    body = got.json()
    assert body["error"] == "invalid" and body["field"] == field and body["detail"]


@pytest.mark.parametrize("path", ["/api/ranking/dice", "/api/ranking/luck-gaps"])
async def test_the_site_reads_are_the_operators(client: AsyncTestClient[Any], path: str) -> None:
    """No token or a wrong one: 401 `unauthorized`, as every `/api/ranking` route."""
    refused = await client.get(path)
    assert refused.status_code == 401 and refused.json()["error"] == "unauthorized"
    wrong = await client.get(path, headers={"Authorization": "Bearer op-secret-not"})
    assert wrong.status_code == 401
    assert (await client.get(path, headers=OPERATOR)).status_code == 200


async def test_openapi_declares_the_analysis_routes(client: AsyncTestClient[Any]) -> None:
    """Operation ids and tags; the player's route is public, the site's need the token."""
    paths = (await client.get("/schema/openapi.json")).json()["paths"]
    player = paths["/api/ratings/players/{player_id}/analysis"]["get"]
    assert player["operationId"] == "getPlayerAnalysis" and player["tags"] == ["ratings"]
    assert {"200", "404"} <= set(player["responses"]) and "security" not in player
    for path, op_id in [
        ("/api/ranking/dice", "getSiteDice"),
        ("/api/ranking/luck-gaps", "getLuckGaps"),
    ]:
        op = paths[path]["get"]
        assert op["operationId"] == op_id and op["tags"] == ["ranking"]
        assert {"200", "401", "422"} <= set(op["responses"])
        assert op["security"] == [{"operator": []}]


# ----------------------------------------------------------------------- end to end


@pytest.mark.slow  # a whole match over HTTP, then its analysis
async def test_a_played_duel_once_analysed_adds_up_to_its_dice_and_luck(
    api: Api, client: AsyncTestClient[Any], pg_store: EventStore
) -> None:
    """A duel played through the match service, then the analysis consumer's catch-up:
    each player's dice are their seat's DieRolled events, their luck and error rate the
    stored analysis's, and the site's dice and luck gaps count the match."""
    match_id, players, _ = await api.duel(ranked=True)
    await api.play_to_end(match_id, players)
    await AnalysisConsumer(api.engine, pg_store, worker=False).catch_up()

    events = [e.event for e in await pg_store.read_stream(f"match-{match_id}")]
    created = next(e for e in events if isinstance(e, ev.MatchCreated))
    rolled = [[0] * 6 for _ in created.seats]
    for e in events:
        if isinstance(e, ev.DieRolled):
            rolled[e.seat][e.value - 1] += 1
    stored = (await client.get(f"/api/ratings/analysis/{match_id}")).json()
    for seat, spec in enumerate(created.seats):
        got = await client.get(f"/api/ratings/players/{spec.player_id}/analysis")
        assert got.status_code == 200, got.text
        body = got.json()
        assert body["matches"] == 1 and body["dice"]["matches"] == 1
        assert body["dice"]["faces"] == rolled[seat] and body["dice"]["rolls"] == sum(rolled[seat])
        mine = stored["seats"][seat]
        assert body["luck"] == pytest.approx(mine["luck"], abs=1e-6)  # stored: 6 decimals
        assert body["choices"] == mine["choices"]
        assert body["error_rate"] == pytest.approx(mine["error_rate"], abs=1e-6)
        assert body["best_share"] == pytest.approx(mine["best_share"], abs=1e-6)

    dice = (await client.get("/api/ranking/dice?days=1", headers=OPERATOR)).json()
    everything = [sum(column) for column in zip(*rolled, strict=True)]
    assert dice["total"]["faces"] == everything
    assert [d["faces"] for d in dice["per_day"]] == [everything]
    gaps = (await client.get("/api/ranking/luck-gaps", headers=OPERATOR)).json()
    assert [g["match_id"] for g in gaps] == [match_id]
    lucks = [s["luck"] for s in stored["seats"]]
    assert gaps[0]["luck_gap"] == pytest.approx(max(lucks) - min(lucks), abs=1e-6)
    assert [(s["player_id"], s["name"]) for s in gaps[0]["seats"]] == [
        (spec.player_id, spec.name) for spec in created.seats
    ]
