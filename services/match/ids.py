"""Public ids (parties, matches, players) as the API takes them."""

from __future__ import annotations

import uuid

from domain.errors import NotFound

__all__ = ["check_id"]


def check_id(value: str, what: str) -> str:
    """A public id (a UUID); anything else is an unknown id (404)."""
    try:
        return str(uuid.UUID(value))
    except ValueError:
        raise NotFound(f"no such {what}") from None
