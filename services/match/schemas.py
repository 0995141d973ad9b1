"""Request bodies and responses of the match service (msgspec Structs, documented in OpenAPI).

Bodies forbid unknown fields, so a misspelt key is a 422 naming it, not silently ignored.
"""

from __future__ import annotations

from typing import Annotated

import msgspec

from domain.settings import MAX_SEATS, CpuLevel, CpuSpeed

# Every setting's values are `domain.settings`' own types (one definition, docs/api.md).
CpuLevelName = CpuLevel
CpuSpeedName = CpuSpeed
Name = Annotated[str, msgspec.Meta(min_length=1, max_length=32)]
ClientSeed = Annotated[str, msgspec.Meta(max_length=64, pattern=r"^[ -~]*$")]
SeatIndex = Annotated[int, msgspec.Meta(ge=0, le=MAX_SEATS - 1)]
StampId = Annotated[str, msgspec.Meta(min_length=1, max_length=32)]


class Body(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    pass


# ------------------------------------------------------------------------------ responses
