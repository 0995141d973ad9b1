"""`ludo bench arena`: N simulated players in an arena's last minutes, through two instances.

What runs: a private embedded PostgreSQL, two match instances (each running the arena
runner: `LUDO_PAIRING` true, no recurring arenas, `LUDO_CPU_DELAY=0`) and one ranking
instance behind HAProxy (`scratch_cluster`, benchmarks/common.py), and N players
(`--players`, 200) in this process, each a CPU client of the public API only.

The arena: 20 minutes is the shortest an arena lasts (`domain.arena.ARENA_MINUTES`), so the
bench creates a public 20-minute arena whose clock started `20 - --minutes-left` minutes
ago, in-process, through the service's own `Arenas.create` (a `MatchParts` on the
scratch database, nothing of it running): the public API creates only private arenas that
start now or later. The instances' runners find it at their next pass.

Each player: becomes a guest (`POST /api/players`, through the balancer), opens the arena
socket `/ws/tournament/{id}` and says hello (its presence: a player without it is not
paired), joins (`POST /api/tournaments/{id}/join`), and plays every match a `paired`
frame brings over the match socket (hello, then on each state frame its seat's roll or
first legal move; side frames, `presence` and `stamp`, set aside) until the match ends,
then waits for the next `paired` frame, until the arena is finished (not merely ended: a
pass that decided before the end may commit after it, its players seated all the same).
Player i joins through instance i mod 2 and holds its arena socket on the other instance
(addressed directly: a pairing made by one instance's runner reaches a socket of the
other), and plays through the balancer.

Measured: the re-pairing wait, from the moment a player saw its match end (the state frame
whose phase is `over`) to its next `paired` frame, for the matches that ended before the
arena's end (a player whose end came first and who was never paired again is counted
apart, with its wait to the end); the join latency (request to answer); matches played,
matches/s, pairing passes (`TablesPaired` events); and the wait in two parts, from the
end seen to the decision of the pass that paired the player again (the `TablesPaired`'s
`at`: waiting for a pass that scores the match and pairs them), and from that decision to
the `paired` frame (the pass's own work, its commit, the arena socket's re-read and send).
Baseline, in the same run on the same cluster: tables of fresh guests seated by quick
play's ranked pool of the arena's table size (`2-ranked` or `4-ranked`), every guest of a
table entering at once: the wait from the entry's acknowledgement to the `seated` frame
(then they leave the match, which CPUs play out). Both are "a runner's pass forms a table
of people who are ready and a socket tells them": the ratio says what the arena's
re-pairing costs over the pools' best case.

Checked at the end (after the clock, once every match ended and the arena is finished):
from the arena's events, no player seated in a match while another of theirs runs, every
table full and paired before the end; every match's party carries the arena's id and is
ranked, and its match finished; each player's matches, as its paired frames brought them,
are the tables the events give it; the arena, exported from the store, verifies offline,
and the live standings (`GET /api/tournaments/{id}`: player, score, matches, rank) equal
the verified fold's. Any failure is a problem: printed, and the exit status is 1.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import statistics
import time
from collections import Counter, deque
from collections.abc import Sequence
from typing import Any

import httpx
import msgspec
import websockets
from websockets.exceptions import WebSocketException

from benchmarks.common import BenchError, loadavg, percentile, scratch_cluster
from benchmarks.harness import Bench, Figures, Say, print_problems, to_stderr
from benchmarks.pairing_bench import Guest, PoolGuest
from domain import arena as ar
from ludo_cli.arguments import positive_float, positive_int

__all__ = ["BENCH", "ArenaPlayer", "bench", "measure", "seated_twice", "standings_apart"]

ARENA_MINUTES = 20  # the arena's length: the shortest the domain allows
TURN_LIMIT = 30  # s a turn (an arena's shorter limit)
FINISH_WITHIN = 600.0  # s after the clock: at most, for the last matches to end
RECONNECT_FOR = 120.0  # s a match socket may fail before the player gives up
MISSED_AFTER = 15.0  # s a match the arena view gives a player may go without its frame
BASELINE_EVERY = 3.0  # s between two quick-play tables of the baseline
PROGRESS_EVERY = 15.0  # s between two progress lines
# Nothing more to pair: every match scored after the end (a pass that decided before the
# end may commit after it: "ended" is not enough), or cancelled.
OVER = ("finished", "cancelled")
# Answers to a command that only say another actor (a deadline, a stand-in) came first:
# the next state frame tells the player what to do.
_RACES = frozenset({"conflict", "not_your_turn", "stood_in", "cpu_playing", "match_finished"})


# ---------------------------------------------------------------- the frames a player reads


class _Seat(msgspec.Struct):
    player_id: str | None = None
    stood_in: str | None = None


class _Match(msgspec.Struct):
    phase: str
    turn: int | None = None
    seats: list[_Seat] = []


class _Move(msgspec.Struct):
    piece: int


class _MatchFrame(msgspec.Struct):
    """What a player reads of a match socket's frame (the rest is skipped)."""

    type: str
    version: int | None = None
    match: _Match | None = None
    moves: list[_Move] = []
    frames: list[_MatchFrame] = []  # a batch frame's event frames and state frame
    seat: int | None = None  # hello's answer
    error: str | None = None


class _You(msgspec.Struct):
    state: str
    match_id: str | None = None


class _Arena(msgspec.Struct):
    status: str
    ends_at: str
    you: _You | None = None


class _ArenaFrame(msgspec.Struct):
    """What a player reads of an arena socket's frame (the standings are skipped)."""

    type: str
    arena: _Arena | None = None
    match_id: str | None = None
    player_id: str | None = None
    error: str | None = None


_match_frame = msgspec.json.Decoder(_MatchFrame).decode
_arena_frame = msgspec.json.Decoder(_ArenaFrame).decode


def _send(message: dict[str, Any]) -> str:
    return msgspec.json.encode(message).decode()


# --------------------------------------------------------------------------- the player


class ArenaPlayer(Guest):
    """One simulated player (module docstring): a guest, its arena socket, its matches."""

    def __init__(self, index: int, name: str) -> None:
        super().__init__(name)
        self.index = index
        self.join_latency = float("nan")
        self.played: list[str] = []  # match ids, in the order their paired frames came
        self.waits: list[float] = []  # re-pairing waits (s)
        self.wait_ends: list[float] = []  # when the end of each wait's match was seen
        self.joined_at = 0.0  # when the join was answered (monotonic)
        self.ended_epoch: dict[str, float] = {}  # match -> when its end was seen
        self.paired_epoch: dict[str, float] = {}  # match -> when its paired frame came
        self.unpaired_at_end: float | None = None  # a wait the arena's end cut short (s)
        self.paired_first = 0  # paired frames that came before the end of the last match
        self.stood_in = 0  # times its seat was found played by a CPU (it reclaimed it)
        self.errors: Counter[str] = Counter()  # error frames other than races
        self.reconnects: Counter[str] = Counter()  # match sockets opened again, and why
        self.problems: list[str] = []
        self.served_by: dict[str, str] = {}
        self.arena_frames = 0  # arena frames received (the whole view each)
        self.arena_bytes = 0
        self.status = ""
        self.ends_at = 0.0
        self.you: _You | None = None
        self._paired: deque[tuple[str, float]] = deque()
        self._changed = asyncio.Event()
        self._hello = asyncio.Event()

    async def connect(self, ws_base: str, arena_id: str) -> None:
        """The arena socket, with hello said (the player's presence)."""
        self._socket = await websockets.connect(
            f"{ws_base}/ws/tournament/{arena_id}", max_size=None
        )
        self.served_by["arena_socket"] = ws_base
        self._reader = asyncio.create_task(self._read())
        await self._socket.send(_send({"type": "hello", "token": self.token}))
        async with asyncio.timeout(60):
            await self._hello.wait()

    async def _read(self) -> None:
        with contextlib.suppress(websockets.ConnectionClosed):
            async for raw in self._socket:
                frame = _arena_frame(raw)
                self.arena_frames += frame.type == "arena"
                self.arena_bytes += len(raw) if frame.type == "arena" else 0
                if frame.type == "paired" and frame.match_id is not None:
                    self._paired.append((frame.match_id, time.monotonic()))
                    self.paired_epoch.setdefault(frame.match_id, time.time())
                elif frame.type == "arena" and frame.arena is not None:
                    self.status = frame.arena.status
                    self.you = frame.arena.you
                    self.ends_at = _epoch(frame.arena.ends_at)
                elif frame.type == "hello":
                    self._hello.set()
                elif frame.type == "error":
                    self.problems.append(f"{self.name}: arena socket error {frame.error}")
                self._changed.set()
        self._changed.set()

    async def join(self, http: httpx.AsyncClient, arena_id: str) -> None:
        """Join through `http` (one instance); the latency is request to answer."""
        started = time.monotonic()
        r = await http.post(
            f"/api/tournaments/{arena_id}/join", json={"client_seed": self.name}, headers=self.auth
        )
        self.joined_at = time.monotonic()
        self.join_latency = self.joined_at - started
        self.served_by["join"] = str(http.base_url)
        if r.status_code != 200:
            raise BenchError(f"{self.name} could not join ({r.status_code}): {r.text[:200]}")

    async def play_arena(self, ws_base: str) -> None:
        """Every match the arena pairs this player into, until its end (module docstring)."""
        ended: tuple[float, float] | None = None  # the last match's end: monotonic, epoch
        while True:
            paired = await self._next_match()
            if paired is None:
                if ended is not None and ended[1] < self.ends_at:
                    self.unpaired_at_end = self.ends_at - ended[1]
                return
            match_id, at = paired
            if ended is not None and ended[1] < self.ends_at:
                if at < ended[0]:
                    self.paired_first += 1
                self.waits.append(max(0.0, at - ended[0]))
                self.wait_ends.append(ended[0])
            self.played.append(match_id)
            await self._play(ws_base, match_id)
            ended = (time.monotonic(), time.time())
            self.ended_epoch[match_id] = ended[1]

    async def _next_match(self) -> tuple[str, float] | None:
        """The next match's id and when its paired frame came; None once the arena is
        over with nothing left to play. A match the arena's view gives this player but no
        paired frame told for `MISSED_AFTER` seconds is a problem (and played anyway)."""
        noticed: float | None = None
        while True:
            while self._paired:
                match_id, at = self._paired.popleft()
                if match_id not in self.played:
                    return match_id, at
            you = self.you
            if (
                you is not None
                and you.state == "playing"
                and you.match_id is not None
                and you.match_id not in self.played
            ):
                noticed = noticed or time.monotonic()
                if time.monotonic() - noticed > MISSED_AFTER:
                    self.problems.append(f"{self.name}: no paired frame for {you.match_id}")
                    return you.match_id, time.monotonic()
            elif self.status in OVER:
                return None
            if self._reader is None or self._reader.done():
                self.problems.append(f"{self.name}: the arena socket closed")
                return None
            self._changed.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait(), 1.0)

    async def _play(self, ws_base: str, match_id: str) -> None:
        """The match over its socket, to the state frame whose phase is `over`. A socket
        refused (the balancer's 503 while it holds both instances down) or dropped is
        opened again, as the table page does, for at most `RECONNECT_FOR` seconds."""
        url = f"{ws_base}/ws/matches/{match_id}?from=0"
        pause, failing_since = 0.1, None
        while True:
            try:
                async with websockets.connect(url, max_size=None) as ws:
                    if await self._seat_played(ws, match_id):
                        return
            except (OSError, websockets.InvalidStatus, websockets.ConnectionClosed) as error:
                self.reconnects[_why(error)] += 1
            else:
                self.reconnects["closed"] += 1
            failing_since = failing_since or time.monotonic()
            if time.monotonic() - failing_since > RECONNECT_FOR:
                self.problems.append(f"{self.name}: the socket of {match_id} stayed away")
                return
            await asyncio.sleep(pause)  # a reconnection's back-off, as the page's
            pause = min(2 * pause, 2.0)

    async def _seat_played(self, ws: Any, match_id: str) -> bool:
        """Hello, then the seat's commands on each state frame: True at the end."""
        seat: int | None = None
        latest: _MatchFrame | None = None
        acted = reclaimed = -1
        await ws.send(_send({"type": "hello", "token": self.token}))
        async for raw in ws:
            frame = _match_frame(raw)
            if frame.type == "batch":
                latest = next((f for f in reversed(frame.frames) if f.type == "state"), latest)
            elif frame.type == "state":
                latest = frame
            elif frame.type == "hello":
                seat = frame.seat
                if seat is None:
                    self.problems.append(f"{self.name}: no seat at {match_id}")
                    return True
            elif frame.type == "error":
                if frame.error not in _RACES:
                    self.errors[str(frame.error)] += 1
                continue
            else:
                continue  # a result (the state frame follows), presence, stamp
            if latest is None or latest.match is None or latest.version is None:
                continue
            match = latest.match
            if match.phase == "over":
                return True
            if seat is None:
                continue
            if match.seats[seat].stood_in is not None:
                if reclaimed != latest.version:
                    reclaimed = latest.version
                    self.stood_in += 1
                    await ws.send(_send({"type": "reclaim"}))
            elif match.turn == seat and latest.version > acted:
                acted = latest.version
                if match.phase == "roll":
                    await ws.send(_send({"type": "roll"}))
                elif latest.moves:
                    await ws.send(_send({"type": "move", "piece": latest.moves[0].piece}))
        return False


def _why(error: Exception) -> str:
    """A failed socket in a word: the status that refused it, or the error's type."""
    if isinstance(error, websockets.InvalidStatus):
        return f"refused {error.response.status_code}"
    return type(error).__name__


def _epoch(iso: str) -> float:
    import datetime as dt

    return dt.datetime.fromisoformat(iso).timestamp()


# ---------------------------------------------------------------------------- the checks


def seated_twice(events: Sequence[ar.ArenaEvent], seats: int, ends_at: float) -> list[str]:
    """What the arena's events show wrong about its tables: a player paired while a match
    of theirs runs (or twice in one pass), a table not full, a pairing at or after the end,
    a result of a match not running."""
    problems = []
    playing: dict[str, str] = {}  # player -> running match
    running: dict[str, tuple[str, ...]] = {}
    for event in events:
        if isinstance(event, ar.TablesPaired):
            if event.at >= ends_at:
                problems.append(f"a pass paired {len(event.tables)} table(s) after the end")
            for table in event.tables:
                if len(table.players) != seats:
                    problems.append(f"match {table.match_id}: {len(table.players)} players")
                for player in table.players:
                    if player in playing:
                        problems.append(
                            f"player {player} paired into {table.match_id} while in "
                            f"{playing[player]}"
                        )
                    playing[player] = table.match_id
                running[table.match_id] = table.players
        elif isinstance(event, ar.ResultScored):
            players = running.pop(event.match_id, None)
            if players is None:
                problems.append(f"match {event.match_id} scored but not running")
                continue
            for player in players:
                if playing.get(player) == event.match_id:
                    del playing[player]
    return problems


def standings_apart(
    live: Sequence[dict[str, Any]], verified: Sequence[dict[str, Any]]
) -> list[str]:
    """Where the live standings (player_id, score, matches, rank, in order) differ from the
    verified fold's; empty when they are equal."""
    keys = ("player_id", "score", "matches", "rank")
    mine = [tuple(line[k] for k in keys) for line in live]
    theirs = [tuple(line[k] for k in keys) for line in verified]
    if len(mine) != len(theirs):
        return [f"{len(mine)} live standing lines, {len(theirs)} verified"]
    return [
        f"line {i + 1}: live {dict(zip(keys, a, strict=True))}, "
        f"verified {dict(zip(keys, b, strict=True))}"
        for i, (a, b) in enumerate(zip(mine, theirs, strict=True))
        if a != b
    ]


async def _stored_events(database_url: str, arena_id: str) -> tuple[list[ar.ArenaEvent], list[Any]]:
    """The arena's events from the store, decoded, and their rows."""
    from domain.streams import tournament_stream
    from services.shared.database import create_engine
    from services.shared.eventstore import EventStore

    engine = create_engine(database_url)
    try:
        rows = await EventStore(engine).read_stream(tournament_stream(arena_id))
    finally:
        await engine.dispose()
    decoded = [
        ar.decode_arena_event(row.data, type_name=row.type, schema_version=row.schema_version)
        for row in rows
    ]
    return decoded, list(rows)


async def _verified_standings(
    database_url: str, arena_id: str
) -> tuple[list[dict[str, Any]], list[str], int]:
    """The arena exported from the store (`tournament_from_store`, as `ludo tournament
    export` does), written to its file's bytes and read back, then verified offline as
    `ludo tournament verify` does: the standings of the verified fold, what did not
    verify, and the size of the file."""
    from domain.errors import AppError
    from replays.tournament import arena_events, dump_tournament, load_tournament, standing_lines
    from replays.tournament_verify import verify_tournament
    from services.match.replays.tournament_export import tournament_from_store
    from services.shared.database import create_engine
    from services.shared.eventstore import EventStore

    engine = create_engine(database_url)
    try:
        exported = await tournament_from_store(EventStore(engine), arena_id, exported_by="bench")
    except AppError as refused:  # not over: a match still runs
        return [], [f"export: {refused}"], 0
    finally:
        await engine.dispose()
    raw = dump_tournament(exported)
    tournament = load_tournament(raw)
    verdict = verify_tournament(tournament)
    failures = [] if verdict.ok else [f"verify: {verdict.describe()}"]
    lines = [
        {"player_id": s.player_id, "score": s.score, "matches": s.matches, "rank": s.rank}
        for s in standing_lines(arena_events(tournament.events))
    ]
    return lines, failures, len(raw)


async def _check(
    http: httpx.AsyncClient,
    database_url: str,
    arena_id: str,
    seats: int,
    players: list[ArenaPlayer],
) -> dict[str, Any]:
    """The checks of the module docstring; the figures they give and their problems."""
    answer = await http.get(f"/api/tournaments/{arena_id}")
    view = answer.json()
    events, rows = await _stored_events(database_url, arena_id)
    state = ar.fold(events)
    ends_at = state.ends_at
    problems = [p for player in players for p in player.problems]
    if view["status"] != "finished":
        problems.append(f"the arena is {view['status']}, not finished")
    problems += seated_twice(events, seats, ends_at)
    tables = [t for e in events if isinstance(e, ar.TablesPaired) for t in e.tables]
    if state.running:
        problems.append(f"{len(state.running)} match(es) never scored")
    gate = asyncio.Semaphore(20)

    async def table_checked(table: ar.ArenaTable) -> None:
        async with gate:
            party = (await http.get(f"/api/parties/{table.party_id}")).json()
            match = (await http.get(f"/api/matches/{table.match_id}")).json()
        if party.get("arena_id") != arena_id or not party.get("ranked"):
            problems.append(
                f"party {table.party_id}: arena {party.get('arena_id')}, ranked "
                f"{party.get('ranked')}"
            )
        if not match.get("ranked") or match.get("phase") != "over":
            problems.append(
                f"match {table.match_id}: ranked {match.get('ranked')}, {match.get('phase')}"
            )

    await asyncio.gather(*(table_checked(t) for t in tables))
    for player in players:
        theirs = [t.match_id for t in tables if player.player_id in t.players]
        if theirs != player.played:
            problems.append(
                f"{player.name}: played {len(player.played)} match(es), the events give "
                f"{len(theirs)}"
            )
    verified, failures, size = await _verified_standings(database_url, arena_id)
    problems += failures
    apart = standings_apart(view["standings"], verified)
    problems += [f"standings: {line}" for line in apart[:10]]
    passes = [e for e in events if isinstance(e, ar.TablesPaired)]
    decided = {t.match_id: e.at for e in passes for t in e.tables}
    until_pass, pass_to_frame = [], []
    for player in players:
        for before, after in itertools.pairwise(player.played):
            end = player.ended_epoch.get(before)
            if end is not None and end < ends_at and after in player.paired_epoch:
                until_pass.append(decided[after] - end)
                pass_to_frame.append(player.paired_epoch[after] - decided[after])
    scored_at = [
        row.recorded_at.timestamp()
        for row, e in zip(rows, events, strict=True)
        if isinstance(e, ar.ResultScored)
    ]
    span = max(scored_at) - passes[0].at if passes and scored_at else float("nan")
    return {
        "matches": len(state.results),
        "tables_paired": len(tables),
        "matches_per_s": len(state.results) / span if span > 0 else None,
        "pairing_passes": len(passes),
        "tables_per_pass": _quantiles([len(e.tables) for e in passes]),
        # The re-pairing wait in two parts: the end seen to the decision (`at`) of the pass
        # that paired the player again, and that decision to the paired frame.
        "wait_until_the_pass": _quantiles(until_pass),
        "wait_pass_to_frame": _quantiles(pass_to_frame),
        "paired_frames_after_end": sum(
            at >= ends_at for player in players for at in player.paired_epoch.values()
        ),
        "between_pairings": _quantiles([b.at - a.at for a, b in itertools.pairwise(passes)]),
        # Waiting players a pass left out as not connected (no presence seen lately).
        "skipped_as_absent": sum(len(e.skipped) for e in passes),
        "export_bytes": size,
        "view_bytes_at_end": len(answer.content),
        "verified": not failures,
        "standings_compared": len(verified),
        "standings_equal": not apart,
        "problems": problems,
    }


# ---------------------------------------------------------------------------- the run


def _quantiles(values: Sequence[float]) -> dict[str, float | int | None]:
    ordered = sorted(values)
    if not ordered:
        return {"n": 0, "p50": None, "p90": None, "p99": None, "max": None}
    return {
        "n": len(ordered),
        "p50": statistics.median(ordered),
        "p90": percentile(ordered, 0.90),
        "p99": percentile(ordered, 0.99),
        "max": ordered[-1],
    }


async def _create_arena(
    database_url: str, home: str, seats: int, rules: str, minutes_left: float
) -> str:
    """A public 20-minute arena whose clock has `minutes_left` to run, through
    `Arenas.create` of a `MatchParts` in this process (module docstring)."""
    from pathlib import Path

    from services.match.parts import MatchParts
    from services.shared.database import create_engine
    from services.shared.eventstore import EventStore
    from services.shared.settings import Settings

    engine = create_engine(database_url)
    store = EventStore(engine)
    try:
        service = MatchParts(engine, store, Settings(data_dir=Path(home), arena_schedule="[]"))
        starts_at = time.time() - 60 * (ARENA_MINUTES - minutes_left)
        state = await service.arenas.create(
            name=f"bench: {seats}-player arena",
            seats=seats,
            rules=rules,
            turn_limit=TURN_LIMIT,
            minutes=ARENA_MINUTES,
            starts_at=starts_at,
            private=False,
        )
    finally:
        await store.close()
        await engine.dispose()
    assert state.created is not None
    return state.created.arena_id


async def _baseline(
    base: str, seats: int, until: float, waits: list[float], refused: Counter[str]
) -> None:
    """Quick play's `{seats}-ranked` pool, one table of fresh guests at a time until
    `until` (epoch): every guest's wait from its entry's acknowledgement to `seated`;
    the tables that failed (a socket or a request refused), by why, in `refused`."""
    pool = f"{seats}-ranked"
    n = 0
    while time.time() < until:
        guests = [PoolGuest(base, f"base{n}-{i}") for i in range(seats)]
        n += 1
        # A client per table: no kept-alive connection outlives the service's keep-alive.
        async with httpx.AsyncClient(base_url=base, timeout=60) as http:
            try:
                await asyncio.gather(*(g.connect(http) for g in guests))
                await asyncio.gather(*(g.enter(http, pool) for g in guests))
                seated = await asyncio.gather(*(g.until_seated() for g in guests))
                waits += [g.wait for g in guests]
                for guest, frame in zip(guests, seated, strict=True):
                    url = f"/api/matches/{frame['match_id']}/leave"
                    with contextlib.suppress(httpx.TransportError):  # CPUs play it out anyway
                        await http.post(url, headers=guest.auth)
            except (
                BenchError,
                TimeoutError,
                httpx.HTTPError,
                OSError,
                WebSocketException,
            ) as error:
                # A table the balancer or a loaded instance refused: counted, and the next.
                refused[_why(error)] += 1
            finally:
                await asyncio.gather(*(g.close() for g in guests))
        # The baseline's own pace, not a synchronisation: one table every few seconds.
        await asyncio.sleep(BASELINE_EVERY)


async def _progress(
    http: httpx.AsyncClient, arena_id: str, players: list[ArenaPlayer], say: Say
) -> None:
    while True:
        await asyncio.sleep(PROGRESS_EVERY)
        with contextlib.suppress(httpx.HTTPError, KeyError, ValueError):
            view = (await http.get(f"/api/tournaments/{arena_id}")).json()
            states = Counter(line["state"] for line in view["standings"])
            left = _epoch(view["ends_at"]) - time.time()
            waits = sorted(w for p in players for w in p.waits)
            p50 = f"{statistics.median(waits):.2f} s" if waits else "-"
            say(
                f"{view['status']}, {left:.0f} s left: {view['matches_total']} matches scored, "
                f"{len(view['running'])} running; {states['waiting']} waiting, "
                f"{states['playing']} playing, {states['paused']} paused; re-pairing "
                f"waits {len(waits)}, p50 {p50}"
            )


async def _run(
    base: str,
    instances: list[str],
    database_url: str,
    home: str,
    count: int,
    seats: int,
    rules: str,
    minutes_left: float,
    say: Say,
) -> Figures:
    players = [ArenaPlayer(i, f"p{i}") for i in range(count)]
    cpu_started, wall_started = time.process_time(), time.monotonic()
    limits = httpx.Limits(max_connections=200)
    ws_base = base.replace("http://", "ws://")
    async with contextlib.AsyncExitStack() as stack:
        http = await stack.enter_async_context(
            httpx.AsyncClient(base_url=base, timeout=60, limits=limits)
        )
        direct = [
            await stack.enter_async_context(
                httpx.AsyncClient(base_url=url, timeout=60, limits=limits)
            )
            for url in instances
        ]
        # The bench's own reads (progress, the checks) go to an instance directly: the
        # balancer may hold both down for a moment under this load (its 503s are counted).
        reads = direct[0]
        say(f"{count} guests ...")
        for start in range(0, count, 50):
            await asyncio.gather(*(p.become(http) for p in players[start : start + 50]))
        arena_id = await _create_arena(database_url, home, seats, rules, minutes_left)
        say(f"arena {arena_id}: {seats}-player, {minutes_left:g} of {ARENA_MINUTES} minutes left")
        try:
            say("arena sockets (each on the instance it does not join through), hello ...")
            for start in range(0, count, 50):
                await asyncio.gather(
                    *(
                        p.connect(
                            instances[(p.index + 1) % 2].replace("http://", "ws://"), arena_id
                        )
                        for p in players[start : start + 50]
                    )
                )
            view = (await http.get(f"/api/tournaments/{arena_id}")).json()
            ends_at = _epoch(view["ends_at"])
            say(f"joining, {ends_at - time.time():.0f} s before the end ...")
            gate = asyncio.Semaphore(50)

            async def one(player: ArenaPlayer) -> None:
                async with gate:
                    await player.join(direct[player.index % 2], arena_id)
                await player.play_arena(ws_base)

            base_waits: list[float] = []
            base_refused: Counter[str] = Counter()
            baseline = asyncio.create_task(
                _baseline(base, seats, ends_at - 2 * BASELINE_EVERY, base_waits, base_refused)
            )
            progress = asyncio.create_task(_progress(reads, arena_id, players, say))
            played_from = time.monotonic()
            try:
                async with asyncio.timeout(ends_at - time.time() + FINISH_WITHIN):
                    await asyncio.gather(*(one(p) for p in players))
                    await baseline
            except TimeoutError:
                raise BenchError(
                    f"the arena's matches did not end within {FINISH_WITHIN:.0f} s of its end"
                ) from None
            finally:
                progress.cancel()
                baseline.cancel()
                await asyncio.gather(progress, baseline, return_exceptions=True)
            played_until = time.monotonic()
            say("every player done; waiting for the arena to be finished ...")
            deadline = time.monotonic() + 60
            while (await reads.get(f"/api/tournaments/{arena_id}")).json()["status"] != "finished":
                if time.monotonic() > deadline:
                    break
                await asyncio.sleep(0.5)  # polling the arena's status, bounded
        finally:
            await asyncio.gather(*(p.close() for p in players))
        say("checking the pairings, the matches and the standings ...")
        checked = await _check(reads, database_url, arena_id, seats, players)
    waits = [w for p in players for w in p.waits]
    joins_done = max(p.joined_at for p in players)
    after_joins = [
        w for p in players for w, end in zip(p.waits, p.wait_ends, strict=True) if end > joins_done
    ]
    pool = _quantiles(base_waits)
    played_for = played_until - played_from
    return {
        "arena_id": arena_id,
        "players": count,
        "seats": seats,
        "rules": rules,
        "minutes_left": minutes_left,
        **{k: v for k, v in checked.items() if k != "problems"},
        "repairing_wait": _quantiles(waits),
        # The same, of the matches that ended once every join had been answered.
        "repairing_wait_after_joins": _quantiles(after_joins),
        "joins_took": joins_done - played_from,
        "paired_before_end_seen": sum(p.paired_first for p in players),
        "unpaired_at_end": _quantiles(
            [p.unpaired_at_end for p in players if p.unpaired_at_end is not None]
        ),
        "join_latency": _quantiles([p.join_latency for p in players]),
        "baseline_pool": pool,
        "repairing_over_pool_p50": (
            statistics.median(waits) / pool["p50"] if waits and pool["p50"] else None
        ),
        "stood_in": sum(p.stood_in for p in players),
        "arena_frames_per_s": sum(p.arena_frames for p in players) / played_for,
        "arena_frame_bytes_per_s": sum(p.arena_bytes for p in players) / played_for,
        "clients_cpu_share": (time.process_time() - cpu_started)
        / (time.monotonic() - wall_started),
        "errors": dict(sum((p.errors for p in players), Counter())),
        "loadavg": loadavg(),
        "baseline_refused": dict(base_refused),
        "match_socket_reconnects": dict(sum((p.reconnects for p in players), Counter())),
        "problems": checked["problems"] + ([] if base_waits else ["no baseline table seated"]),
    }


def bench(
    *,
    players: int = 200,
    seats: int = 2,
    minutes_left: float = 5.0,
    rules: str = "standard",
    port: int | None = None,
    say: Say = to_stderr,
) -> Figures:
    """Runs the whole bench; returns the figures (see the module docstring)."""
    if seats not in ar.ARENA_SEATS:
        raise BenchError(f"--seats is one of {ar.ARENA_SEATS}")
    if not 0 < minutes_left < ARENA_MINUTES:
        raise BenchError(f"--minutes-left is more than 0 and less than {ARENA_MINUTES}")
    if players < seats:
        raise BenchError(f"--players is at least one table ({seats})")
    env = {
        "LUDO_CPU_DELAY": "0",
        "LUDO_PAIRING": "true",
        "LUDO_ARENA_SCHEDULE": "[]",
        # A CPU client answers each state frame at once: faster than the 20 messages a
        # second a socket is allowed (a person's pace), which would hold its turns back.
        "LUDO_WS_MESSAGE_RATE": "0",
    }
    with scratch_cluster("ludo-arena-", env=env, port=port, say=say) as (cluster, pg):
        instances = [f"http://127.0.0.1:{m.port}" for m in cluster.match]
        home = str(pg.pgdata.parent)
        return asyncio.run(
            _run(cluster.url, instances, pg.url, home, players, seats, rules, minutes_left, say)
        )


def _options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--players", type=positive_int, default=200, help="simulated players")
    parser.add_argument("--seats", type=int, choices=ar.ARENA_SEATS, default=2, help="a table's")
    parser.add_argument(
        "--minutes-left",
        type=positive_float,
        default=5.0,
        help=f"minutes the {ARENA_MINUTES}-minute arena has left when the players come",
    )
    parser.add_argument("--rules", choices=ar.ARENA_RULES, default="standard")
    parser.add_argument("--port", type=positive_int, help="the balancer's port (default: free)")


def measure(args: argparse.Namespace, say: Say) -> Figures:
    return bench(
        players=args.players,
        seats=args.seats,
        minutes_left=args.minutes_left,
        rules=args.rules,
        port=args.port,
        say=say,
    )


def _s(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def print_table(f: Figures) -> None:
    print(
        f"\nludo bench arena: {f['players']} players, {f['seats']}-player tables "
        f"({f['rules']}), the last {f['minutes_left']:g} minutes of a {ARENA_MINUTES}-minute "
        f"arena, 2 match instances (loadavg {f['loadavg']})\n"
    )
    print(
        f"matches played {f['matches']} ({_s(f['matches_per_s'])}/s), pairing passes "
        f"{f['pairing_passes']} (tables per pass p50 {_s(f['tables_per_pass']['p50'])}, "
        f"max {f['tables_per_pass']['max']}); paired frames after the end "
        f"{f['paired_frames_after_end']}"
    )
    between = f["between_pairings"]
    print(
        f"between two pairings (s): p50 {_s(between['p50'])}, p90 {_s(between['p90'])}, "
        f"max {_s(between['max'])}; waiting players skipped as not connected "
        f"{f['skipped_as_absent']}"
    )
    for label, w in (
        ("re-pairing wait (s)", f["repairing_wait"]),
        (
            f"  of matches ended after the last join ({f['joins_took']:.0f} s in)",
            f["repairing_wait_after_joins"],
        ),
    ):
        print(
            f"{label}: n {w['n']}, p50 {_s(w['p50'])}, p90 {_s(w['p90'])}, "
            f"p99 {_s(w['p99'])}, max {_s(w['max'])}"
        )
    for label, w in (
        ("  its part until the pass that paired again (s)", f["wait_until_the_pass"]),
        ("  its part from that pass's decision to the frame (s)", f["wait_pass_to_frame"]),
    ):
        print(f"{label}: p50 {_s(w['p50'])}, p90 {_s(w['p90'])}, max {_s(w['max'])}")
    print(
        f"paired before the end was seen {f['paired_before_end_seen']}; left unpaired at the "
        f"end {f['unpaired_at_end']['n']}"
    )
    j = f["join_latency"]
    print(f"join latency (s): p50 {_s(j['p50'])}, p99 {_s(j['p99'])}, max {_s(j['max'])}")
    b = f["baseline_pool"]
    ratio = f["repairing_over_pool_p50"]
    print(
        f"baseline, quick play's {f['seats']}-ranked table seated (s): n {b['n']}, "
        f"p50 {_s(b['p50'])}, p99 {_s(b['p99'])}; re-pairing p50 / baseline p50: "
        f"{'-' if ratio is None else f'{ratio:.2f}x'}"
    )
    print(
        f"export {f['export_bytes']:,} bytes, verified offline: {f['verified']}; standings: "
        f"{f['standings_compared']} lines, live = verified: {f['standings_equal']}; "
        f"seats stood in {f['stood_in']}; errors {f['errors'] or 'none'}"
    )
    print(
        f"match sockets opened again: {f['match_socket_reconnects'] or 'none'}; baseline "
        f"tables that failed: {f['baseline_refused'] or 'none'}"
    )
    print(
        f"arena frames: {f['arena_frames_per_s']:.0f}/s, "
        f"{f['arena_frame_bytes_per_s'] / 1e6:.1f} MB/s to the players; the view at the end "
        f"{f['view_bytes_at_end']:,} bytes; the clients' CPU {100 * f['clients_cpu_share']:.0f}% "
        "of a core"
    )
    print_problems(
        f["problems"],
        "nobody in two matches, every table full and paired before the end, every match "
        "ranked and at the arena's party, the export verifies, standings equal",
    )


BENCH = Bench(
    name="arena",
    help="N players in an arena's last minutes through two instances; waits, checks",
    options=_options,
    measure=measure,
    table=print_table,
    failed=lambda figures: bool(figures["problems"]),
)
