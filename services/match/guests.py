"""Guest players: created with a name, known by a secret token kept on their device
(docs/design.md#the-match-service). The token is stored only as its sha256."""

from __future__ import annotations

import hashlib
import random
import secrets
import time
import uuid
from collections import OrderedDict

import msgspec
import sqlalchemy as sa
import structlog
from sqlalchemy.ext.asyncio import AsyncEngine

from domain.errors import Invalid
from services.match.caches import remember
from services.match.guest_names import Lang, generated_name

__all__ = ["Guests", "Player", "token_hash"]

_log = structlog.get_logger(__name__)

_PLAYER_CACHE = 10_000
_PLAYER_TTL = 300.0  # seconds; tokens never change, the TTL only bounds staleness
_NAMES = random.SystemRandom()  # made-up names need no seed: nothing replays them


class Player(msgspec.Struct, frozen=True):
    """An authenticated guest."""

    id: str
    name: str


def token_hash(token: str) -> bytes:
    return hashlib.sha256(token.encode()).digest()


class Guests:
    """Create, rename and recognise guests. Token -> player is kept in this process's
    memory for `_PLAYER_TTL` (unknown tokens are not cached: a guest may be created
    meanwhile)."""

    def __init__(self, engine: AsyncEngine) -> None:
        self.engine = engine
        self._reader = engine.execution_options(isolation_level="AUTOCOMMIT")
        self._players: OrderedDict[bytes, tuple[float, Player]] = OrderedDict()

    async def create(self, name: str | None, lang: Lang = "en") -> tuple[Player, str]:
        """A new guest and its secret token (stored only as a sha256). Without a `name`,
        one made up in `lang` (`guest_names.py`), checked as any other."""
        name = _valid_name(generated_name(lang, _NAMES) if name is None else name)
        player = Player(str(uuid.uuid4()), name)
        token = secrets.token_urlsafe(32)
        async with self.engine.begin() as conn:
            await conn.execute(
                sa.text("INSERT INTO players (id, name, token_hash) VALUES (:id, :name, :h)"),
                {"id": player.id, "name": name, "h": token_hash(token)},
            )
        _log.info("player_created", player_id=player.id)
        return player, token

    async def rename(self, player: Player, token: str, name: str) -> Player:
        """The same guest under a new display name (seats already taken keep the name
        they were taken with: events are never rewritten). Other instances' token caches
        may show the old name for new seats until their entry expires (`_PLAYER_TTL`)."""
        name = _valid_name(name)
        async with self.engine.begin() as conn:
            await conn.execute(
                sa.text("UPDATE players SET name = :name WHERE id = :id"),
                {"id": player.id, "name": name},
            )
        renamed = Player(player.id, name)
        remember(
            self._players,
            token_hash(token),
            (time.monotonic() + _PLAYER_TTL, renamed),
            _PLAYER_CACHE,
        )
        _log.info("player_renamed", player_id=player.id)
        return renamed

    async def exists(self, player_id: str) -> bool:
        async with self._reader.connect() as conn:
            found = await conn.scalar(
                sa.text("SELECT 1 FROM players WHERE id = :id"), {"id": player_id}
            )
        return found is not None

    async def for_token(self, token: str) -> Player | None:
        digest = token_hash(token)
        cached = self._players.get(digest)
        now = time.monotonic()
        if cached is not None and cached[0] > now:
            return cached[1]
        async with self._reader.connect() as conn:
            row = (
                await conn.execute(
                    sa.text("SELECT id, name FROM players WHERE token_hash = :h"),
                    {"h": digest},
                )
            ).one_or_none()
        if row is None:  # unknown tokens are not cached (a guest may be created meanwhile)
            return None
        player = Player(row.id, row.name)
        remember(self._players, digest, (now + _PLAYER_TTL, player), _PLAYER_CACHE)
        return player


def _valid_name(name: str) -> str:
    name = name.strip()
    if not name or not name.isprintable():
        raise Invalid("name must be 1-32 printable characters", field="name")
    return name
