"""A match's analysis keeps its headers on the way out, from the ranking service and through
the match service's `/api/ratings/*` proxy: both services under uvicorn on a real socket,
the real database, plain HTTP between them and to the test."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import msgspec
import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from services.ranking.app import create_app as ranking_app
from services.shared.eventstore import EventStore
from services.shared.settings import Settings
from tests.services.match.test_live import Instance
from tests.services.ranking.analysed_matches import Seat, insert_analysis
from tests.services.ranking.finished_matches import write_match

pytestmark = pytest.mark.anyio


@pytest.fixture
def services(database_url: str, tmp_path: Path) -> Iterator[dict[str, str]]:
    """The ranking service, then the match service proxying to it: name -> base URL."""
    settings = Settings(
        data_dir=tmp_path, database_url=database_url, cpu_delay=0, scheduler=False, pairing=False
    )
    with Instance(settings, ranking_app(settings, consume=False)) as ranking:
        proxied = msgspec.structs.replace(settings, ranking_url=ranking.http)
        with Instance(proxied) as match:
            yield {"ranking": ranking.http, "match": match.http}


def _directives(answer: httpx.Response) -> list[set[str]]:
    """Each `Cache-Control` header of `answer`, as its set of directives."""
    return [
        {d.strip() for d in value.split(",")} for value in answer.headers.get_list("cache-control")
    ]


async def test_a_stored_analysis_is_cacheable_and_names_its_evaluator(
    services: dict[str, str], engine: AsyncEngine
) -> None:
    """An analysis (written once, never rewritten) answers one `Cache-Control: public,
    max-age=300` and `X-Ludo-Evaluator`, from the ranking service and through the proxy
    alike, with the same bytes."""
    match_id = await insert_analysis(engine, [Seat("ann"), Seat("ben")])
    bodies = []
    async with httpx.AsyncClient() as client:
        for base in services.values():
            answer = await client.get(f"{base}/api/ratings/analysis/{match_id}")
            assert answer.status_code == 200, (base, answer.text)
            assert _directives(answer) == [{"public", "max-age=300"}], (base, answer.headers)
            assert answer.headers.get_list("x-ludo-evaluator") == ["test-evaluator"], base
            bodies.append(answer.content)
    assert bodies[0] == bodies[1]


async def test_a_pending_or_unknown_analysis_is_never_kept(
    services: dict[str, str], engine: AsyncEngine, pg_store: EventStore
) -> None:
    """404 `not_analysed` (a match not analysed yet: it may be soon) and 404 `not_found`
    answer one `Cache-Control: no-store`, directly and through the proxy; a read the
    proxy forwards that has no cache of its own (the leaderboard) keeps `no-store` too."""
    stream = await write_match(engine, pg_store, ["ann", "ben"], [1, 2])
    pending = stream.removeprefix("match-")
    async with httpx.AsyncClient() as client:
        for base in services.values():
            for match_id, code in ((pending, "not_analysed"), (str(uuid.uuid4()), "not_found")):
                answer = await client.get(f"{base}/api/ratings/analysis/{match_id}")
                assert answer.status_code == 404 and answer.json()["error"] == code, answer.text
                assert _directives(answer) == [{"no-store"}], (base, code, answer.headers)
                assert "x-ludo-evaluator" not in answer.headers
            board = await client.get(f"{base}/api/ratings/leaderboard")
            assert board.status_code == 200, board.text
            assert _directives(board) == [{"no-store"}], (base, board.headers)
