"""Reading matches: the folded state (cached), the stored events, the `matches` row and
the server seed.

The state cache (`_states`) saves reading and folding old events again. For reads, the
events after the cached version always come from the database, so what a reader sees is
never staler than a fresh read. A command may be decided on the cached fold with no read
at all (`for_command`) while that fold is *trusted*: this instance appended the last
event itself or read it, its NOTIFY listener is up, and no hint of a newer event has come
(`heard`). A hint can come late, so a trusted fold may still be stale; that costs nothing
but a retry, because every append checks the version and the hash it was decided on and
the command is then decided again on a fresh read (`MatchCommands`).

The server seed (`_seeds`, never logged: it leaves only through `SeedRevealed`) and the
`matches` row (`_rows`) never change once written, so they are kept once read; the row's
CPU speed may change (the host's setting), which only what a state frame shows of a CPU's
pause reads from here (`forget_row` on the instance that changed it)."""

from __future__ import annotations

from collections import OrderedDict

from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from domain.chain import GENESIS
from domain.decider import MatchState, apply
from domain.errors import Invalid, NotFound
from domain.streams import match_stream
from services.match.caches import remember
from services.match.ids import check_id
from services.shared import match_rows
from services.shared.eventstore import EventStore, StoredEvent
from services.shared.match_rows import NO_ROW, MatchRow

__all__ = ["NO_ROW", "MatchReads", "MatchRow", "settings_of"]

_STATE_CACHE = 2000
_ROW_CACHE = 4000  # server seeds and `matches` rows: immutable once written


def settings_of(state: MatchState, row: MatchRow) -> MatchRow:
    """The match's table settings: those its MatchCreated pins (version 3), but the CPUs'
    speed, which the host may change mid-match and the row holds as it is now; a match
    stored before the event carried them (or imported: NO_ROW) has only its row."""
    table = state.table
    if table is None:
        return row
    return MatchRow(table.party_id, table.turn_limit, table.ranked, row.cpu_speed)


class MatchReads:
    def __init__(self, engine: AsyncEngine, store: EventStore) -> None:
        self.store = store
        self._reader = engine.execution_options(isolation_level="AUTOCOMMIT")
        # LRU of match folds, each with the hash of its last event (to extend the chain).
        self._states: OrderedDict[str, tuple[MatchState, bytes]] = OrderedDict()
        self._seeds: OrderedDict[str, bytes] = OrderedDict()
        self._rows: OrderedDict[str, MatchRow] = OrderedDict()
        self._trusted: set[str] = set()  # streams whose cached fold is known to be the head
        self._listening = False

    async def state(self, match_id: str) -> MatchState:
        """The match now, for a view or a check (404 if unknown): the cached fold brought
        up to date by the events after it, so never staler than a fresh read. The
        caller's own copy, to change as it likes."""
        state = (await self._read(match_stream(check_id(match_id, "match"))))[0]
        if state.status == "new":
            raise NotFound("no such match")
        return state

    async def events(self, match_id: str) -> list[StoredEvent]:
        """Every stored event of the match, in version order (404 if unknown)."""
        stored = await self.store.read_stream(match_stream(check_id(match_id, "match")))
        if not stored:
            raise NotFound("no such match")
        return stored

    async def log_page(
        self, match_id: str, before: int | None, limit: int
    ) -> tuple[list[StoredEvent], int]:
        """A page of the match's log: its last `limit` events before version `before`
        (None: the head), in version order, and the match's version (404 if unknown;
        422 for a cursor past the head). Reads those events only, whatever the match's
        length."""
        stream = match_stream(check_id(match_id, "match"))
        head = await self.store.stream_version(stream)
        if head == 0:
            raise NotFound("no such match")
        end = head if before is None else before
        if end > head:
            raise Invalid(f"before: the match has {head} events, got {end}", field="before")
        start = max(0, end - limit)
        if start == end:
            return [], head
        return await self.store.read_stream(stream, start, limit=end - start), head

    async def for_command(
        self, stream: str, *, fresh: bool = False
    ) -> tuple[MatchState, bytes, bool]:
        """The fold a command is decided on (the caller's own copy), the hash of the
        stream's last event (GENESIS: no events), and whether it came from the trusted
        cache without a read (True) rather than a read (False). `fresh`: read, whatever
        the cache holds. See the module docstring."""
        if not fresh and stream in self._trusted:
            state, head = self._states[stream]
            self._states.move_to_end(stream)
            return state.copy(), head, True
        state, head = await self._read(stream)
        return state, head, False

    async def _read(self, stream: str) -> tuple[MatchState, bytes]:
        """The cached fold of `stream` (a copy) advanced by the events after it, and the
        hash of its last event."""
        cached = self._states.get(stream)
        state, head = (MatchState(), GENESIS) if cached is None else (cached[0].copy(), cached[1])
        events, last_hash = await self.store.read_events_and_hash(stream, state.version)
        for event in events:
            apply(state, event)
        if last_hash is not None:
            head = last_hash
        if state.version:
            self._keep(stream, state.copy(), head)
        return state, head

    def appended(self, stream: str, after: MatchState, head: bytes) -> None:
        """This instance appended to `stream`: `after` is the fold at its new head. It is
        kept as it is, not copied: the caller hands it over and changes it no more."""
        self._keep(stream, after, head)

    def distrust(self, stream: str) -> None:
        """The cached fold of `stream` turned out stale: read before the next command."""
        self._trusted.discard(stream)

    def heard(self, stream: str, version: int) -> None:
        """A NOTIFY hint: `stream` has events up to `version` (the last one's)."""
        cached = self._states.get(stream)
        if cached is not None and version >= cached[0].version:
            self._trusted.discard(stream)

    def listening(self, up: bool) -> None:
        """The NOTIFY listener is up (True) or lost (False). Hints may have been missed
        either way, so no cached fold stays trusted."""
        self._listening = up
        self._trusted.clear()

    def _keep(self, stream: str, state: MatchState, head: bytes) -> None:
        self._states[stream] = (state, head)
        self._states.move_to_end(stream)
        if self._listening:
            self._trusted.add(stream)
        while len(self._states) > _STATE_CACHE:
            dropped, _ = self._states.popitem(last=False)
            self._trusted.discard(dropped)

    async def row(self, stream: str, conn: AsyncConnection | None = None) -> MatchRow:
        """The stream's `matches` row (on `conn` when given), or NO_ROW without one (a
        match imported, not started here)."""
        if (cached := self._rows.get(stream)) is not None:
            return cached
        if conn is not None:
            return await self._load_row(conn, stream) or NO_ROW
        async with self._reader.connect() as reader:
            return await self._load_row(reader, stream) or NO_ROW

    def forget_row(self, stream: str) -> None:
        """The stream's row changed (its CPU speed): read it again when next asked."""
        self._rows.pop(stream, None)

    async def _load_row(self, conn: AsyncConnection, stream: str) -> MatchRow | None:
        found = await match_rows.read_row(conn, stream)
        if found is None:
            return None
        remember(self._rows, stream, found, _ROW_CACHE)
        return found

    async def seed(self, conn: AsyncConnection | None, stream: str) -> bytes:
        """The match's server seed: from this process's memory, else `match_seeds` (on
        `conn`, or on a connection of its own)."""
        if (cached := self._seeds.get(stream)) is not None:
            return cached
        if conn is None:
            async with self._reader.connect() as own:
                seed = await match_rows.read_seed(own, stream)
        else:
            seed = await match_rows.read_seed(conn, stream)
        if seed is None:  # pragma: no cover - written with MatchCreated
            raise RuntimeError(f"no seed stored for {stream}")
        remember(self._seeds, stream, seed, _ROW_CACHE)
        return seed

    def started(self, stream: str, seed: bytes, row: MatchRow) -> None:
        """A match this process started has committed: keep what never changes."""
        remember(self._seeds, stream, seed, _ROW_CACHE)
        remember(self._rows, stream, row, _ROW_CACHE)
