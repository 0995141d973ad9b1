"""Quick play through the service (docs/pools.md): entering and leaving over HTTP, the
pairing pass opening ordinary started parties, presence and its grace, the lobby socket's
pool frames, two instances pairing the same pools, and bad input changing nothing.

The pairing passes of the `api` app are off: tests run `pools.pair` themselves, with a
`now` they choose, on the app's own service (same database, same code)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import sqlalchemy as sa

from domain import pool as pl
from services.match.parts import MatchParts
from services.match.pools.service import KINDS, Pools
from tests.services.conftest import Api
from tests.services.match.test_live import Instance, _client, _settings
from tests.services.match.test_sockets import _socket
from tests.waiting import wait_until

pytestmark = pytest.mark.anyio


def _service(api: Api) -> MatchParts:
    service: MatchParts = api.client.app.state.parts
    return service


def _pools(api: Api) -> Pools:
    return _service(api).pools


async def _enter(api: Api, player: dict[str, str], pool: str, **body: Any) -> httpx.Response:
    response: httpx.Response = await api.call(
        "POST", f"/api/pools/{pool}/entry", json=body, headers=api.h(player)
    )
    return response


async def _here(api: Api, *players: dict[str, str]) -> None:
    """The players' lobby sockets are connected (as a socket's hello records it)."""
    for player in players:
        await _service(api).lobby.hold(player["id"])


async def _events(api: Api, stream: str) -> list[tuple[str, dict[str, Any]]]:
    async with api.engine.connect() as conn:
        rows = await conn.execute(
            sa.text("SELECT type, data FROM events WHERE stream_id = :s ORDER BY stream_version"),
            {"s": stream},
        )
        return [(row.type, row.data) for row in rows]


class TestEntering:
    async def test_an_entry_says_the_wait_and_the_counts_show_it(self, api: Api) -> None:
        """A casual entry waits 10 s for CPUs unless told; listPools counts it."""
        ann = await api.player("ann")
        r = await _enter(api, ann, "4-casual")
        assert r.status_code == 201, r.text
        body = r.json()
        assert body["pool"] == "4-casual" and body["cpu_after"] == 10 and body["window"] is None
        assert body["rating"] == 1500.0 and body["waiting"] == 1
        assert abs(body["entered_at"] - time.time()) < 60
        counts = (await api.call("GET", "/api/pools")).json()
        waiting = {p["pool"]: p["waiting"] for p in counts["pools"]}
        assert waiting == {"2-casual": 0, "2-ranked": 0, "4-casual": 1, "4-ranked": 0}

    async def test_a_ranked_entry_shows_its_window(self, api: Api) -> None:
        """A ranked entry is people only and says the rating range it accepts."""
        ann = await api.player("ann")
        body = (await _enter(api, ann, "2-ranked")).json()
        assert body["cpu_after"] is None and body["window"] == pl.WINDOW_START

    async def test_leaving_ends_the_wait(self, api: Api) -> None:
        """DELETE leaves the pool: 204, and the pool's stream says `left`."""
        ann = await api.player("ann")
        await _enter(api, ann, "2-casual", cpu_after=None)
        r = await api.call("DELETE", "/api/pools/2-casual/entry", headers=api.h(ann))
        assert r.status_code == 204, r.text
        assert [t for t, _ in await _events(api, "pool-2-casual")] == ["PoolEntered", "PoolLeft"]


class TestBadInput:
    @pytest.fixture
    async def ann(self, api: Api) -> dict[str, str]:
        player = await api.player("ann")
        assert (await _enter(api, player, "2-casual", cpu_after=30)).status_code == 201
        return player

    async def _refused(self, api: Api, response: httpx.Response, status: int, error: str) -> None:
        assert response.status_code == status, response.text
        assert response.json()["error"] == error, response.text
        counts = [len(await _events(api, kind.stream)) for kind in KINDS.values()]
        assert counts == [1, 0, 0, 0]  # ann's entry, nothing more

    async def test_entering_twice_is_refused(self, api: Api, ann: dict[str, str]) -> None:
        """The same pool again: 409 already_waiting."""
        await self._refused(api, await _enter(api, ann, "2-casual"), 409, "already_waiting")

    async def test_entering_another_pool_is_refused(self, api: Api, ann: dict[str, str]) -> None:
        """Another pool while waiting: 409 already_waiting, naming the pool."""
        r = await _enter(api, ann, "4-ranked")
        await self._refused(api, r, 409, "already_waiting")
        assert "2-casual" in r.json()["detail"]

    async def test_leaving_a_pool_one_is_not_in(self, api: Api, ann: dict[str, str]) -> None:
        """DELETE where one does not wait: 409 not_waiting."""
        r = await api.call("DELETE", "/api/pools/4-casual/entry", headers=api.h(ann))
        await self._refused(api, r, 409, "not_waiting")

    async def test_an_unknown_pool_is_not_found(self, api: Api, ann: dict[str, str]) -> None:
        """A pool name outside the four: 404 for entering and leaving."""
        await self._refused(api, await _enter(api, ann, "3-casual"), 404, "not_found")
        r = await api.call("DELETE", "/api/pools/x/entry", headers=api.h(ann))
        await self._refused(api, r, 404, "not_found")

    async def test_a_cpu_wait_in_a_ranked_pool_is_invalid(
        self, api: Api, ann: dict[str, str]
    ) -> None:
        """Ranked pools are people only: a CPU wait is 422 bad_wait."""
        bob = await api.player("bob")
        await self._refused(api, await _enter(api, bob, "2-ranked", cpu_after=10), 422, "bad_wait")

    @pytest.mark.parametrize(
        "body", [{"cpu_after": 20}, {"cpu_after": "10"}, {"seats": 2}, {"client_seed": "\u00e9"}]
    )
    async def test_wrong_bodies_are_refused(
        self, api: Api, ann: dict[str, str], body: dict[str, Any]
    ) -> None:
        """A wait not offered, a wrong type, an unknown field, a bad seed: 400/422."""
        bob = await api.player("bob")
        r = await _enter(api, bob, "4-casual", **body)
        assert r.status_code in (400, 422), r.text
        await self._refused(api, r, r.status_code, r.json()["error"])

    async def test_no_token_is_unauthorized(self, api: Api, ann: dict[str, str]) -> None:
        """Without the guest's token: 401."""
        r = await api.call("POST", "/api/pools/2-casual/entry", json={})
        await self._refused(api, r, 401, "unauthorized")

    async def test_a_player_at_an_open_party_is_refused(
        self, api: Api, ann: dict[str, str]
    ) -> None:
        """Sitting at an open party: 409 seated_elsewhere (leave it first)."""
        bob = await api.player("bob")
        await api.party(bob, seats=2)
        await self._refused(api, await _enter(api, bob, "4-casual"), 409, "seated_elsewhere")

    async def test_a_player_in_a_running_match_is_refused(
        self, api: Api, ann: dict[str, str]
    ) -> None:
        """Playing a match that has not ended: 409 seated_elsewhere."""
        _match, (alice, _bob), _party = await api.duel()
        await self._refused(api, await _enter(api, alice, "4-casual"), 409, "seated_elsewhere")

    async def test_malformed_json_is_refused(self, api: Api, ann: dict[str, str]) -> None:
        """A body that is not JSON: 400 and nothing appended."""
        bob = await api.player("bob")
        r = await api.call(
            "POST",
            "/api/pools/4-casual/entry",
            content=b"{not json",
            headers={**api.h(bob), "Content-Type": "application/json"},
        )
        await self._refused(api, r, 400, r.json()["error"])


class TestRush:
    async def test_one_player_entering_two_pools_at_once_waits_in_one(self, api: Api) -> None:
        """Two tabs entering two pools at the same moment: one entry, one already_waiting."""
        ann = await api.player("ann")
        a, b = await asyncio.gather(
            _enter(api, ann, "2-casual"), _enter(api, ann, "4-casual", cpu_after=30)
        )
        assert sorted([a.status_code, b.status_code]) == [201, 409], (a.text, b.text)
        refused = a if a.status_code == 409 else b
        assert refused.json()["error"] == "already_waiting"
        entered = [len(await _events(api, kind.stream)) for kind in KINDS.values()]
        assert sorted(entered) == [0, 0, 0, 1]

    async def test_many_entries_at_once_each_get_their_own_answer(self, api: Api) -> None:
        """Fifteen guests entering one pool together (batched): each 201 once, one
        refusal for the one who entered twice, fifteen entries in the stream."""
        guests = [await api.player(f"g{i}") for i in range(15)]
        answers = await asyncio.gather(
            *(_enter(api, g, "4-casual", cpu_after=None) for g in guests),
            _enter(api, guests[0], "4-casual", cpu_after=None),
        )
        codes = [r.status_code for r in answers]
        assert codes.count(201) == 15 and codes.count(409) == 1, codes
        assert sorted(r.json()["waiting"] for r in answers if r.status_code == 201) == list(
            range(1, 16)
        )
        assert [t for t, _ in await _events(api, "pool-4-casual")] == ["PoolEntered"] * 15


class TestPairing:
    async def test_two_casual_players_sit_at_one_started_party(self, api: Api) -> None:
        """Two waiting in 2-casual: one TableFormed, an ordinary party with the site's
        rules and a 30 s turn limit, started, the longest waiting in seat 0; played to
        the end, it plays again."""
        ann, bob = await api.player("ann"), await api.player("bob")
        await _enter(api, ann, "2-casual", client_seed="ann-seed")
        await _enter(api, bob, "2-casual", client_seed="bob-seed")
        await _here(api, ann, bob)
        (table,) = await _pools(api).pair(KINDS["2-casual"])
        party = (await api.call("GET", f"/api/parties/{table.party_id}")).json()
        assert party["status"] == "playing" and party["match_id"] == table.match_id
        assert [s["player_id"] for s in party["seats"]] == [ann["id"], bob["id"]]
        assert party["turn_limit"] == pl.POOL_TURN_LIMIT and party["ranked"] is False
        match = await api.match(table.match_id)
        assert match["status"] == "playing"
        assert (await api.call("GET", "/api/pools")).json()["pools"][0]["waiting"] == 0
        # An ordinary party: the match plays, and ends, over the usual API; もう一度 keeps
        # the same table.
        assert (await api.play_to_end(table.match_id, [ann, bob]))["status"] == "finished"
        url = f"/api/parties/{table.party_id}/rematch"
        again = await api.call("POST", url, headers=api.h(bob))
        assert again.status_code == 201, again.text
        assert again.json()["party"]["game"] == 2

    async def test_a_lone_casual_player_gets_cpus_after_the_wait(self, api: Api) -> None:
        """Alone in 4-casual: nothing before the chosen 10 s, three CPUs after."""
        ann = await api.player("ann")
        entered = (await _enter(api, ann, "4-casual", cpu_after=10)).json()["entered_at"]
        await _here(api, ann)
        kind = KINDS["4-casual"]
        assert await _pools(api).pair(kind, now=entered + 9.0) == []
        (table,) = await _pools(api).pair(kind, now=entered + 10.0)
        assert table.cpus == 3 and table.cpu_level == "normal"
        party = (await api.call("GET", f"/api/parties/{table.party_id}")).json()
        assert [s["cpu"] for s in party["seats"]] == [None, "normal", "normal", "normal"]

    async def test_an_absent_player_is_not_seated_and_a_gone_one_is_left(self, api: Api) -> None:
        """A player whose lobby is not connected is passed over, then left as `gone`
        once the grace is over."""
        ann, bob, cat = [await api.player(n) for n in ("ann", "bob", "cat")]
        for player in (ann, bob, cat):
            await _enter(api, player, "2-casual", cpu_after=None)
        await _here(api, bob, cat)  # ann's lobby never connected
        now = time.time()
        (table,) = await _pools(api).pair(KINDS["2-casual"], now=now)
        assert [p.player_id for p in table.players] == [bob["id"], cat["id"]]
        grace = _service(api).settings.pool_grace
        assert await _pools(api).pair(KINDS["2-casual"], now=now + grace + 1) == []
        types = [t for t, _ in await _events(api, "pool-2-casual")]
        assert types[-1] == "PoolLeft"
        assert (await _events(api, "pool-2-casual"))[-1][1]["reason"] == "gone"

    async def test_ranked_players_far_apart_wait_for_their_windows(self, api: Api) -> None:
        """Two ranked players of one rating sit together at once."""
        ann, bob = await api.player("ann"), await api.player("bob")
        await _enter(api, ann, "2-ranked")
        await _enter(api, bob, "2-ranked")
        await _here(api, ann, bob)
        (table,) = await _pools(api).pair(KINDS["2-ranked"])
        party = (await api.call("GET", f"/api/parties/{table.party_id}")).json()
        assert party["ranked"] is True and all(s["cpu"] is None for s in party["seats"])


@pytest.fixture
def paired_instances(database_url: str, tmp_path: Path) -> Iterator[tuple[Instance, Instance]]:
    """Instances A and B of the match service, both running pairing passes."""
    settings = _settings(tmp_path, database_url, pairing=True, rate_limit=0)
    with Instance(settings) as a, Instance(settings) as b:
        yield a, b


async def _guest(http: httpx.AsyncClient, name: str) -> dict[str, str]:
    body = (await http.post("/api/players", json={"name": name})).json()
    return {"id": body["id"], "token": body["token"]}


async def test_two_players_through_two_instances_are_seated_together(
    paired_instances: tuple[Instance, Instance],
) -> None:
    """One guest's lobby on each instance, both enter 2-ranked: each socket says the wait,
    then `seated` at the same party and match."""
    a, b = paired_instances
    async with (
        _client(f"http://127.0.0.1:{a.port}") as ha,
        _client(f"http://127.0.0.1:{b.port}") as hb,
    ):
        ann, bob = await _guest(ha, "ann"), await _guest(hb, "bob")
        async with (
            _socket(f"ws://127.0.0.1:{a.port}/ws/lobby", ann["token"]) as la,
            _socket(f"ws://127.0.0.1:{b.port}/ws/lobby", bob["token"]) as lb,
        ):
            await la.until(lambda f: f["type"] == "pool" and f["pool"] is None)
            auth = {"Authorization": f"Bearer {ann['token']}"}
            assert (await ha.post("/api/pools/2-ranked/entry", json={}, headers=auth)).is_success
            mine = await la.until(lambda f: f["type"] == "pool" and f["pool"] == "2-ranked")
            assert mine["waiting"] == 1 and mine["window"] == pl.WINDOW_START
            auth = {"Authorization": f"Bearer {bob['token']}"}
            assert (await hb.post("/api/pools/2-ranked/entry", json={}, headers=auth)).is_success
            seated_a = await la.until(lambda f: f["type"] == "seated")
            seated_b = await lb.until(lambda f: f["type"] == "seated")
            assert seated_a == seated_b and seated_a["pool"] == "2-ranked"
            party = (await ha.get(f"/api/parties/{seated_a['party_id']}")).json()
            assert {s["player_id"] for s in party["seats"]} == {ann["id"], bob["id"]}
            await la.until(lambda f: f["type"] == "pool" and f["pool"] is None)


async def test_many_players_through_two_instances_are_each_seated_once(
    paired_instances: tuple[Instance, Instance],
) -> None:
    """Twelve guests, lobbies spread over both instances, all entering 2-casual at once:
    everyone is seated, at exactly one table, each table full."""
    a, b = paired_instances
    ports = [a.port, b.port]
    async with _client(f"http://127.0.0.1:{a.port}") as http:
        guests = [await _guest(http, f"g{i}") for i in range(12)]
        sockets = [
            _socket(f"ws://127.0.0.1:{ports[i % 2]}/ws/lobby", g["token"])
            for i, g in enumerate(guests)
        ]
        lobbies = [await s.__aenter__() for s in sockets]
        try:

            async def enter(i: int, guest: dict[str, str]) -> int:
                async with _client(f"http://127.0.0.1:{ports[(i + 1) % 2]}") as own:
                    auth = {"Authorization": f"Bearer {guest['token']}"}
                    body = {"cpu_after": None}
                    r = await own.post("/api/pools/2-casual/entry", json=body, headers=auth)
                    return r.status_code

            statuses = await asyncio.gather(*(enter(i, g) for i, g in enumerate(guests)))
            assert statuses == [201] * 12
            seated = [await lobby.until(lambda f: f["type"] == "seated") for lobby in lobbies]
        finally:
            for s in sockets:
                await s.__aexit__(None, None, None)
        tables: dict[str, list[str]] = {}
        for guest, frame in zip(guests, seated, strict=True):
            tables.setdefault(frame["party_id"], []).append(guest["id"])
        assert sorted(len(p) for p in tables.values()) == [2] * 6
        for party_id, players in tables.items():
            party = (await http.get(f"/api/parties/{party_id}")).json()
            assert sorted(s["player_id"] for s in party["seats"]) == sorted(players)

        async def pool_empty() -> bool:
            counts = (await http.get("/api/pools")).json()
            return all(p["waiting"] == 0 for p in counts["pools"])

        await wait_until(pool_empty, what="every guest out of the pool")
