"""schemathesis against both services' own OpenAPI documents, on the real apps under uvicorn
on a real (fresh, migrated) database: every operation fuzzed with a bounded example count,
then the stateful phase (links inferred from the documents), with valid credentials so the
requests reach the handlers. Checked: no 5xx, only documented statuses, response bodies and
content types as documented.

The database holds a few rated matches before the run (`_seed`), so the ranking service's
leaderboards, distribution, swings, matches per day, lag and recompute answer with rows,
and their bodies are checked against the document, not only empty lists.

Why the ranking service has no stateful phase: schemathesis builds its sequences from
links, and the ranking document has none to infer (`as_state_machine()` finds no bundle:
no operation answers with a `Location`, none creates what another's parameters name).
Nor could a sequence find anything the single calls do not: every operation but
`recomputeRatings` and `decideReport` is a read, the state it reads (ratings) comes only
from the match service's events through the consumer, never from the ranking API, and a
recompute rebuilds the same ratings from the same log; `decideReport` acts on reports the
match service files (fuzzed ids are 404; tests/services/ranking/test_moderation.py decides
real ones, every refusal included). What covers the ranking service instead: the
per-operation fuzzing here on seeded data; tests/services/ranking/test_app.py and
test_public.py (real rated matches through every route, the ids of one answer fed to the
next);
tests/services/ranking/test_consumer.py (recompute against the live consumer, hash for hash);
tests/services/ranking/test_with_match_service.py (a duel played over HTTP, then rated).

A finding is pinned as a plain regression test beside the code it concerns; this module only
keeps the fuzzing going (deterministic: `derandomize`, no example database).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import hypothesis
import msgspec
import pytest
import schemathesis
from hypothesis import HealthCheck, Phase
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from services.ranking.app import create_app as ranking_app
from services.ranking.ratings.consumer import RankingConsumer, ratings_hash
from services.shared.database import create_engine
from services.shared.eventstore import EventStore
from services.shared.settings import Settings
from tests.databases import admin, with_database
from tests.services.match.test_live import Instance
from tests.services.ranking.finished_matches import CPU, write_match

pytestmark = pytest.mark.slow

OPERATOR = "op-secret-for-schemathesis"
EXAMPLES = 25  # per operation (half positive, half negative data); the module runs in ~15 s
STEPS = 10  # stateful: steps per scenario
SCENARIOS = 15
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    response_schema_conformance,
    content_type_conformance,
]

Auth = Callable[[Any], dict[str, str]]


def _settings(tmp_path: Path, url: str) -> Settings:
    # The per-client budgets are off: schemathesis sends hundreds of requests from one
    # address, and a run answered mostly 429 (documented on every route) would check little
    # else. tests/services/shared/test_limits.py tests the budgets.
    return Settings(
        data_dir=tmp_path,
        database_url=url,
        cpu_delay=0,
        scheduler=False,
        operator_token=OPERATOR,
        rate_limit=0,
        guest_limit=0,
        auth_fail_limit=0,
    )


async def _seed(url: str) -> None:
    """Finished ranked matches (2-4 seats, a draw, a CPU seat, a leaver), then rated."""
    engine = create_engine(url)
    try:
        store = EventStore(engine)
        await write_match(engine, store, ["ann", "ben"], [1, 2])
        await write_match(engine, store, ["ben", "cat", "dan"], [2, 1, 3])
        await write_match(engine, store, ["ann", "cat", CPU, "dan"], [1, 1, 3, 4])
        await write_match(engine, store, ["dan", "ann"], [2, 1], stood_in={0: "left"})
        await RankingConsumer(engine, store).catch_up()
        _, rows = await ratings_hash(engine)
        assert rows == 4 * 3  # four players, three models
    finally:
        await engine.dispose()


@pytest.fixture(scope="module")
def services(
    server_url: str, template_name: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, str]]:
    """Both services under uvicorn on one fresh database for the module: name -> base URL."""
    name = f"ludo_test_{uuid.uuid4().hex[:12]}"
    admin(server_url, f'CREATE DATABASE "{name}" TEMPLATE "{template_name}"')
    settings = _settings(tmp_path_factory.mktemp("schemathesis"), with_database(server_url, name))
    try:
        asyncio.run(_seed(with_database(server_url, name)))
        with Instance(settings, ranking_app(settings, consume=False)) as ranking:
            proxied = msgspec.structs.replace(settings, ranking_url=ranking.http)
            with Instance(proxied) as match:
                yield {"match": match.http, "ranking": ranking.http}
    finally:
        admin(server_url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _auth(services: dict[str, str]) -> Auth:
    """Headers for an operation: the operator token where the document asks for it, else
    a guest's token (a guest made once, through the match service's API)."""
    r = httpx.post(f"{services['match']}/api/players", json={"name": "schemathesis"})
    assert r.status_code == 201, r.text
    guest = {"Authorization": f"Bearer {r.json()['token']}"}
    operator = {"Authorization": f"Bearer {OPERATOR}"}

    def headers(operation: Any) -> dict[str, str]:
        security = operation.definition.raw.get("security") or []
        return operator if any("operator" in s for s in security) else guest

    return headers


def _schema(base: str) -> Any:
    schema = schemathesis.openapi.from_url(f"{base}/schema/openapi.json")
    schema.config.update(base_url=base)
    return schema


_SETTINGS: dict[str, Any] = {
    "deadline": None,
    "database": None,
    "derandomize": True,
    "suppress_health_check": list(HealthCheck),
    "phases": [Phase.explicit, Phase.generate],
}


def _fuzz_operation(operation: Any, base: str, headers: dict[str, str]) -> None:
    """`EXAMPLES` generated requests (positive and negative data) to one operation."""

    @hypothesis.settings(max_examples=EXAMPLES, **_SETTINGS)
    @hypothesis.given(
        case=operation.as_strategy(GenerationMode.POSITIVE)
        | operation.as_strategy(GenerationMode.NEGATIVE)
    )
    def check(case: Any) -> None:
        # Generated credentials would only be refused (401): send real ones.
        case.headers = {**(case.headers or {}), **headers}
        case.call_and_validate(base_url=base, checks=CHECKS)

    check()


def _fuzz(base: str, headers_for: Auth) -> list[str]:
    """Every operation of the service at `base`: the failures, as text."""
    failures: list[str] = []
    for result in _schema(base).get_all_operations():
        operation = result.ok()
        try:
            _fuzz_operation(operation, base, headers_for(operation))
        except (Exception, BaseExceptionGroup) as error:
            failures.append(f"{operation.label}: {error}")
    return failures


@pytest.mark.parametrize("name", ["match", "ranking"])
def test_every_operation_answers_as_documented(services: dict[str, str], name: str) -> None:
    """Generated requests to every operation get no 5xx and only documented answers."""
    base = services[name]
    failures = _fuzz(base, _auth(services))
    assert not failures, "\n\n".join(failures)


# Only the match service: the ranking document has no links (the module docstring says why
# a stateful phase could find nothing there).
@pytest.mark.parametrize("name", ["match"])
def test_stateful_sequences_answer_as_documented(services: dict[str, str], name: str) -> None:
    """Sequences of linked calls (schemathesis' stateful phase) answer as documented."""
    base = services[name]
    headers_for = _auth(services)
    schema = _schema(base)

    class Workflow(schema.as_state_machine()):  # type: ignore[misc]
        def before_call(self, case: Any) -> None:
            # Generated credentials would only be refused (401): send real ones.
            case.headers = {**(case.headers or {}), **headers_for(case.operation)}

        def get_call_kwargs(self, case: Any) -> dict[str, Any]:
            return {"base_url": base}

        def validate_response(self, response: Any, case: Any, **kwargs: Any) -> None:
            case.validate_response(response, checks=CHECKS)

    Workflow.run(
        settings=hypothesis.settings(max_examples=SCENARIOS, stateful_step_count=STEPS, **_SETTINGS)
    )
