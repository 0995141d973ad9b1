"""Idempotency-Key handling shared by match and party commands.

A command sent with an `Idempotency-Key` is recorded as `"{player_id}:{key}"` with the
events it appended (the event store's `commands` table). Sent again, it returns its first
outcome instead of being decided again, and a key first used for another request is
refused. These helpers are that rule, written once."""

from __future__ import annotations

import hashlib

import msgspec

from domain.errors import Invalid
from services.match.guests import Player
from services.shared.eventstore import AppendResult, EventStore

__all__ = ["command_id", "done_meanwhile", "fingerprint", "metadata", "same_request"]


def command_id(player: Player, key: str | None) -> str | None:
    """The recorded id of `player`'s command sent with `key` (None: no key)."""
    if key is None:
        return None
    # Printable ASCII without the space: "!" to "~".
    if not 1 <= len(key) <= 100 or not (key.isascii() and key.isprintable()) or " " in key:
        raise Invalid(
            "Idempotency-Key must be 1-100 printable ASCII characters without spaces",
            field="Idempotency-Key",
        )
    return f"{player.id}:{key}"


def metadata(actor: str, command_id: str | None, request: str) -> dict[str, str]:
    """Event metadata: the actor, and with an Idempotency-Key what the request asked."""
    if command_id is None:
        return {"actor": actor}
    return {"actor": actor, "request": request}


def fingerprint(command: msgspec.Struct) -> str:
    """What a party command asks, as kept beside its Idempotency-Key (see `same_request`)."""
    return hashlib.sha256(msgspec.json.encode(command)).hexdigest()[:32]


def same_request(done: AppendResult, request: str) -> None:
    """A repeated Idempotency-Key must repeat its request: a key first used to move piece
    0 and now sent to move piece 1 (or to leave) is refused, not answered with the first
    outcome as if the new request had been carried out. Records from before the request
    was kept (no `request` in the metadata) are taken as the same."""
    recorded = done.events[0].metadata.get("request") if done.events else None
    if recorded is not None and recorded != request:
        raise Invalid(
            "this Idempotency-Key already named a different request; use a new key",
            code="idempotency_key_reused",
            field="Idempotency-Key",
        )


async def done_meanwhile(
    store: EventStore, command_id: str | None, stream: str, request: str
) -> AppendResult | None:
    """After a refusal or a version conflict: the first outcome of `command_id` if an
    identical request with the same key committed since this one looked it up (it then
    decided on the state that request had already changed), else None. A key used for
    another request is still refused (`idempotency_key_reused`)."""
    if command_id is None:
        return None
    done = await store.find_command(command_id, stream)
    if done is not None:
        same_request(done, request)
    return done
