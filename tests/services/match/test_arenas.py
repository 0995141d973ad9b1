"""Arena tournaments through the service (docs/arenas.md): creating and listing, joining,
the runner's pass pairing ordinary ranked parties, scoring from the match's own end and
pairing again, leaving a match, the end at the clock, cancelling, the socket, and bad
input changing nothing.

The `api` app runs no runner: tests run `arenas.tick` themselves, with a `now` they
choose, on the app's own service (same database, same code)."""

from __future__ import annotations

import time
from typing import Any

import httpx
import msgspec
import pytest
import sqlalchemy as sa

from domain.streams import tournament_stream
from replays.tournament import load_tournament
from replays.tournament_verify import verify_tournament
from services.match.arenas.service import Arenas
from services.match.parts import MatchParts
from tests.services.conftest import Api

pytestmark = pytest.mark.anyio


def _service(api: Api) -> MatchParts:
    service: MatchParts = api.client.app.state.parts
    return service


def _arenas(api: Api) -> Arenas:
    return _service(api).arenas


async def _arena(api: Api, *, seats: int = 2, started: float = 60.0, **kw: Any) -> str:
    """A public arena that started `started` seconds ago (20 minutes long)."""
    state = await _arenas(api).create(
        name=kw.pop("name", "Test arena"),
        seats=seats,
        rules=kw.pop("rules", "standard"),
        turn_limit=30,
        minutes=20,
        starts_at=time.time() - started,
        private=kw.pop("private", False),
        **kw,
    )
    assert state.created is not None
    return state.created.arena_id


async def _post(api: Api, url: str, player: dict[str, str] | None, **body: Any) -> httpx.Response:
    headers = api.h(player) if player else {}
    response: httpx.Response = await api.call("POST", url, json=body, headers=headers)
    return response


async def _join(api: Api, arena_id: str, player: dict[str, str]) -> httpx.Response:
    return await _post(api, f"/api/tournaments/{arena_id}/join", player)


async def _here(api: Api, *players: dict[str, str]) -> None:
    """The players' arena sockets are connected (as a socket's hello records it)."""
    for player in players:
        await _service(api).lobby.hold(player["id"])


async def _length(api: Api, arena_id: str) -> int:
    return await api.stream_length(tournament_stream(arena_id))


async def _party(api: Api, party_id: str) -> dict[str, Any]:
    body: dict[str, Any] = (await api.call("GET", f"/api/parties/{party_id}")).json()
    return body


async def _in_arena(api: Api, n: int, seats: int = 2) -> tuple[str, list[dict[str, str]]]:
    arena_id = await _arena(api, seats=seats)
    players = [await api.player(f"p{i}") for i in range(n)]
    for player in players:
        assert (await _join(api, arena_id, player)).status_code == 200
    await _here(api, *players)
    return arena_id, players


async def _play_out(
    api: Api, match_id: str, players: list[dict[str, str]], leaver: int
) -> dict[str, Any]:
    """Play the match to its end: the others' turns by hand, the leaver's CPU's by its
    deadlines (made due at once)."""
    for _ in range(5000):
        state = await api.match(match_id)
        if state["status"] == "finished":
            return state
        if state["turn"] == leaver:
            await api.past_due(match_id)
            await api.scheduler.run_due()
        else:
            await api.step(match_id, players)
    raise AssertionError("the match did not end")


def _by_id(players: list[dict[str, str]]) -> dict[str, dict[str, str]]:
    return {p["id"]: p for p in players}


def listing_of(response: httpx.Response, arena_id: str) -> dict[str, Any]:
    """The arena's summary in `GET /api/tournaments`."""
    body = response.json()
    summary: dict[str, Any] = next(
        a
        for kind in ("upcoming", "live", "finished")
        for a in body[kind]
        if a["tournament_id"] == arena_id
    )
    return summary


class TestCreating:
    async def test_a_guest_creates_a_private_arena_reached_by_link_only(self, api: Api) -> None:
        """A guest's arena is private: its page answers, the list never shows it."""
        ann = await api.player("ann")
        r = await _post(api, "/api/tournaments", ann, name="Friday", seats=4, minutes=30)
        assert r.status_code == 201, r.text
        body = r.json()
        assert body["private"] is True and body["seats"] == 4 and body["status"] == "upcoming"
        assert body["you"]["state"] == "out" and body["you"]["creator"] is True
        assert body["title"] is None
        got = await api.call("GET", f"/api/tournaments/{body['tournament_id']}")
        assert got.status_code == 200 and got.json()["name"] == "Friday"
        listing = (await api.call("GET", "/api/tournaments")).json()
        every = listing["upcoming"] + listing["live"] + listing["finished"]
        assert body["tournament_id"] not in [a["tournament_id"] for a in every]

    async def test_public_arenas_are_listed_by_when_they_run(self, api: Api) -> None:
        """The list puts an arena not started in upcoming and a running one in live."""
        live = await _arena(api)
        later = await _arena(api, started=-600)
        listing = (await api.call("GET", "/api/tournaments")).json()
        assert [a["tournament_id"] for a in listing["live"]] == [live]
        assert [a["tournament_id"] for a in listing["upcoming"]] == [later]
        assert listing["upcoming"][0]["status"] == "upcoming"

    async def test_bad_fields_are_named_and_create_nothing(self, api: Api) -> None:
        """Wrong seats, minutes or an unknown field: 4xx naming it, no arena."""
        ann = await api.player("ann")
        for body in (
            {"name": "x", "seats": 3},
            {"name": "x", "minutes": 45},
            {"name": ""},
            {"name": "x", "dice": 6},
            {"name": "x", "starts_in": -5},
        ):
            r = await _post(api, "/api/tournaments", ann, **body)
            assert r.status_code in (400, 422), (body, r.text)
        async with api.engine.connect() as conn:
            count = await conn.scalar(sa.text("SELECT count(*) FROM arenas"))
        assert count == 0

    async def test_schedules_create_the_running_and_the_next_once(self, api: Api) -> None:
        """The default schedule's occurrences are created once, whoever runs it twice."""
        arenas = _arenas(api)
        first = await arenas.keep_scheduled()
        again = await arenas.keep_scheduled()
        assert first and not again
        listing = (await api.call("GET", "/api/tournaments")).json()
        names = {a["schedule"] for a in listing["upcoming"] + listing["live"]}
        assert names == {"hourly-2", "daily-4"}
        titles = {a["title"]["ja"] for a in listing["upcoming"] + listing["live"]}
        assert titles == {"毎時 2人アリーナ", "毎日 4人アリーナ"}


class TestPairing:
    async def test_waiting_players_sit_at_an_ordinary_ranked_party(self, api: Api) -> None:
        """A pass seats two waiting players at a started ranked party of the arena."""
        arena_id, players = await _in_arena(api, 2)
        passed = await _arenas(api).tick(arena_id)
        assert len(passed.paired) == 1
        table = passed.paired[0]
        party = await _party(api, table.party_id)
        assert party["arena_id"] == arena_id and party["ranked"] is True
        assert party["match_id"] == table.match_id and party["status"] == "playing"
        assert [s["player_id"] for s in party["seats"]] == list(table.players)
        view = await api.call("GET", f"/api/tournaments/{arena_id}", headers=api.h(players[0]))
        you = view.json()["you"]
        assert you["state"] == "playing" and you["party_id"] == table.party_id

    async def test_a_player_not_connected_is_not_seated(self, api: Api) -> None:
        """Without a socket seen lately a waiting player is skipped, and named so."""
        arena_id = await _arena(api)
        ann, bob = await api.player("ann"), await api.player("bob")
        for p in (ann, bob):
            await _join(api, arena_id, p)
        await _here(api, ann)
        passed = await _arenas(api).tick(arena_id)
        assert passed.paired == ()
        state = await _arenas(api).state(arena_id)
        assert not state.running

    async def test_a_match_ends_is_scored_and_its_players_paired_again(self, api: Api) -> None:
        """The end of a match scores 2/0 from its placements and re-pairs both at once."""
        arena_id, players = await _in_arena(api, 2)
        arenas = _arenas(api)
        table = (await arenas.tick(arena_id)).paired[0]
        seated = [_by_id(players)[p] for p in table.players]
        end = await api.play_to_end(table.match_id, seated)
        passed = await arenas.tick(arena_id)
        assert passed.scored == 1 and len(passed.paired) == 1
        state = await arenas.state(arena_id)
        winner = table.players[end["placements"].index(1)]
        assert state.entrants[winner].score == 2.0 and state.entrants[winner].streak == 1
        view = (await api.call("GET", f"/api/tournaments/{arena_id}")).json()
        assert view["standings"][0]["player_id"] == winner
        assert view["matches"][0]["match_id"] == table.match_id
        assert len(view["running"]) == 1

    async def test_the_rematch_of_an_arena_table_is_refused(self, api: Api) -> None:
        """An arena's table plays once: もう一度 is refused, the arena pairs the next."""
        arena_id, players = await _in_arena(api, 2)
        table = (await _arenas(api).tick(arena_id)).paired[0]
        seated = [_by_id(players)[p] for p in table.players]
        await api.play_to_end(table.match_id, seated)
        r = await _post(api, f"/api/parties/{table.party_id}/rematch", seated[0])
        assert r.status_code == 409 and r.json()["error"] == "arena_table"

    async def test_leaving_a_match_scores_zero_and_pauses(self, api: Api) -> None:
        """A player who leaves their arena match scores 0 and is paused until continue."""
        arena_id, players = await _in_arena(api, 2)
        arenas = _arenas(api)
        table = (await arenas.tick(arena_id)).paired[0]
        seated = [_by_id(players)[p] for p in table.players]
        left = await _post(api, f"/api/matches/{table.match_id}/leave", seated[0])
        assert left.status_code == 200, left.text
        await _play_out(api, table.match_id, seated, leaver=0)
        passed = await arenas.tick(arena_id)
        assert passed.scored == 1 and passed.paired == ()
        state = await arenas.state(arena_id)
        leaver = state.entrants[seated[0]["id"]]
        assert leaver.score == 0.0 and leaver.state == "paused"
        r = await _post(api, f"/api/tournaments/{arena_id}/continue", seated[0])
        assert r.status_code == 200 and r.json()["you"]["state"] == "waiting"

    async def test_the_standings_show_each_players_rating_now(self, api: Api) -> None:
        """Pairing keeps the rating at the join; the standings show the one rated since."""
        arena_id, players = await _in_arena(api, 2)
        async with api.engine.begin() as conn:
            await conn.execute(
                sa.text(
                    "INSERT INTO ratings (model, player_id, mu, sigma, rating, provisional,"
                    " matches, last_match_at) VALUES ('openskill', :p, 30, 1, 1600, false, 1,"
                    " now())"
                ),
                {"p": players[0]["id"]},
            )
        view = (await api.call("GET", f"/api/tournaments/{arena_id}")).json()
        shown = {line["player_id"]: line["rating"] for line in view["standings"]}
        assert shown[players[1]["id"]] == 1500 and shown[players[0]["id"]] != 1500
        state = await _arenas(api).state(arena_id)
        assert state.entrants[players[0]["id"]].rating == 1500.0


class TestTheEnd:
    async def test_no_pairing_after_the_clock_but_running_matches_count(self, api: Api) -> None:
        """At the end nobody is paired; the match running then is scored; the podium."""
        arena_id, players = await _in_arena(api, 2)
        arenas = _arenas(api)
        table = (await arenas.tick(arena_id)).paired[0]
        state = await arenas.state(arena_id)
        after = state.ends_at + 1
        passed = await arenas.tick(arena_id, now=after)
        assert passed.ended
        early = await api.call("GET", f"/api/tournaments/{arena_id}/export")
        assert early.status_code == 409 and early.json()["error"] == "arena_running"
        seated = [_by_id(players)[p] for p in table.players]
        await api.play_to_end(table.match_id, seated)
        passed = await arenas.tick(arena_id, now=after + 5)
        assert passed.scored == 1 and passed.paired == ()
        view = (await api.call("GET", f"/api/tournaments/{arena_id}")).json()
        assert view["status"] == "finished"
        assert [line["rank"] for line in view["podium"]] == [1, 2]
        assert (
            listing_of(await api.call("GET", "/api/tournaments"), arena_id)["leader"]
            == (view["standings"][0]["name"])
        )
        listing = (await api.call("GET", "/api/tournaments")).json()
        assert [a["tournament_id"] for a in listing["finished"]] == [arena_id]
        exported = await api.call("GET", f"/api/tournaments/{arena_id}/export")
        assert exported.status_code == 200
        verdict = verify_tournament(load_tournament(exported.content))
        assert verdict.ok, verdict.failure
        assert [(s.player_id, s.score) for s in load_tournament(exported.content).standings] == [
            (line["player_id"], line["score"]) for line in view["standings"]
        ]


class TestTheClock:
    """Every command is decided against the arena's clock as the service reads it when it
    decides (`Arenas.clock`, set here to stand at an instant), whether or not the runner
    has recorded the end yet."""

    @pytest.mark.parametrize("late", [0.0, 0.005, 0.03])
    async def test_a_pause_just_after_the_clock_ran_out_is_refused_as_a_join_is(
        self, api: Api, late: float
    ) -> None:
        """5-30 ms after `ends_at`, the end not recorded: pause and join both answer 409
        `arena_over`, nothing is appended, the player is not shown paused; the file of
        the arena, once over, holds no pause after the end and verifies."""
        arena_id, players = await _in_arena(api, 2)
        arenas = _arenas(api)
        state = await arenas.state(arena_id)
        assert state.ended_at is None
        before = await _length(api, arena_id)
        arenas.clock = lambda: state.ends_at + late
        pause = await _post(api, f"/api/tournaments/{arena_id}/pause", players[0])
        assert pause.status_code == 409 and pause.json()["error"] == "arena_over", pause.text
        join = await _join(api, arena_id, await api.player("late"))
        assert join.status_code == 409 and join.json()["error"] == "arena_over", join.text
        assert await _length(api, arena_id) == before
        view = await api.call("GET", f"/api/tournaments/{arena_id}", headers=api.h(players[0]))
        assert view.json()["you"]["state"] == "waiting"
        assert (await arenas.tick(arena_id)).ended
        exported = await api.call("GET", f"/api/tournaments/{arena_id}/export")
        verdict = verify_tournament(load_tournament(exported.content))
        assert verdict.ok, verdict.failure

    async def test_a_pause_an_instant_before_the_end_is_recorded_with_its_time(
        self, api: Api
    ) -> None:
        """Just before `ends_at` the pause is taken, and the stream says when it was
        decided (`PlayerPaused.at`), for `ludo tournament verify` to judge."""
        arena_id, players = await _in_arena(api, 2)
        arenas = _arenas(api)
        ends_at = (await arenas.state(arena_id)).ends_at
        arenas.clock = lambda: ends_at - 0.001
        r = await _post(api, f"/api/tournaments/{arena_id}/pause", players[0])
        assert r.status_code == 200 and r.json()["you"]["state"] == "paused", r.text
        events = await _service(api).store.read_stream(tournament_stream(arena_id))
        assert events[-1].type == "PlayerPaused" and events[-1].schema_version == 2
        assert msgspec.json.decode(events[-1].data)["at"] == ends_at - 0.001


class TestPodiumAndLeader:
    async def test_only_those_who_played_stand_on_the_podium_and_lead(self, api: Api) -> None:
        """A player who joined but was never paired shares the last rank at 0 and is not
        on the podium; nobody leads the list before a line has scored points."""
        arena_id = await _arena(api)
        players = [await api.player(name) for name in ("ann", "bob", "cy")]
        for player in players:
            assert (await _join(api, arena_id, player)).status_code == 200
        assert listing_of(await api.call("GET", "/api/tournaments"), arena_id)["leader"] is None
        await _here(api, *players[:2])  # cy is not connected: never paired
        arenas = _arenas(api)
        table = (await arenas.tick(arena_id)).paired[0]
        await api.play_to_end(table.match_id, [_by_id(players)[p] for p in table.players])
        ends_at = (await arenas.state(arena_id)).ends_at
        assert (await arenas.tick(arena_id, now=ends_at + 1)).scored == 1
        view = (await api.call("GET", f"/api/tournaments/{arena_id}")).json()
        assert view["status"] == "finished"
        ranks = {line["name"]: (line["rank"], line["matches"]) for line in view["standings"]}
        assert ranks["cy"] == (2, 0)
        podium = [line["name"] for line in view["podium"]]
        assert len(podium) == 2 and "cy" not in podium


class TestBadInput:
    async def test_each_view_says_the_version_it_was_folded_from(self, api: Api) -> None:
        """A command's answer carries the arena stream's version after it (the stream's
        length), one more per event; a read shows the same, so a page tells the newer."""
        arena_id = await _arena(api)
        ann = await api.player("ann")
        versions = []
        for step in ("join", "pause", "continue"):
            r = await _post(api, f"/api/tournaments/{arena_id}/{step}", ann)
            assert r.status_code == 200, r.text
            versions.append(r.json()["version"])
            assert versions[-1] == await _length(api, arena_id)
        assert versions == sorted(versions) and len(set(versions)) == 3
        read = await api.call("GET", f"/api/tournaments/{arena_id}")
        assert read.json()["version"] == versions[-1]

    async def test_refusals_change_nothing(self, api: Api) -> None:
        """Joining twice, pausing when out, unknown and malformed ids: 4xx, no event."""
        arena_id = await _arena(api)
        ann, bob = await api.player("ann"), await api.player("bob")
        assert (await _join(api, arena_id, ann)).status_code == 200
        before = await _length(api, arena_id)
        cases = [
            (await _join(api, arena_id, ann), 409, "already_joined"),
            (await _post(api, f"/api/tournaments/{arena_id}/pause", bob), 409, "not_joined"),
            (await _post(api, f"/api/tournaments/{arena_id}/continue", ann), 409, "not_paused"),
            (await _post(api, f"/api/tournaments/{arena_id}/join", None), 401, "unauthorized"),
            (await _join(api, "not-an-id", ann), 404, "not_found"),
            (await _join(api, "5b1f2f64-8d55-4b53-9a4e-2a4f3f1f0c11", ann), 404, "not_found"),
            (
                await _post(api, f"/api/tournaments/{arena_id}/join", bob, client_seed="é"),
                422,
                None,
            ),
        ]
        for response, status, code in cases:
            assert response.status_code == status, response.text
            if code:
                assert response.json()["error"] == code, response.text
        assert await _length(api, arena_id) == before

    async def test_over_and_cancelled_arenas_refuse_joins(self, api: Api) -> None:
        """A finished arena and a cancelled one refuse a join, each saying which."""
        over = await _arena(api, started=20 * 60 + 5)
        ann = await api.player("ann")
        r = await _join(api, over, ann)
        assert r.status_code == 409 and r.json()["error"] == "arena_over"
        cancelled = await _arena(api)
        await _arenas(api).cancel(cancelled, "server maintenance", "operator")
        r = await _join(api, cancelled, ann)
        assert r.status_code == 409 and r.json()["error"] == "arena_cancelled"
        assert "server maintenance" in r.json()["detail"]

    async def test_only_an_operator_or_the_creator_cancels(self, api: Api) -> None:
        """Anyone else is refused 403; the creator cancels with a reason shown."""
        ann, bob = await api.player("ann"), await api.player("bob")
        created = (await _post(api, "/api/tournaments", ann, name="Mine")).json()
        url = f"/api/tournaments/{created['tournament_id']}/cancel"
        r = await _post(api, url, bob, reason="no")
        assert r.status_code == 403
        r = await _post(api, url, ann, reason="wrong time")
        assert r.status_code == 200, r.text
        assert r.json()["status"] == "cancelled"
        assert r.json()["cancelled"]["reason"] == "wrong time"

    @pytest.mark.parametrize("reason", ["", "   ", "x" * 201])
    async def test_a_reason_empty_blank_or_too_long_is_bad_reason(
        self, api: Api, reason: str
    ) -> None:
        """One answer for every reason of the wrong length, from the Decider: 422
        `bad_reason` naming the field `reason`; the arena is not cancelled."""
        ann = await api.player("ann")
        created = (await _post(api, "/api/tournaments", ann, name="Mine")).json()
        arena_id = created["tournament_id"]
        before = await _length(api, arena_id)
        r = await _post(api, f"/api/tournaments/{arena_id}/cancel", ann, reason=reason)
        assert r.status_code == 422, r.text
        assert (r.json()["error"], r.json()["field"]) == ("bad_reason", "reason")
        assert await _length(api, arena_id) == before

    async def test_cancelling_once_the_clock_ran_out_is_over_and_the_podium_stands(
        self, api: Api
    ) -> None:
        """The clock ran out (the end not yet recorded) with a match still running: the
        creator's cancel is 409 `arena_over`; the match is scored when it ends and the
        arena finishes with its podium."""
        ann = await api.player("ann")
        created = await _post(api, "/api/tournaments", ann, name="Mine", starts_in=0)
        arena_id = created.json()["tournament_id"]
        players = [await api.player(f"p{i}") for i in range(2)]
        for player in players:
            assert (await _join(api, arena_id, player)).status_code == 200
        await _here(api, *players)
        arenas = _arenas(api)
        table = (await arenas.tick(arena_id)).paired[0]
        ends_at = (await arenas.state(arena_id)).ends_at
        arenas.clock = lambda: ends_at + 1
        r = await _post(api, f"/api/tournaments/{arena_id}/cancel", ann, reason="too late")
        assert r.status_code == 409 and r.json()["error"] == "arena_over", r.text
        await api.play_to_end(table.match_id, [_by_id(players)[p] for p in table.players])
        assert (await arenas.tick(arena_id)).scored == 1
        view = (await api.call("GET", f"/api/tournaments/{arena_id}")).json()
        assert view["status"] == "finished" and view["cancelled"] is None
        assert [line["rank"] for line in view["podium"]] == [1, 2]

    async def test_a_player_paused_from_ranked_play_cannot_join(self, api: Api) -> None:
        """Three ranked abandons today (the ranking consumer's rows): 403 with until."""
        arena_id = await _arena(api)
        lea = await api.player("lea")
        async with api.engine.begin() as conn:
            for i in range(3):
                await conn.execute(
                    sa.text(
                        "INSERT INTO reputation_matches VALUES (:p, :m, :i, now(), true, true)"
                    ),
                    {"p": lea["id"], "m": f"match-left-{i}", "i": i},
                )
        before = await _length(api, arena_id)
        r = await _join(api, arena_id, lea)
        assert r.status_code == 403, r.text
        body = r.json()
        assert body["error"] == "ranked_paused" and body["until"]
        assert "3 ranked matches" in body["detail"]
        assert await _length(api, arena_id) == before

    async def test_a_player_waiting_in_a_pool_cannot_join(self, api: Api) -> None:
        """One place at a time: a quick-play entry refuses the join, and the reverse."""
        arena_id = await _arena(api)
        ann, bob = await api.player("ann"), await api.player("bob")
        await _post(api, "/api/pools/2-casual/entry", ann)
        r = await _join(api, arena_id, ann)
        assert r.status_code == 409 and r.json()["error"] == "seated_elsewhere"
        await _join(api, arena_id, bob)
        r = await _post(api, "/api/pools/2-casual/entry", bob)
        assert r.status_code == 409 and r.json()["error"] == "seated_elsewhere"
