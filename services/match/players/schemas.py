"""The players' request bodies and responses: a new guest, a new name, who am I."""

from __future__ import annotations

import msgspec

from services.match.guest_names import Lang
from services.match.schemas import Body, Name


class NewPlayer(Body):
    """A guest's display name."""

    name: Name


class NewGuest(Body):
    """A new guest: its display name, or none and the language (`ja`, `en` or `hi`,
    default `en`) of a name made up for it (a colour, an animal and a number: "金色のラッコ42",
    "Golden Otter 42", "स्वर्ण ऊदबिलाव 42"), which the guest can change later like any
    name."""

    name: Name | msgspec.UnsetType = msgspec.UNSET
    lang: Lang = "en"


class PlayerOut(msgspec.Struct, kw_only=True, omit_defaults=True):
    """A guest; `token` only in the response that created it."""

    id: str
    name: str
    token: str | None = None
