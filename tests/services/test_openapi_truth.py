"""The OpenAPI documents of both services say what the services answer: every declared 4xx
is our `ErrorBody`, declared statuses and shapes match real responses, every error carries
`Cache-Control: no-store`, and the CORS policy (none: same-origin only) holds."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, get_args

import jsonschema
import pytest
from litestar import Litestar
from litestar.testing import AsyncTestClient
from sqlalchemy.ext.asyncio import AsyncEngine

from domain.cannot_move import Rule
from services.match.app import create_app as match_app
from services.ranking.app import create_app as ranking_app
from services.shared.eventstore import EventStore
from services.shared.settings import Settings
from tests.services.conftest import Api
from tests.services.match.test_commands import stage_a_block

pytestmark = pytest.mark.anyio

OPERATOR = "op-secret"
ERROR_REF = "#/components/schemas/ErrorBody"
METHODS = ("get", "put", "post", "delete", "patch", "head", "options")


def _settings(tmp_path: Path) -> Settings:
    return Settings(
        data_dir=tmp_path, cpu_delay=0, scheduler=False, pairing=False, operator_token=OPERATOR
    )


def _apps(engine: AsyncEngine, tmp_path: Path) -> dict[str, Litestar]:
    settings = _settings(tmp_path)
    return {
        "match": match_app(settings, engine=engine),
        "ranking": ranking_app(settings, engine=engine, consume=False),
    }


@pytest.fixture
async def clients(engine: AsyncEngine, tmp_path: Path) -> AsyncIterator[dict[str, Any]]:
    """Both services in process on the test's database."""
    apps = _apps(engine, tmp_path)
    async with AsyncTestClient(apps["match"]) as m, AsyncTestClient(apps["ranking"]) as r:
        yield {"match": m, "ranking": r}


async def _document(client: Any) -> dict[str, Any]:
    r = await client.get("/schema/openapi.json")
    assert r.status_code == 200
    document: dict[str, Any] = r.json()
    return document


def _operations(document: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [
        (method, path, op)
        for path, item in document["paths"].items()
        for method, op in item.items()
        if method in METHODS
    ]


async def test_every_declared_error_response_is_our_error_body(clients: dict[str, Any]) -> None:
    """Every 4xx declared by any operation of either service is `ErrorBody` (`{error,
    detail, field, why, until}`, its `error` narrowed to the operation's codes), never
    Litestar's default `{status_code, detail, extra}`."""
    for name, client in clients.items():
        document = await _document(client)
        assert set(document["components"]["schemas"]["ErrorBody"]["properties"]) == {
            "error",
            "detail",
            "field",
            "why",
            "until",
        }
        wrong = []
        for method, path, op in _operations(document):
            for status, response in op["responses"].items():
                if status.startswith("4"):
                    schema = response.get("content", {}).get("application/json", {}).get("schema")
                    if (schema or {}).get("allOf", [None])[0] != {"$ref": ERROR_REF}:
                        wrong.append((name, method, path, status))
        assert wrong == []


async def test_declared_statuses_and_shapes_match_real_responses(api: Api) -> None:
    """`/events?from=-1` is a declared 422; `/replay` is declared as the object it is (the
    replay file), not a string; `/moves` spells a move's origin `from`."""
    match_id, players, _ = await api.duel()
    document = (await api.call("GET", "/schema/openapi.json")).json()
    paths, schemas = document["paths"], document["components"]["schemas"]

    events = paths["/api/matches/{match_id}/events"]["get"]["responses"]
    r = await api.call("GET", f"/api/matches/{match_id}/events?from=-1")
    assert r.status_code == 422 and r.json()["field"] == "from"
    assert "422" in events and "400" not in events

    replay = paths["/api/matches/{match_id}/replay"]["get"]["responses"]["200"]
    ref = replay["content"]["application/json"]["schema"]["$ref"]
    declared = schemas[ref.rsplit("/", 1)[1]]
    assert declared["type"] == "object"
    body = (await api.call("GET", f"/api/matches/{match_id}/replay")).json()
    assert isinstance(body, dict) and set(body) <= set(declared["properties"])
    assert set(declared.get("required", [])) <= set(body)

    await api.call("POST", f"/api/matches/{match_id}/roll", headers=api.h(players[0]))
    moves_ref = paths["/api/matches/{match_id}/moves"]["get"]["responses"]["200"]["content"][
        "application/json"
    ]["schema"]["$ref"]
    moves_schema = schemas[moves_ref.rsplit("/", 1)[1]]
    option_ref = moves_schema["properties"]["moves"]["items"]["$ref"]
    assert set(schemas[option_ref.rsplit("/", 1)[1]]["properties"]) == {
        "piece",
        "from",
        "to",
        "captures",
    }
    state = await api.match(match_id)
    while state["phase"] != "move":
        await api.step(match_id, players)
        state = await api.match(match_id)
    moves = (await api.call("GET", f"/api/matches/{match_id}/moves")).json()["moves"]
    assert moves and all(set(m) == {"piece", "from", "to", "captures"} for m in moves)


class TestWhyAPieceCannotMove:
    """The document declares an illegal move's `why` as the service sends it."""

    async def test_an_illegal_moves_error_is_valid_against_the_declared_error_body(
        self, api: Api
    ) -> None:
        """`why` is a `CannotMove` of the five rules (only `rule` required), and a real 422
        illegal_move with it validates against the declared `ErrorBody`."""
        document = (await api.call("GET", "/schema/openapi.json")).json()
        schemas = document["components"]["schemas"]
        why = schemas["ErrorBody"]["properties"]["why"]
        assert {"$ref": "#/components/schemas/CannotMove"} in why["oneOf"]
        cannot = schemas["CannotMove"]
        assert set(cannot["properties"]) == {"rule", "values", "needs", "square", "seat"}
        assert cannot["required"] == ["rule"]
        assert set(cannot["properties"]["rule"]["enum"]) == set(get_args(Rule))

        match_id, players, _ = await api.duel(rules={"preset": "standard"})
        await stage_a_block(EventStore(api.engine), match_id)
        r = await api.call(
            "POST", f"/api/matches/{match_id}/move", json={"piece": 2}, headers=api.h(players[0])
        )
        assert r.status_code == 422 and "why" in r.json(), r.text
        move = document["paths"]["/api/matches/{match_id}/move"]["post"]["responses"]["422"]
        declared = move["content"]["application/json"]["schema"]
        assert declared["allOf"][0] == {"$ref": ERROR_REF}
        validator = jsonschema.Draft202012Validator(
            {**declared, "components": document["components"]}
        )
        assert list(validator.iter_errors(r.json())) == []
        # and the checks bite: a `why` of another rule is refused
        assert list(validator.iter_errors({**r.json(), "why": {"rule": "dance"}}))


async def _error_requests(name: str, client: Any) -> dict[int, Any]:
    """One request per error status the service gives (429 is the rate limiter's)."""
    big = b"{" + b" " * (20 * 1024) + b"}"
    if name == "match":
        r401 = await client.post("/api/parties", json={})
        r422 = await client.get("/api/matches/x/events?from=-1")
        r400 = await client.post(
            "/api/players", content=b"{", headers={"content-type": "application/json"}
        )
        r405 = await client.delete("/api/players/me")
        r413 = await client.post("/api/players", content=big)
        r415 = await client.post(
            "/api/players", content=b"name=a", headers={"content-type": "text/plain"}
        )
    else:
        op = {"Authorization": f"Bearer {OPERATOR}"}
        r401 = await client.get("/api/ranking/leaderboard")
        r422 = await client.get("/api/ratings/leaderboard?limit=0")
        r400 = await client.post(
            "/api/ranking/recompute",
            content=b"{",
            headers={**op, "content-type": "application/json"},
        )
        r405 = await client.delete("/api/ratings/leaderboard")
        r413 = await client.post("/api/ranking/recompute", content=big, headers=op)
        r415 = await client.post(
            "/api/ranking/recompute", content=b"x", headers={**op, "content-type": "text/plain"}
        )
    r404 = await client.get("/api/no-such-route")
    return {
        400: r400,
        401: r401,
        404: r404,
        405: r405,
        413: r413,
        415: r415,
        422: r422,
    }


async def test_every_error_status_carries_no_store(clients: dict[str, Any]) -> None:
    """Each error status of both services (400, 401, 404, 405, 413, 415, 422) answers our
    JSON error with `Cache-Control: no-store`, as docs/api.md promises for every response."""
    for name, client in clients.items():
        for status, r in (await _error_requests(name, client)).items():
            assert r.status_code == status, (name, status, r.text)
            assert set(r.json()) >= {"error", "detail"}, (name, status, r.text)
            assert r.headers.get("cache-control") == "no-store", (name, status, r.headers)


async def test_no_cross_origin_access(clients: dict[str, Any]) -> None:
    """No CORS: a cross-origin GET gets no `Access-Control-Allow-*` header, and a CORS
    preflight is a clean JSON 405 with `Allow` and no-store, never a 500 or a grant."""
    origin = {"Origin": "https://elsewhere.example"}
    preflight = {
        **origin,
        "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "authorization, content-type",
    }
    paths = {
        "match": ["/api/parties", "/api/rules/options"],
        "ranking": ["/api/ratings/leaderboard"],
    }
    for name, client in clients.items():
        for path in paths[name]:
            got = await client.get(path, headers=origin)
            assert got.status_code == 200, (name, path, got.text)
            assert not [h for h in got.headers if h.lower().startswith("access-control-")]
            pre = await client.options(path, headers=preflight)
            assert pre.status_code == 405, (name, path, pre.status_code, pre.text)
            assert pre.json()["error"] == "method_not_allowed"
            assert "OPTIONS" not in pre.headers.get("allow", "OPTIONS")
            assert pre.headers.get("cache-control") == "no-store"
            assert not [h for h in pre.headers if h.lower().startswith("access-control-")]
