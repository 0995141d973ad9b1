"""The match service's composition: each part built once, over one engine and one event
store, and handed whole to whoever needs it (`app.py` gives each route and socket only the
parts it names, as Litestar dependencies):

- `guests`: guest players and their tokens (`services/match/guests.py`);
- `matches`: reading matches: state, events, row, seed (`play/reads.py`);
- `deadlines`: the turn deadline row of each match (`play/deadlines.py`);
- `parties`: party commands, match starts and the lobby listing (`parties/service.py`);
- `lobby`: who holds the lobby open, over all instances (`players/lobby_presence.py`);
- `pools`: quick play, entering, leaving and pairing (`pools/service.py`);
- `arenas`: arena tournaments, their commands and their runner (`arenas/service.py`);
- `hub`: the live hub, told of each hint for the parts above that follow streams
  (`live_hub.py`);
- `commands`: match commands, the one path from a command to its events, each outcome
  counted in the metrics (`play/service.py`), its appends offered to the hub;
- `presence`: who is connected, and the grace period (`play/presence.py`);
- `stamps`: quick-chat stamps, each match's own stream beside it (`play/stamps.py`);
- `scheduler`: the deadline worker (`play/scheduler.py`);
- `replays`: export, audit and the walk of stored matches (`replays/service.py`);
- `reports`: reports of a player, filed here (`services/shared/reports.py`);
- `site_now`: what the site is doing now, for the operator's live view
  (`moderation/site_now.py`).

Every part gets what it needs through its constructor, nothing is set on it afterwards.
`reads` (a `ReadRoute`) is where the reads that tolerate lag go, the standby of
`LUDO_DATABASE_READ_URL` when there is one: only the replays' (docs/scaling.md, Reads from
a standby); everything else reads the primary, the state a command is decided on first of
all."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncEngine

from domain.streams import is_match_stream
from services.match.arenas.service import Arenas
from services.match.guests import Guests
from services.match.live_hub import LiveHub
from services.match.moderation.site_now import SiteNow
from services.match.parties.service import PartyCommands
from services.match.play.deadlines import Deadlines
from services.match.play.presence import Presence
from services.match.play.reads import MatchReads
from services.match.play.scheduler import Scheduler
from services.match.play.service import CountedCommands
from services.match.play.stamps import Stamps
from services.match.players.lobby_presence import LobbyPresence
from services.match.pools.service import Pools
from services.match.replays.service import ReplayStore
from services.shared.arena_schedule import parse as parse_schedule
from services.shared.database import ReadRoute
from services.shared.eventstore import EventStore, Notification
from services.shared.metrics import UNCOUNTED, Counters
from services.shared.reports import Reports
from services.shared.settings import Settings

__all__ = ["MatchParts"]


class MatchParts:
    """Players, parties and matches over the event store (see the module docstring)."""

    def __init__(
        self,
        engine: AsyncEngine,
        store: EventStore,
        settings: Settings,
        reads: ReadRoute | None = None,
        counters: Counters = UNCOUNTED,
    ) -> None:
        self.engine = engine
        self.store = store
        self.settings = settings
        self.counters = counters  # its app's (`ludo_match_commands_total`, socket errors)
        self.reads = reads or ReadRoute(engine)
        self.guests = Guests(engine)
        self.matches = MatchReads(engine, store)
        self.deadlines = Deadlines(engine, self.matches, settings)
        self.parties = PartyCommands(engine, store, self.matches, self.deadlines)
        self.lobby = LobbyPresence(engine)

        # Quick play and the arenas ask each other: a player in an arena may not queue (the
        # pools ask the arenas, built next), a queued player may not join one.
        def in_arena(player_id: str) -> str | None:
            return self.arenas.playing_in(player_id)

        self.pools = Pools(
            engine, store, self.parties, self.lobby, settings, busy_elsewhere=in_arena
        )
        self.arenas = Arenas(
            engine,
            store,
            self.parties,
            self.matches,
            self.lobby,
            self.pools,
            parse_schedule(settings.arena_schedule),
            settings.pool_grace,
        )
        self.hub = LiveHub(store, on_hint=self._heard, on_listening=self.matches.listening)
        self.commands = CountedCommands(
            engine,
            store,
            self.matches,
            self.deadlines,
            on_appended=self.hub.committed,
            counters=counters,
        )
        self.presence = Presence(engine, self.matches, self.commands, settings)
        self.stamps = Stamps(store, self.matches, self.parties.load, on_appended=self.hub.committed)
        self.scheduler = Scheduler(
            engine, store, self.commands, self.deadlines, self.presence, settings.scheduler_poll
        )
        self.replays = ReplayStore(store, self.reads.parts(EventStore, primary=store))
        self.reports = Reports(engine, store)
        self.site_now = SiteNow(engine, store)

    def _heard(self, note: Notification) -> None:
        """A hint (LISTEN/NOTIFY) for a stream: the parts that keep folds in memory."""
        self.matches.heard(note.stream_id, note.version)
        if is_match_stream(note.stream_id):
            self.scheduler.ring()  # the append may have written a deadline due now
        self.pools.heard(note.stream_id)
        self.arenas.heard(note.stream_id)
