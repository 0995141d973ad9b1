"""The ranking service's application layer, as the match service's (services/match/
service.py): one object per process, built by the lifespan over one engine and one event
store, with a part per responsibility:

- `consumer`: follows the log and keeps the ratings (`consumer.py`);
- `analysis`: follows the log and analyses every finished match (`analysis_consumer.py`);
- `queries`: every read the API answers with (`queries.py`), on the primary;
- `reads` / `lagging`: where the reads that tolerate lag go (the standby of
  `LUDO_DATABASE_READ_URL` while it answers, else the primary: services/shared/database.py
  `ReadRoute`), and `queries` built over each of its engines: the public ratings, the
  analysis pages, the dashboard's charts (docs/scaling.md, Reads from a standby);
- `reports`: the operator's queue of reports and its decisions (services/shared/reports.py);
- `recompute_lock`: one recompute at a time in this process;
- `live`: the operator's live view (`live_view.py`).

Handlers receive it as the `ranking` dependency (`Ranking`, from the ASGI scope) and call
the part they need; none holds SQL of its own.
"""

from __future__ import annotations

import asyncio

from litestar import Litestar
from litestar.di import NamedDependency, Provide
from litestar.types import Scope
from sqlalchemy.ext.asyncio import AsyncEngine

from services.ranking.analysis_consumer import AnalysisConsumer
from services.ranking.consumer import CHECKPOINT, RankingConsumer
from services.ranking.live_view import LiveView
from services.ranking.queries import RatingQueries
from services.shared.database import ReadRoute, RoutedReads
from services.shared.eventstore import EventStore
from services.shared.metrics import UNCOUNTED, Counters
from services.shared.reports import Reports
from services.shared.settings import Settings

__all__ = ["Ranking", "RankingService", "provide_ranking"]


class RankingService:
    """The ranking service's parts over one engine (see the module docstring)."""

    def __init__(
        self,
        engine: AsyncEngine,
        settings: Settings,
        reads: ReadRoute | None = None,
        counters: Counters = UNCOUNTED,
    ) -> None:
        self.engine = engine
        self.settings = settings
        # `counters`: the app's, where its consumers count their failures.
        self.store = EventStore(engine, counters=counters)
        self.consumer = RankingConsumer(engine, self.store, poll=settings.ranking_poll)
        self.analysis = AnalysisConsumer(engine, self.store, poll=settings.ranking_poll)
        self.queries = RatingQueries(engine, self.store, CHECKPOINT)
        self.reads = reads or ReadRoute(engine)
        self.lagging: RoutedReads[RatingQueries] = self.reads.parts(
            lambda e: RatingQueries(e, EventStore(e), CHECKPOINT), primary=self.queries
        )
        self.reports = Reports(engine, self.store)
        self.recompute_lock = asyncio.Lock()
        self.live = LiveView(
            engine, self.store, settings, (self.consumer, self.analysis), self.queries
        )


Ranking = NamedDependency[RankingService]


def _ranking(scope: Scope) -> RankingService:
    # From the ASGI scope, not as `state: State`: for that Litestar builds a new State,
    # a copy of the app's, on every request (a hundredth of a command's CPU).
    ranking: RankingService = Litestar.from_scope(scope).state.ranking
    return ranking


provide_ranking = Provide(_ranking, sync_to_thread=False)
