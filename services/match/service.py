"""The match service's application layer, one part per responsibility:

- `guests`: guest players and their tokens (`services/match/guests.py`);
- `parties`: party commands, match starts and the lobby listing (`party_commands.py`);
- `matches`: reading matches: state, events, row, seed (`match_reads.py`);
- `commands`: match commands, the one path from a command to its events
  (`match_commands.py`), each outcome counted in the metrics (`CountedCommands`);
- `deadlines`: the turn deadline row of each match (`deadlines.py`);
- `presence`: who is connected, and the grace period (`presence.py`);
- `lobby`: who holds the lobby open, over all instances (`lobby_presence.py`);
- `pools`: quick play, entering, leaving and pairing (`pairing.py`);
- `arenas`: arena tournaments, their commands and their runner (`arenas.py`);
- `replays`: export, audit and the walk of stored matches (`replay_store.py`);
- `reports`: reports of a player, filed here (`services/shared/reports.py`);
- `stamps`: quick-chat stamps, each match's own stream beside it (`stamps.py`);
- `site_now`: what the site is doing now, for the operator's live view (`site_now.py`).

`MatchService` builds them over one engine and one event store; controllers, sockets and
the scheduler receive it and call the part they need. `reads` (a `ReadRoute`) is where
the reads that tolerate lag go, the standby of `LUDO_DATABASE_READ_URL` when there is
one: only the replays' (docs/scaling.md, Reads from a standby); everything else reads the
primary, the state a command is decided on first of all."""

from __future__ import annotations

from typing import Any

from sqlalchemy.ext.asyncio import AsyncEngine

from domain.errors import AppError
from services.match.arenas.service import Arenas
from services.match.guests import Guests
from services.match.moderation.site_now import SiteNow
from services.match.parties.service import PartyCommands
from services.match.play.deadlines import Deadlines
from services.match.play.presence import Presence
from services.match.play.reads import MatchReads
from services.match.play.service import MakeCommand, MatchCommands
from services.match.play.stamps import Stamps
from services.match.players.lobby_presence import LobbyPresence
from services.match.pools.service import Pools
from services.match.replays.service import ReplayStore
from services.shared.arena_schedule import parse as parse_schedule
from services.shared.database import ReadRoute
from services.shared.eventstore import AppendResult, ConcurrencyError, EventStore
from services.shared.metrics import UNCOUNTED, Counters
from services.shared.reports import Reports
from services.shared.settings import Settings

__all__ = ["CountedCommands", "MatchService"]


class CountedCommands(MatchCommands):
    """`MatchCommands` whose one path (`execute`: requests, sockets, the scheduler) counts
    each command's outcome in `ludo_match_commands_total` (its app's `counters`)."""

    counters: Counters = UNCOUNTED

    async def execute(
        self, match_id: str, make: MakeCommand, *, actor: str, **options: Any
    ) -> AppendResult:
        try:
            result = await super().execute(match_id, make, actor=actor, **options)
        except AppError:
            self.counters.command(actor, "rejected")
            raise
        except ConcurrencyError:
            self.counters.command(actor, "conflict")
            raise
        except Exception:
            self.counters.command(actor, "failed")
            raise
        self.counters.command(actor, "duplicate" if result.duplicate else "appended")
        return result


class MatchService:
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
        self.commands = CountedCommands(engine, store, self.matches, self.deadlines)
        self.commands.counters = counters
        self.presence = Presence(engine, self.matches, self.commands, settings)
        self.parties = PartyCommands(engine, store, self.matches, self.deadlines)
        self.lobby = LobbyPresence(engine)
        self.pools = Pools(engine, store, self.parties, self.lobby, settings)
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
        self.pools.busy_elsewhere = self.arenas.playing_in
        self.replays = ReplayStore(store, self.reads.parts(EventStore, primary=store))
        self.reports = Reports(engine, store)
        self.stamps = Stamps(store, self.matches, self.parties)
        self.site_now = SiteNow(engine, store)
