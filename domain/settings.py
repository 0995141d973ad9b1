"""Every table setting's allowed values, defined once: a party's (lobby table), an arena's
and a quick-play pool's (docs/api.md "Table settings").

Each option is a `Literal` type here, and its tuple of values is read off that type, so the
two cannot drift: the Deciders (`domain.party`, `domain.arena`, `domain.pool`) judge
commands by the tuples, the request bodies (`services/match/schemas.py`,
`services/match/arenas/routes.py`) are typed with the Literals (msgspec refuses anything
else with a 422 naming the field), the operator's schedule checks its entries by the
tuples, and the pages get `CHOICES` embedded (`services.shared.pages`), so their forms
offer exactly these values. `tests/test_settings.py` holds every other file to that.
"""

from __future__ import annotations

from typing import Any, Final, Literal, get_args

__all__ = [
    "ARENA_MINUTES",
    "ARENA_RULES",
    "ARENA_SEATS",
    "ARENA_TURN_LIMITS",
    "CHOICES",
    "CPU_LEVELS",
    "CPU_SPEEDS",
    "CPU_WAITS",
    "MAX_SEATS",
    "MIN_SEATS",
    "PARTY_SEATS",
    "POOL_SEATS",
    "POOL_TURN_LIMIT",
    "TIMED_TURN_LIMITS",
    "TURN_LIMITS",
    "ArenaMinutes",
    "ArenaSeats",
    "CpuLevel",
    "CpuSpeed",
    "CpuWait",
    "PartySeats",
    "PoolSeats",
    "PresetName",
    "TurnLimit",
    "one_of",
]

# ---------------------------------------------------------------------------- a party's

# Players at a lobby table.
PartySeats = Literal[2, 3, 4]
PARTY_SEATS: Final[tuple[PartySeats, ...]] = get_args(PartySeats)
MIN_SEATS: Final = min(PARTY_SEATS)
MAX_SEATS: Final = max(PARTY_SEATS)
# A turn's time limit in seconds; a party may also have none (None).
TurnLimit = Literal[30, 60]
TIMED_TURN_LIMITS: Final[tuple[TurnLimit, ...]] = get_args(TurnLimit)
TURN_LIMITS: Final[tuple[TurnLimit | None, ...]] = (None, *TIMED_TURN_LIMITS)
# How long the CPUs pause before each action (the service's `LUDO_CPU_DELAY`, or a quarter
# of it when fast): the host's choice for the table, pinned by each match it opens.
CpuSpeed = Literal["normal", "fast"]
CPU_SPEEDS: Final[tuple[CpuSpeed, ...]] = get_args(CpuSpeed)
# How well a CPU plays (`domain.cpu`).
CpuLevel = Literal["easy", "normal", "hard"]
CPU_LEVELS: Final[tuple[CpuLevel, ...]] = get_args(CpuLevel)
# A preset of `domain.rules.PRESETS` (the site's own, or BGA's); a party may override its
# options one by one, an arena plays one as it is.
PresetName = Literal["standard", "bga"]

# ---------------------------------------------------------------------------- an arena's

ArenaSeats = Literal[2, 4]
ARENA_SEATS: Final[tuple[ArenaSeats, ...]] = get_args(ArenaSeats)
ArenaMinutes = Literal[20, 30, 60]
ARENA_MINUTES: Final[tuple[ArenaMinutes, ...]] = get_args(ArenaMinutes)
# An arena's tables always have a turn limit: one of a party's.
ARENA_TURN_LIMITS: Final = TIMED_TURN_LIMITS
ARENA_RULES: Final[tuple[PresetName, ...]] = get_args(PresetName)

# ------------------------------------------------------------------------------ a pool's

PoolSeats = Literal[2, 4]
POOL_SEATS: Final[tuple[PoolSeats, ...]] = get_args(PoolSeats)
# Every pooled table plays the site's own rules with this turn limit: a table of strangers
# never stalls on someone who walked away.
POOL_TURN_LIMIT: Final = TIMED_TURN_LIMITS[0]
# What a casual player may choose to wait (seconds) before CPUs fill the table; None:
# people only. The first is the default.
CpuWait = Literal[10, 30]
CPU_WAITS: Final[tuple[CpuWait | None, ...]] = (*get_args(CpuWait), None)

# ------------------------------------------------------------------------- for the pages

# What the pages' forms offer, with each form's default (the request bodies' defaults).
# `ranked` and `stamps` are yes/no: a casual table (`ranked` false) with stamps on.
CHOICES: Final[dict[str, dict[str, Any]]] = {
    "party": {
        "seats": list(PARTY_SEATS),
        "turn_limit": list(TURN_LIMITS),
        "cpu_speed": list(CPU_SPEEDS),
        "cpu_level": list(CPU_LEVELS),
        "defaults": {
            "seats": MAX_SEATS,
            "turn_limit": None,
            "ranked": False,
            "stamps": True,
            "cpu_speed": "normal",
            "cpu_level": "normal",
        },
    },
    "arena": {
        "seats": list(ARENA_SEATS),
        "rules": list(ARENA_RULES),
        "turn_limit": list(ARENA_TURN_LIMITS),
        "minutes": list(ARENA_MINUTES),
        "defaults": {
            "seats": ARENA_SEATS[0],
            "rules": ARENA_RULES[0],
            "turn_limit": ARENA_TURN_LIMITS[0],
            "minutes": ARENA_MINUTES[0],
        },
    },
    "pool": {
        "seats": list(POOL_SEATS),
        "cpu_after": list(CPU_WAITS),
        "turn_limit": POOL_TURN_LIMIT,
        "defaults": {"seats": max(POOL_SEATS), "ranked": False, "cpu_after": CPU_WAITS[0]},
    },
}


def one_of(values: tuple[Any, ...]) -> str:
    """The values as an error message says them: "none, 30 or 60" (None is "none")."""
    words = ["none" if v is None else str(v) for v in values]
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} or {words[-1]}"
