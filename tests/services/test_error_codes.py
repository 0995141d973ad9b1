"""The error codes each operation's OpenAPI document lists are the codes the service answers.

Both services run in process on the test's (real, migrated) database. Every request below
goes through `Probe`, which finds the request's operation in the service's own document and
keeps each error it gets back: (operation, status, code).

- Every error any request here gets is listed for its operation, under its status (the
  document's enum of `error` for that status); and every code is one of `ERROR_CODES`,
  under the status it has there.
- Every code an operation lists is answered here: for each operation of both documents,
  listed and answered are the same set, but for `ELSEWHERE` (the rate limiter's, a body
  too slow, an unreachable or too slow database: a server under load or a database
  stopped, with their own tests) and `NOT_ANSWERED_HERE` (races, a turn or an arena's
  clock run out, a database role: 33 codes of 19 operations, each with the test that
  answers it, or "untested").
- The edge's codes are asked of every operation of their kind (a bad body of every route
  that reads one, no token of every route that asks for one, a bad query value, an
  unknown id of every route with one), so no operation of either document escapes them.

schemathesis (tests/services/test_schemathesis.py) holds the same enums against its
generated requests: an error code not listed for its operation fails its schema check.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from litestar.testing import AsyncTestClient
from sqlalchemy.ext.asyncio import AsyncEngine

from domain.errors import _REJECTION_KINDS, rejection_error
from services.match.app import create_app as match_app
from services.ranking.app import create_app as ranking_app
from services.shared.error_codes import ERROR_CODES
from services.shared.errors import status_of
from services.shared.eventstore import EventStore
from services.shared.openapi_docs import error_codes_of
from services.shared.settings import Settings
from tests.services.match.test_commands import stage_a_block
from tests.services.ranking.analysed_matches import Seat, insert_analysis
from tests.services.ranking.finished_matches import write_match

pytestmark = pytest.mark.anyio

OPERATOR = "op-secret"
METHODS = ("get", "put", "post", "delete", "patch")
BODY_METHODS = ("post", "put", "patch", "delete")
# Answered only by a server under load or a database away: tests/services/shared/
# test_limits.py (429 `too_many_requests`, 408 `request_timeout`), tests/services/
# test_outage.py (503 `database_unavailable`) and tests/services/test_statement_timeout.py
# (503 `database_busy`).
ELSEWHERE = frozenset(
    {"too_many_requests", "request_timeout", "database_unavailable", "database_busy"}
)
# Listed codes no request here answers, by operation, each with where it is answered (or
# "untested"). Nothing else is left out, and an entry that a request here does answer (or
# that is not listed) fails the test: the list only shrinks.
# `conflict`, a command that lost a race to another: tests/services/match/test_commands.py
# (rolls at once), test_sockets.py; for the other commands untested (a race to stage).
_RACE = "conflict"
# The same guest's key on another request of the same stream: test_commands.py (roll).
_KEY = "idempotency_key_reused"
NOT_ANSWERED_HERE: dict[str, set[str]] = {
    "addCpu": {_RACE},
    "joinParty": {_RACE},
    "leaveParty": {_RACE},
    "removeCpu": {_RACE},
    "changePartySettings": {_RACE},
    "startParty": {_RACE},
    "sendStamp": {_RACE, _KEY},  # untested
    "leaveMatch": {_RACE},
    "reclaimSeat": {_RACE},
    # `cpu_playing`, a timed-out turn: tests/services/match/test_sockets.py
    "rollDie": {_RACE, _KEY, "cpu_playing"},
    "movePiece": {_RACE, "cpu_playing"},
    # `ranked_match`: tests/services/match/test_play.py; `seat_finished` untested (a
    # finished seat of a match that plays on, conceding)
    "concedeMatch": {_RACE, "ranked_match", "seat_finished"},
    # `arena_table`: tests/services/match/test_arenas.py
    "rematchParty": {_RACE, _KEY, "arena_table"},
    # `arena_over`, an arena whose clock ran out: tests/services/match/test_arenas.py
    "cancelTournament": {_RACE, "arena_over"},
    "joinTournament": {_RACE, "arena_over"},
    "pauseTournament": {_RACE, "arena_over"},
    "continueTournament": {_RACE, "arena_over"},
    # the ranking service's own answers passed on: tests/services/match/
    # test_analysis_headers.py (`not_analysed`), test_ratings_proxy.py (`invalid`)
    "proxyRatings": {"not_analysed", "invalid"},
    # a recompute already running (untested), the app role's: tests/services/ranking/test_app.py
    "recomputeRatings": {_RACE, "recompute_not_permitted"},
}
# A body with what each operation requires, so that what is asked of it is the one thing
# wrong (a missing token, an unknown id), not the body.
BODIES: dict[str, Any] = {
    "movePiece": {"piece": 0},
    "sendStamp": {"stamp": "nice"},
    "renameMe": {"name": "zed"},
    "createPlayer": {"name": "zed"},
    "reportPlayer": {"match_id": str(uuid.uuid4()), "player_id": "x", "reason": "other"},
    "decideReport": {"decision": "dismiss"},
    "createTournament": {"name": "t", "starts_in": 60},
    "cancelTournament": {"reason": "because"},
    "addCpu": {"level": "easy"},
    "rulesMoves": {},
}


class Probe:
    """A service's client that keeps each error answered, by the operation asked."""

    def __init__(self, name: str, client: AsyncTestClient[Any], document: dict[str, Any]):
        self.name = name
        self.client = client
        self.document = document
        self.operations: dict[tuple[str, str], dict[str, Any]] = {
            (method, path): op
            for path, item in document["paths"].items()
            for method, op in item.items()
            if method in METHODS
        }
        # Literal segments before parameters: /api/matches/live before /{match_id}.
        self._routes = sorted(
            (
                (
                    re.compile(
                        "^"
                        + re.sub(
                            r"\{(\w+)\}",
                            lambda m: ".+" if m.group(1) == "path" else "[^/]+",
                            path,
                        )
                        + "$"
                    ),
                    method,
                    path,
                )
                for method, path in self.operations
            ),
            key=lambda r: (r[2].count("{"), -len(r[2])),
        )
        self.answered: set[tuple[str, int, str]] = set()

    def operation_of(self, method: str, url: str) -> dict[str, Any]:
        path = url.split("?", 1)[0]
        for pattern, m, _ in self._routes:
            if m == method.lower() and pattern.match(path):
                return self.operations[(m, _)]
        raise AssertionError(f"{self.name}: no operation for {method} {path}")

    async def call(self, method: str, url: str, **kwargs: Any) -> Any:
        operation = self.operation_of(method, url)
        r = await self.client.request(method, url, **kwargs)
        if r.status_code >= 400:
            body = r.json()
            self.answered.add((operation["operationId"], r.status_code, body["error"]))
        return r

    async def expect(self, status: int, code: str, method: str, url: str, **kwargs: Any) -> Any:
        r = await self.call(method, url, **kwargs)
        assert (r.status_code, r.json().get("error")) == (status, code), (method, url, r.text)
        return r

    def listed(self) -> dict[str, dict[int, set[str]]]:
        return {
            op["operationId"]: {int(s): codes for s, codes in error_codes_of(op).items()}
            for op in self.operations.values()
        }


@pytest.fixture
async def probes(engine: AsyncEngine, tmp_path: Path) -> AsyncIterator[dict[str, Probe]]:
    """Both services in process on the test's database (no ranking service behind the
    match service's proxy: its own 503)."""
    # No budget of new guests: the test makes more than one address may
    # (tests/services/shared/test_limits.py tests the budgets).
    settings = Settings(
        data_dir=tmp_path,
        cpu_delay=0,
        scheduler=False,
        pairing=False,
        operator_token=OPERATOR,
        guest_limit=0,
    )
    apps = {
        "match": match_app(settings, engine=engine),
        "ranking": ranking_app(settings, engine=engine, consume=False),
    }
    async with AsyncTestClient(apps["match"]) as m, AsyncTestClient(apps["ranking"]) as r:
        probes = {}
        for name, client in (("match", m), ("ranking", r)):
            document = (await client.get("/schema/openapi.json")).json()
            probes[name] = Probe(name, client, document)
        yield probes


def _url(path: str, ids: dict[str, str]) -> str:
    return re.sub(r"\{(\w+)\}", lambda m: ids.get(m.group(1), str(uuid.uuid4())), path)


async def _edge(probe: Probe, token: str) -> None:
    """What every operation of a kind answers: a bad body, no token, a bad query value,
    an unknown id."""
    big = b'{"x": "' + b" " * (20 * 1024) + b'"}'
    for (method, path), op in probe.operations.items():
        op_id = op["operationId"]
        url = _url(path, {"seat": "1", "path": "players/nobody"})
        operator = op.get("security") == [{"operator": []}]
        auth = {"Authorization": f"Bearer {OPERATOR if operator else token}"}
        if method in BODY_METHODS:
            json_type = {"content-type": "application/json"}
            await probe.call(method, url, content=b"{", headers={**auth, **json_type})
            await probe.call(
                method, url, content=b"{}", headers={**auth, "content-type": "text/plain"}
            )
            await probe.call(method, url, content=big, headers={**auth, **json_type})
            await probe.call(method, url, json={"zz_unknown": 1}, headers=auth)
        body = {"json": BODIES.get(op_id, {})} if method in BODY_METHODS else {}
        if op.get("security"):
            await probe.call(method, url, **body)
        for parameter in op.get("parameters", []):
            schema = parameter.get("schema", {})
            kinds = {schema.get("type")} | {s.get("type") for s in schema.get("oneOf", [])}
            if parameter["in"] == "query" and kinds & {"integer", "number"}:
                await probe.call(method, f"{url}?{parameter['name']}=x", headers=auth, **body)
                break
        if "404" in op["responses"] and "{" in path and op_id != "proxyRatings":
            await probe.call(method, url, headers=auth, **body)


async def test_each_code_has_its_status() -> None:
    """A decider's rejection code is answered with the status `ERROR_CODES` gives it."""
    for code, kind in _REJECTION_KINDS.items():
        if code in ERROR_CODES:
            assert status_of(kind("x", code=code)) == ERROR_CODES[code].status, code
    for code, (status, _) in ERROR_CODES.items():
        if status == 409:
            assert status_of(rejection_error(code, "x")) == 409, code


async def test_every_code_listed_is_answered_and_every_answer_listed(
    probes: dict[str, Probe], engine: AsyncEngine, pg_store: EventStore
) -> None:
    """See the module docstring."""
    match, ranking = probes["match"], probes["ranking"]
    guest = (await match.client.post("/api/players", json={"name": "probe"})).json()
    for probe in probes.values():
        await _edge(probe, guest["token"])

    # Pools.
    def h(player: dict[str, Any]) -> dict[str, str]:
        return {"Authorization": f"Bearer {player['token']}"}

    async def player(name: str) -> dict[str, Any]:
        made: dict[str, Any] = (
            await match.call("POST", "/api/players", json={"name": name})
        ).json()
        return made

    ann, bob, cat = await player("ann"), await player("bob"), await player("cat")
    entry = "/api/pools/2-casual/entry"
    await match.expect(
        404, "not_found", "POST", "/api/pools/9-casual/entry", json={}, headers=h(ann)
    )
    await match.expect(404, "not_found", "DELETE", "/api/pools/9-casual/entry", headers=h(ann))
    await match.expect(
        422, "bad_wait", "POST", "/api/pools/2-ranked/entry", json={"cpu_after": 10}, headers=h(ann)
    )
    await match.expect(409, "not_waiting", "DELETE", entry, headers=h(ann))
    assert (await match.call("POST", entry, json={}, headers=h(ann))).status_code == 201
    await match.expect(409, "already_waiting", "POST", entry, json={}, headers=h(ann))
    party = (await match.call("POST", "/api/parties", json={"seats": 2}, headers=h(bob))).json()
    await match.expect(409, "seated_elsewhere", "POST", entry, json={}, headers=h(bob))
    dan = await player("dan")  # paused too, and seated nowhere
    async with engine.begin() as conn:
        for i in range(6):
            await conn.execute(
                sa.text("INSERT INTO reputation_matches VALUES (:p, :m, :i, now(), true, true)"),
                {"p": (cat, dan)[i % 2]["id"], "m": f"match-left-{i}", "i": i},
            )
    r = await match.expect(
        403, "ranked_paused", "POST", "/api/pools/2-ranked/entry", json={}, headers=h(cat)
    )
    assert r.json()["until"]

    # A match: its reads and a player's commands.
    await match.call("POST", f"/api/parties/{party['id']}/join", json={}, headers=h(cat))
    started = await match.call("POST", f"/api/parties/{party['id']}/start", headers=h(bob))
    match_id = started.json()["match_id"]
    state = (await match.call("GET", f"/api/matches/{match_id}")).json()
    first = bob if state["turn"] == 0 else cat
    other = cat if first is bob else bob
    base = f"/api/matches/{match_id}"
    await match.expect(422, "invalid", "GET", f"{base}/events?from=-1")
    await match.expect(403, "not_your_seat", "POST", f"{base}/roll", headers=h(ann))
    await match.expect(
        403, "not_your_seat", "POST", f"{base}/move", json={"piece": 0}, headers=h(ann)
    )
    await match.expect(409, "not_your_turn", "POST", f"{base}/roll", headers=h(other))
    await match.expect(
        409, "not_your_turn", "POST", f"{base}/move", json={"piece": 0}, headers=h(other)
    )
    await match.expect(
        409, "roll_first", "POST", f"{base}/move", json={"piece": 0}, headers=h(first)
    )
    key = {"Idempotency-Key": "k-" + uuid.uuid4().hex}
    await match.call("POST", f"{base}/roll", headers={**h(first), **key})
    await match.expect(
        422,
        "idempotency_key_reused",
        "POST",
        f"{base}/move",
        json={"piece": 0},
        headers={**h(first), **key},
    )

    # The analysis and the public ratings (ranking), and the proxy without a ranking
    # service behind it.
    analysed = await insert_analysis(engine, [Seat("ann"), Seat("ben")])
    assert (await ranking.call("GET", f"/api/ratings/analysis/{analysed}")).status_code == 200
    stream = await write_match(engine, pg_store, ["ann", "ben"], [1, 2])
    pending = stream.removeprefix("match-")
    await ranking.expect(404, "not_analysed", "GET", f"/api/ratings/analysis/{pending}")
    await ranking.expect(422, "invalid", "GET", "/api/ratings/analysis/not-a-uuid")
    await ranking.expect(422, "invalid", "GET", "/api/ratings/matches/not-a-uuid")
    await match.expect(404, "not_found", "GET", "/api/ratings/../ranking/lag")
    await match.expect(503, "ranking_unavailable", "GET", "/api/ratings/leaderboard")
    await match.expect(422, "invalid", "POST", "/api/players", json={"name": ""})
    await match.expect(422, "invalid", "PUT", "/api/players/me", json={"name": ""}, headers=h(ann))

    # An illegal move, on a position where a piece is blocked.
    duel_match, duel_players = await _blocked_duel(match, pg_store)
    duel = f"/api/matches/{duel_match}"
    await match.expect(
        422, "illegal_move", "POST", f"{duel}/move", json={"piece": 2}, headers=h(duel_players[0])
    )
    await match.expect(409, "move_first", "POST", f"{duel}/roll", headers=h(duel_players[0]))

    await _parties_and_commands(match, ranking)
    await _arenas(match, engine, {"waiting": ann, "paused": dan})
    await _keys(match)
    # A query string Litestar cannot read (found by schemathesis): 422 `invalid`, not the
    # body's 400 `malformed_json` (no body is read).
    odd = "?%C3%AA=Mu%F3%AC%B1%B6&%C3%AA=&%C3%AA=%C3%BF%C3%87"
    await match.expect(422, "invalid", "GET", f"/api/players/reputation{odd}")
    await ranking.expect(422, "invalid", "GET", f"/api/ratings/reputation{odd}")

    failures: list[str] = []
    for probe in probes.values():
        listed = probe.listed()
        for op_id, status, code in sorted(probe.answered):
            if code not in listed[op_id].get(status, set()):
                failures.append(f"{probe.name} {op_id}: {status} {code} answered, not listed")
            if ERROR_CODES.get(code, (None,))[0] != status:
                failures.append(f"{probe.name} {op_id}: {code} answered with {status}")
        for op_id, by_status in listed.items():
            codes = {c for cs in by_status.values() for c in cs} - ELSEWHERE
            answered = {c for o, _, c in probe.answered if o == op_id}
            left = NOT_ANSWERED_HERE.get(op_id, set())
            if codes - left != answered:
                failures.append(
                    f"{probe.name} {op_id}: listed, not answered {sorted(codes - left - answered)}"
                )
            if not left <= codes - answered:
                failures.append(
                    f"{probe.name} {op_id}: {sorted(left - (codes - answered))} "
                    "are answered (or not listed): not NOT_ANSWERED_HERE"
                )
    assert failures == []


async def _blocked_duel(match: Probe, store: EventStore) -> tuple[str, list[dict[str, Any]]]:
    """A standard duel whose seat 0 has rolled into a block (`stage_a_block`)."""
    players = [
        (await match.call("POST", "/api/players", json={"name": n})).json() for n in ("dee", "eve")
    ]
    h = [{"Authorization": f"Bearer {p['token']}"} for p in players]
    party = (
        await match.call(
            "POST", "/api/parties", json={"seats": 2, "rules": {"preset": "standard"}}, headers=h[0]
        )
    ).json()
    await match.call("POST", f"/api/parties/{party['id']}/join", json={}, headers=h[1])
    match_id = (await match.call("POST", f"/api/parties/{party['id']}/start", headers=h[0])).json()[
        "match_id"
    ]
    await stage_a_block(store, match_id)
    return match_id, players


async def _parties_and_commands(match: Probe, ranking: Probe) -> None:
    """A party's refusals before, at and after its start, then a player's commands'."""
    p1, p2, p3 = [
        (await match.call("POST", "/api/players", json={"name": n})).json()
        for n in ("hal", "ida", "jon")
    ]
    h1, h2, h3 = ({"Authorization": f"Bearer {p['token']}"} for p in (p1, p2, p3))
    nope = {"preset": "nope"}
    await match.expect(
        422, "bad_ruleset", "POST", "/api/parties", json={"seats": 2, "rules": nope}, headers=h1
    )
    party = (await match.call("POST", "/api/parties", json={"seats": 2}, headers=h1)).json()
    x = f"/api/parties/{party['id']}"
    await match.expect(409, "seats_empty", "POST", f"{x}/start", headers=h1)
    await match.expect(409, "not_started", "POST", f"{x}/rematch", headers=h1)
    await match.expect(409, "already_seated", "POST", f"{x}/join", json={}, headers=h1)
    await match.expect(422, "bad_seat", "POST", f"{x}/join", json={"seat": 3}, headers=h2)
    await match.expect(409, "seat_taken", "POST", f"{x}/join", json={"seat": 0}, headers=h2)
    await match.expect(403, "not_host", "POST", f"{x}/cpus", json={}, headers=h2)
    await match.expect(422, "bad_seat", "POST", f"{x}/cpus", json={"seat": 3}, headers=h1)
    await match.expect(409, "seat_taken", "POST", f"{x}/cpus", json={"seat": 0}, headers=h1)
    await match.expect(403, "not_host", "POST", f"{x}/cpus/0/remove", headers=h2)
    await match.expect(422, "bad_seat", "POST", f"{x}/cpus/3/remove", headers=h1)
    await match.expect(409, "not_a_cpu", "POST", f"{x}/cpus/0/remove", headers=h1)
    await match.expect(403, "not_host", "POST", f"{x}/settings", json={}, headers=h2)
    await match.expect(
        422, "bad_ruleset", "POST", f"{x}/settings", json={"rules": nope}, headers=h1
    )
    await match.expect(403, "not_host", "POST", f"{x}/start", headers=h2)
    await match.expect(403, "not_seated", "POST", f"{x}/leave", headers=h3)
    assert (await match.call("POST", f"{x}/join", json={}, headers=h2)).status_code == 200
    await match.expect(409, "party_full", "POST", f"{x}/join", json={}, headers=h3)
    await match.expect(409, "party_full", "POST", f"{x}/cpus", json={}, headers=h1)
    started = await match.call("POST", f"{x}/start", headers=h1)
    assert started.status_code == 201, started.text
    m = f"/api/matches/{started.json()['match_id']}"
    await match.expect(409, "not_open", "POST", f"{x}/join", json={}, headers=h3)
    await match.expect(409, "not_open", "POST", f"{x}/leave", headers=h2)
    await match.expect(409, "not_open", "POST", f"{x}/cpus", json={}, headers=h1)
    await match.expect(409, "not_open", "POST", f"{x}/cpus/1/remove", headers=h1)
    await match.expect(
        409, "not_open", "POST", f"{x}/settings", json={"turn_limit": 30}, headers=h1
    )
    await match.expect(409, "not_open", "POST", f"{x}/start", headers=h1)
    await match.expect(403, "not_seated", "POST", f"{x}/rematch", headers=h3)
    await match.expect(409, "match_running", "POST", f"{x}/rematch", headers=h1)

    # A player's commands on that match (seat 0: hal, seat 1: ida).
    for command in ("reclaim", "leave", "concede"):
        await match.expect(403, "not_your_seat", "POST", f"{m}/{command}", headers=h3)
    await match.expect(409, "not_stood_in", "POST", f"{m}/reclaim", headers=h1)
    await match.expect(403, "spectator", "POST", f"{m}/stamps", json={"stamp": "nice"}, headers=h3)
    assert (
        await match.call("POST", f"{m}/stamps", json={"stamp": "nice"}, headers=h1)
    ).status_code == 201
    await match.expect(429, "too_soon", "POST", f"{m}/stamps", json={"stamp": "nice"}, headers=h1)
    await match.expect(
        422, "unknown_stamp", "POST", f"{m}/stamps", json={"stamp": "zzz"}, headers=h2
    )
    await match.call("POST", f"{x}/settings", json={"stamps": False}, headers=h1)
    await match.expect(409, "stamps_off", "POST", f"{m}/stamps", json={"stamp": "nice"}, headers=h2)
    assert (await match.call("POST", f"{m}/leave", headers=h2)).status_code == 200
    await match.expect(409, "already_stood_in", "POST", f"{m}/leave", headers=h2)
    await match.expect(409, "stood_in", "POST", f"{m}/roll", headers=h2)
    await match.expect(409, "stood_in", "POST", f"{m}/move", json={"piece": 0}, headers=h2)
    await match.expect(409, "not_against_cpus", "POST", f"{m}/concede", headers=h1)

    # Against a CPU: conceded, the match is over.
    p4 = (await match.call("POST", "/api/players", json={"name": "kim"})).json()
    h4 = {"Authorization": f"Bearer {p4['token']}"}
    solo = (await match.call("POST", "/api/parties", json={"seats": 2}, headers=h4)).json()
    await match.call("POST", f"/api/parties/{solo['id']}/cpus", json={}, headers=h4)
    done = (await match.call("POST", f"/api/parties/{solo['id']}/start", headers=h4)).json()
    d = f"/api/matches/{done['match_id']}"
    assert (await match.call("POST", f"{d}/concede", headers=h4)).status_code == 200
    for command in ("roll", "reclaim", "leave", "concede"):
        await match.expect(409, "match_finished", "POST", f"{d}/{command}", headers=h4)
    await match.expect(409, "match_finished", "POST", f"{d}/move", json={"piece": 0}, headers=h4)

    # Reports of a player of that match, and the operator's decision.
    mid = m.rsplit("/", 1)[1]
    report = {"match_id": mid, "player_id": p2["id"], "reason": "other"}
    await match.expect(401, "unauthorized", "POST", "/api/reports", json=report)
    await match.expect(403, "not_in_match", "POST", "/api/reports", json=report, headers=h3)
    await match.expect(
        422,
        "self_report",
        "POST",
        "/api/reports",
        json={**report, "player_id": p1["id"]},
        headers=h1,
    )
    await match.expect(
        422, "stranger", "POST", "/api/reports", json={**report, "player_id": p3["id"]}, headers=h1
    )
    await match.expect(
        404,
        "not_found",
        "POST",
        "/api/reports",
        json={**report, "match_id": str(uuid.uuid4())},
        headers=h1,
    )
    filed = await match.call("POST", "/api/reports", json=report, headers=h1)
    assert filed.status_code == 201, filed.text
    await match.expect(409, "already_reported", "POST", "/api/reports", json=report, headers=h1)
    op = {"Authorization": f"Bearer {OPERATOR}"}
    decision = f"/api/operator/reports/{filed.json()['report_id']}/decision"
    await ranking.expect(
        422, "bad_hours", "POST", decision, json={"decision": "dismiss", "hours": 5}, headers=op
    )
    assert (
        await ranking.call("POST", decision, json={"decision": "dismiss"}, headers=op)
    ).status_code == 200
    await ranking.expect(
        409, "already_decided", "POST", decision, json={"decision": "warn"}, headers=op
    )


async def _arenas(match: Probe, engine: AsyncEngine, busy: dict[str, dict[str, Any]]) -> None:
    """An arena's refusals: upcoming, then cancelled. `busy`: a guest waiting in a pool,
    and one paused from ranked play."""
    names = ("lou", "max", "ned", "oz")
    a, b, c, e = [
        (await match.call("POST", "/api/players", json={"name": n})).json() for n in names
    ]
    ha, hb, hc, he = ({"Authorization": f"Bearer {p['token']}"} for p in (a, b, c, e))
    await match.expect(
        422, "bad_name", "POST", "/api/tournaments", json={"name": "   "}, headers=ha
    )
    made = await match.call(
        "POST", "/api/tournaments", json={"name": "cup", "starts_in": 600}, headers=ha
    )
    assert made.status_code == 201, made.text
    t = f"/api/tournaments/{made.json()['tournament_id']}"
    await match.expect(401, "unauthorized", "GET", t, headers={"Authorization": "Bearer nobody"})
    await match.expect(409, "arena_running", "GET", f"{t}/export")
    await match.expect(401, "unauthorized", "POST", f"{t}/cancel", json={"reason": "x"})
    await match.expect(403, "forbidden", "POST", f"{t}/cancel", json={"reason": "x"}, headers=hb)
    await match.expect(422, "bad_reason", "POST", f"{t}/cancel", json={"reason": " "}, headers=ha)
    for who, status, code in (
        (busy["waiting"], 409, "seated_elsewhere"),
        (busy["paused"], 403, "ranked_paused"),
    ):
        await match.expect(
            status,
            code,
            "POST",
            f"{t}/join",
            json={},
            headers={"Authorization": f"Bearer {who['token']}"},
        )
    await match.expect(409, "not_joined", "POST", f"{t}/pause", headers=hb)
    await match.expect(409, "not_joined", "POST", f"{t}/continue", headers=hb)
    for h in (ha, hc, he):
        assert (await match.call("POST", f"{t}/join", json={}, headers=h)).status_code == 200
    # Paused, then paused from ranked play too: may not continue.
    assert (await match.call("POST", f"{t}/pause", headers=he)).status_code == 200
    async with engine.begin() as conn:
        for i in range(3):
            await conn.execute(
                sa.text("INSERT INTO reputation_matches VALUES (:p, :m, :i, now(), true, true)"),
                {"p": e["id"], "m": f"match-oz-{i}", "i": i},
            )
    await match.expect(403, "ranked_paused", "POST", f"{t}/continue", headers=he)
    await match.expect(409, "already_joined", "POST", f"{t}/join", json={}, headers=ha)
    await match.expect(409, "not_paused", "POST", f"{t}/continue", headers=ha)
    assert (await match.call("POST", f"{t}/pause", headers=ha)).status_code == 200
    await match.expect(409, "already_paused", "POST", f"{t}/pause", headers=ha)
    await match.call("POST", "/api/parties", json={"seats": 2}, headers=ha)
    await match.expect(409, "seated_elsewhere", "POST", f"{t}/continue", headers=ha)
    assert (
        await match.call("POST", f"{t}/cancel", json={"reason": "rain"}, headers=ha)
    ).status_code == 200
    await match.expect(409, "arena_cancelled", "POST", f"{t}/join", json={}, headers=hb)
    await match.expect(409, "arena_cancelled", "POST", f"{t}/continue", headers=hc)
    await match.expect(
        409, "arena_cancelled", "POST", f"{t}/cancel", json={"reason": "again"}, headers=ha
    )


async def _keys(match: Probe) -> None:
    """An Idempotency-Key the same guest used for another request on the same stream: 422
    `idempotency_key_reused`, for each command that takes one."""
    made = [await match.call("POST", "/api/players", json={"name": n}) for n in ("pam", "quinn")]
    assert all(r.status_code == 201 for r in made), [r.text for r in made]
    q1, q2 = [r.json() for r in made]

    def h(player: dict[str, Any], key: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {player['token']}", "Idempotency-Key": key}

    def ok(r: Any) -> Any:
        assert r.status_code < 300, r.text
        return r.json()

    reused = (422, "idempotency_key_reused")
    party = ok(await match.call("POST", "/api/parties", json={"seats": 2}, headers=h(q1, "c")))
    await match.expect(*reused, "POST", "/api/parties", json={"seats": 3}, headers=h(q1, "c"))
    y = f"/api/parties/{party['id']}"
    ok(await match.call("POST", f"{y}/join", json={}, headers=h(q2, "j")))
    await match.expect(*reused, "POST", f"{y}/leave", headers=h(q2, "j"))
    ok(await match.call("POST", f"{y}/leave", headers=h(q2, "l")))
    await match.expect(*reused, "POST", f"{y}/join", json={}, headers=h(q2, "l"))
    ok(await match.call("POST", f"{y}/settings", json={"stamps": False}, headers=h(q1, "s")))
    await match.expect(*reused, "POST", f"{y}/cpus", json={}, headers=h(q1, "s"))
    ok(await match.call("POST", f"{y}/cpus", json={"seat": 1}, headers=h(q1, "a")))
    await match.expect(*reused, "POST", f"{y}/cpus/1/remove", headers=h(q1, "a"))
    await match.expect(
        *reused, "POST", f"{y}/settings", json={"turn_limit": 30}, headers=h(q1, "a")
    )
    await match.expect(*reused, "POST", f"{y}/start", headers=h(q1, "a"))
    started = ok(await match.call("POST", f"{y}/start", headers=h(q1, "go")))
    m = f"/api/matches/{started['match_id']}"
    ok(await match.call("POST", f"{m}/leave", headers=h(q1, "ml")))
    await match.expect(*reused, "POST", f"{m}/reclaim", headers=h(q1, "ml"))
    ok(await match.call("POST", f"{m}/reclaim", headers=h(q1, "mr")))
    await match.expect(*reused, "POST", f"{m}/leave", headers=h(q1, "mr"))
    await match.expect(*reused, "POST", f"{m}/concede", headers=h(q1, "mr"))
