"""The analysis consumer: every finished match -> its analysis (docs/analysis.md), once.

It follows the global cursor as the ranking consumer does (the same leadership:
`LeasedFollower`, its own advisory locks and checkpoint row `analysis`), one page of
match ends at a time:

1. reads its checkpoint (unlocked), the match ends after it (`finish_page`), each
   match's events and whether it was ranked, with no transaction held open;
2. analyses the matches in a worker process (`domain.analysis`; CPU-bound, about a
   second a match): never in the service's event loop, and at a lower CPU priority than
   the services (`nice` 10), so play is never slower for it;
3. then, in ONE transaction: locks the checkpoint row; if it moved meanwhile (another
   leader), writes nothing and starts over; else inserts the `match_analyses` and
   `analysis_seats` rows (plain INSERT: a second analysis of a match violates the primary
   key) and moves the checkpoint past the page, and commits;
4. sends a hint for each match analysed (`services/shared/analysis_hints.py`): the
   match socket tells the end card at once.

Effects and checkpoint commit together: each match is analysed once, never twice, never
missed. What it stores is `domain.analysis.encode(analyse(events))`, the bytes
`ludo replay analyse` prints for the match's replay file.

**While a match is played.** So that a match's analysis is written within moments of its
end, even on a busy machine, the leader analyses matches as they are played: the hints of
the log name the match streams that moved (`heard`); when it is caught up with the ends
(`between`), at most every `progress_every` seconds, it reads the new events of a few of
them (`progress_matches`) and the worker folds them into that match's `Analyser`, which
it keeps in memory. At the end only the turns not folded yet remain: the worker carries
the match's `Analyser` on with them (the same bytes as a whole analysis: `Analyser`'s
contract). None of this is stored: a new leader or a new worker analyses whole what it
has not followed, and a hint lost only leaves more to do at the end. The worker starts
when the leader does, so the first end does not wait for its start-up either.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import multiprocessing
import time
from collections import OrderedDict
from typing import Any, ClassVar, Final, NamedTuple

import sqlalchemy as sa
import structlog
from sqlalchemy.ext.asyncio import AsyncEngine

from domain import events as ev
from domain.streams import PARTY_PREFIX, is_match_stream, match_id_of
from services.ranking.analysis.worker import (
    KEPT,
    Analysed,
    analyse_all,
    progress,
    ready,
    start,
)
from services.ranking.checkpoints import read_checkpoint, write_checkpoint
from services.ranking.leadership import LEASE, LeasedFollower
from services.ranking.ratings.consumer import finish_page, is_ranked
from services.shared import match_rows
from services.shared.analysis_hints import hint_analysed
from services.shared.eventstore import EventStore, Notification

__all__ = [
    "ANALYSIS_BATCH_LOCK",
    "ANALYSIS_LOCK",
    "CHECKPOINT",
    "AnalysisConsumer",
]

_log = structlog.get_logger("services.ranking.analysis")

CHECKPOINT: Final = "analysis"
# Advisory lock keys, beside the ranking consumer's ("ludo" + 4 / + 5).
ANALYSIS_LOCK: Final = 0x6C75646F0004
ANALYSIS_BATCH_LOCK: Final = 0x6C75646F0005


class _Match(NamedTuple):
    stream_id: str
    position: int
    ended_at: Any
    ranked: bool
    created: ev.MatchCreated
    placements: tuple[int, ...]
    events: list[ev.Event]


_INSERT_MATCH: Final = sa.text(
    "INSERT INTO match_analyses (match_id, stream_id, position, ended_at, evaluator, players,"
    " luck_gap, body) VALUES (:match_id, :stream_id, :position, :ended_at, :evaluator,"
    " :players, :luck_gap, :body)"
)
_INSERT_SEAT: Final = sa.text(
    "INSERT INTO analysis_seats (match_id, seat, player_id, name, ended_at, ranked, place,"
    " luck, error, choices, own_error, best_choices, faces) VALUES (:match_id, :seat,"
    " :player_id, :name, :ended_at, :ranked, :place, :luck, :error, :choices, :own_error,"
    " :best_choices, :faces)"
)


class AnalysisConsumer(LeasedFollower):
    """Follows the log and analyses every finished match (see the module docstring)."""

    label = "analysis"
    EVENTS: ClassVar[dict[str, str]] = {
        "active": "analysis_consumer_active",
        "standing_by": "analysis_consumer_standing_by",
        "error": "analysis_consumer_error",
        "batch_ended": "analysis_batch_ended",
        "batch_not_ended": "analysis_batch_not_ended",
    }

    def __init__(
        self,
        engine: AsyncEngine,
        store: EventStore | None = None,
        *,
        batch: int = 20,
        poll: float = 1.0,
        standby_poll: float = 2.0,
        lease: float = LEASE,
        worker: bool = True,
        progress_every: float = 1.0,
        progress_events: int = 300,
    ) -> None:
        super().__init__(
            engine,
            store,
            name=CHECKPOINT,
            lock_key=ANALYSIS_LOCK,
            batch_lock=ANALYSIS_BATCH_LOCK,
            batch=batch,
            poll=poll,
            standby_poll=standby_poll,
            lease=lease,
        )
        # worker=False: analyse in this process's default thread pool (tests; a tool).
        self._worker = worker
        self._pool: concurrent.futures.ProcessPoolExecutor | None = None
        self.worker_pid: int | None = None  # the worker's, once it has started
        # Matches being played: the length of each stream as its latest hint says, and
        # how much of it the worker has folded (module docstring, "While a match is played").
        self.progress_every = progress_every
        self.progress_events = progress_events
        self._heads: OrderedDict[str, int] = OrderedDict()
        self._folded: dict[str, int] = {}
        self._ended: OrderedDict[str, None] = OrderedDict()  # hints after the end: ignored
        self._progressed_at = 0.0
        self._behind = False  # the last round left events to fold

    def close(self) -> None:
        """Stops the worker process (the app's shutdown), waiting for it: a page being
        analysed is finished (its result unused: the checkpoint did not move), none other
        started. Not left to the interpreter's exit, which would join the pool's thread
        at its very end, where a late signal is a KeyboardInterrupt traceback."""
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
        self.worker_pid = None
        self._folded.clear()

    async def _in_worker(self, fn: Any, *args: Any) -> Any:
        loop = asyncio.get_running_loop()
        if not self._worker:
            return await loop.run_in_executor(None, fn, *args)
        if self._pool is None:
            # spawn, not fork: the service has threads and open connections.
            self._pool = concurrent.futures.ProcessPoolExecutor(
                max_workers=1,
                mp_context=multiprocessing.get_context("spawn"),
                initializer=start,
            )
            self._folded.clear()  # a new worker has followed nothing yet
        try:
            return await loop.run_in_executor(self._pool, fn, *args)
        except concurrent.futures.process.BrokenProcessPool:
            self.close()  # a worker killed under us: a new one next time
            raise

    async def _analyse(self, matches: list[_Match]) -> list[Analysed]:
        if not matches:
            return []  # no worker for a page without a match end
        for m in matches:
            self._ended_now(m.stream_id)
        results: list[Analysed] = await self._in_worker(
            analyse_all, [(m.stream_id, m.events) for m in matches]
        )
        return results

    async def started(self) -> None:
        """The leader's worker starts now, not at the first match end."""
        self.worker_pid = await self._in_worker(ready)

    def _ended_now(self, stream: str) -> None:
        self._heads.pop(stream, None)
        self._folded.pop(stream, None)
        self._ended[stream] = None
        while len(self._ended) > KEPT:
            self._ended.popitem(last=False)

    def heard(self, notes: list[Notification]) -> None:
        for note in notes:
            if is_match_stream(note.stream_id) and note.stream_id not in self._ended:
                head = max(self._heads.pop(note.stream_id, 0), note.version + 1)
                self._heads[note.stream_id] = head
        while len(self._heads) > KEPT:
            dropped, _ = self._heads.popitem(last=False)
            self._folded.pop(dropped, None)

    async def between(self) -> bool:
        """Folds new events of the matches being played, at most `progress_events` of them
        a round (a few tenths of a second of the worker's CPU: a match end waits for one
        round at most, `step` running between two). A round every `progress_every` seconds,
        at once while matches are left behind; True then."""
        behind = [s for s, head in self._heads.items() if head > self._folded.get(s, 0)]
        if not behind:
            return False
        now = time.monotonic()
        if not self._behind and now - self._progressed_at < self.progress_every:
            return False
        self._progressed_at = now
        feeds = []
        budget = self.progress_events
        # The matches least recently hinted first (`heard` moves a hinted one last).
        for stream in behind:
            if budget <= 0:
                break
            start = self._folded.get(stream, 0)
            stored = await self.store.read_stream(stream, start, limit=budget)
            events = [e.event for e in stored]
            budget -= len(events)
            if any(isinstance(e, ev.MatchFinished) for e in events):
                # Its end is `step`'s to analyse, which carries on from what is folded.
                del self._heads[stream]
            elif events:
                feeds.append((stream, start, events))
        if feeds:
            reached: dict[str, int] = await self._in_worker(progress, feeds)
            self._folded.update(reached)
        self._behind = budget <= 0
        return self._behind

    async def step(self) -> int:
        """One page: read and analyse outside any transaction, then write with the
        checkpoint in one (see the module docstring); the number of events read."""
        began = time.monotonic()
        async with self.engine.connect() as conn:
            cursor = await read_checkpoint(conn, self.name)
            page = await finish_page(self.store, cursor, self.batch, conn=conn)
            self.held_back = page.held_back and page.events < self.batch
            if page.last is None:
                return 0
            matches = await self._read(
                conn, [(f.stream_id, f.position, f.recorded_at) for f in page.finishes]
            )
        results = await self._analyse(matches)
        async with self.engine.begin() as conn:
            await conn.exec_driver_sql(self._fence)
            if await read_checkpoint(conn, self.name, lock=True) != cursor:
                return 0  # another leader moved it meanwhile: read again
            if matches:
                await conn.execute(
                    _INSERT_MATCH,
                    [
                        {
                            "match_id": match_id_of(m.stream_id),
                            "stream_id": m.stream_id,
                            "position": m.position,
                            "ended_at": m.ended_at,
                            "evaluator": r.evaluator,
                            "players": r.players,
                            "luck_gap": r.luck_gap,
                            "body": r.body,
                        }
                        for m, r in zip(matches, results, strict=True)
                    ],
                )
                await conn.execute(
                    _INSERT_SEAT,
                    [
                        row
                        for m, r in zip(matches, results, strict=True)
                        for row in _seat_rows(m, r)
                    ],
                )
            await write_checkpoint(conn, self.name, page.last)
        if matches:
            await hint_analysed(self.engine, [match_id_of(m.stream_id) for m in matches])
            _log.info(
                "matches_analysed",
                matches=len(matches),
                events=page.events,
                tail_events=sum(r.tail for r in results),
                worker_cpu_s=round(sum(r.cpu_s for r in results), 3),
                seconds=round(time.monotonic() - began, 3),
            )
        return page.events

    async def _read(self, conn: Any, finishes: list[tuple[str, int, Any]]) -> list[_Match]:
        """Each finished match's events and whether it was ranked (three queries)."""
        streams = list(dict.fromkeys(f[0] for f in finishes))
        if not streams:
            return []
        rows = await match_rows.read_rows(conn, streams)
        parties = {stream: PARTY_PREFIX + row.party_id for stream, row in rows.items()}
        events = await self.store.read_streams(streams, conn=conn)
        opened = await self.store.read_streams(
            list(dict.fromkeys(parties.values())), types=("MatchOpened",), conn=conn
        )
        out: list[_Match] = []
        seen: set[str] = set()
        for stream, position, at in finishes:
            if stream in seen:
                continue
            seen.add(stream)
            decoded = [e.event for e in events.get(stream, ())]
            created = next((e for e in decoded if isinstance(e, ev.MatchCreated)), None)
            finished = next((e for e in decoded if isinstance(e, ev.MatchFinished)), None)
            if created is None or finished is None:
                continue
            row = rows.get(stream)
            ranked = row is not None and is_ranked(stream, row, opened.get(parties[stream], ()))
            out.append(_Match(stream, position, at, ranked, created, finished.placements, decoded))
        return out


def _seat_rows(m: _Match, r: Analysed) -> list[dict[str, Any]]:
    return [
        {
            "match_id": match_id_of(m.stream_id),
            "seat": seat,
            "player_id": spec.player_id if spec.cpu is None else None,
            "name": spec.name,
            "ended_at": m.ended_at,
            "ranked": m.ranked,
            "place": m.placements[seat] if seat < len(m.placements) else None,
            "luck": luck,
            "error": error,
            "choices": choices,
            "own_error": own_error,
            "best_choices": best,
            "faces": faces,
        }
        for seat, (spec, (luck, error, choices, own_error, best, faces)) in enumerate(
            zip(m.created.seats, r.seats, strict=True)
        )
    ]
