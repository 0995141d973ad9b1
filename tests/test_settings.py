"""Every table setting's allowed values are defined once, in `domain/settings.py`: the
request bodies' types are its own, the pages are served its `CHOICES`, docs/api.md "Table
settings" says the same, and no other file of the code writes one of its sets again."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, get_args, get_type_hints

import msgspec
import pytest

from domain import events, rules, settings
from domain.pool import POOL_KINDS
from services.match.arenas.schemas import ArenaCreate
from services.match.parties.schemas import AddCpu, ChangeSettings, NewParty
from services.match.pools.schemas import EnterPool, PoolName
from services.shared import arena_schedule
from services.shared.pages import page_response
from tests.paths import ROOT

# The code the sets must not be written again in (the tests spell values out on purpose).
CODE = ("domain", "services", "replays", "ludo_cli", "benchmarks", "web")
SUFFIXES = (".py", ".js", ".html")

# Every set of values `domain.settings` defines, by name.
SETS: dict[str, tuple[Any, ...]] = {
    "PARTY_SEATS": settings.PARTY_SEATS,
    "TIMED_TURN_LIMITS": settings.TIMED_TURN_LIMITS,
    "CPU_SPEEDS": settings.CPU_SPEEDS,
    "CPU_LEVELS": settings.CPU_LEVELS,
    "ARENA_SEATS": settings.ARENA_SEATS,
    "ARENA_MINUTES": settings.ARENA_MINUTES,
    "ARENA_RULES": settings.ARENA_RULES,
    "POOL_SEATS": settings.POOL_SEATS,
    "CPU_WAITS": settings.CPU_WAITS[:-1],
}


def _written(values: tuple[Any, ...]) -> re.Pattern[str]:
    """The set as code writes it: a list, tuple or Literal of exactly these values, maybe
    with a "none" first or last (`[30, 60]`, `(None, 30, 60)`, `Literal[0, 30, 60]`,
    `["normal", "fast"]`, `(10, 30, None)`), or as a message says it ("30 or 60")."""
    items = [str(v) if isinstance(v, int) else f"[\"']{re.escape(v)}[\"']" for v in values]
    row = r",\s*".join(items)
    none = r"(?:None|null|0|\"\"|'')"
    listed = rf"[\[(]\s*(?:{none},\s*)?{row}\s*(?:,\s*{none}\s*)?[\])]"
    words = [re.escape(str(v)) for v in values]
    said = rf"(?<!\d, )\b{', '.join(words[:-1])} or {words[-1]}\b"
    return re.compile(rf"{listed}|{said}")


# Where a set's values may stand, and why.
ALLOWED = {
    # A board is drawn for 2 to 4 players: the rules' geometry, below any table setting.
    ("domain/board.py", "PARTY_SEATS"),
    # The pool entry body's description, in the OpenAPI document (kept as published).
    ("services/match/pools/schemas.py", "CPU_WAITS"),
}


def _code_files() -> list[Path]:
    return sorted(
        path
        for folder in CODE
        for path in (ROOT / folder).rglob("*")
        if path.suffix in SUFFIXES
        and path != ROOT / "domain" / "settings.py"
        and "node_modules" not in path.parts  # web/'s lint tools, not our code
        and not path.is_relative_to(ROOT / "web" / "test")  # tests spell values out
    )


@pytest.mark.parametrize("name", sorted(SETS))
def test_no_file_writes_a_set_of_values_again(name: str) -> None:
    """A set of `domain.settings` appears in no other file of the code."""
    pattern = _written(SETS[name])
    found = [
        f"{path.relative_to(ROOT)}:{n}: {line.strip()}"
        for path in _code_files()
        for n, line in enumerate(path.read_text("utf-8").splitlines(), 1)
        if pattern.search(line) and (str(path.relative_to(ROOT)), name) not in ALLOWED
    ]
    assert found == []


def test_the_scan_finds_what_it_looks_for() -> None:
    """The scan above would see a set written again, in each of its shapes."""
    assert _written((30, 60)).search("turn_limit: Literal[0, 30, 60] | None")
    assert _written((30, 60)).search("[30, 60].map((n) => n)")
    assert _written((None, 30, 60)[1:]).search("TURN_LIMITS = (None, 30, 60)")
    assert _written(("normal", "fast")).search("for (const s of ['normal', 'fast'])")
    assert _written((20, 30, 60)).search('"an arena lasts 20, 30 or 60 minutes"')
    assert _written((10, 30)).search("CPU_WAITS = (10, 30, None)")
    assert not _written((30, 60)).search("[130, 60]")
    assert not _written((2, 4)).search("share a rank (1, 2, 2, 4)")


def test_each_tuple_is_read_off_its_literal() -> None:
    """The tuples and the Literal types the request bodies use agree; the arena's rules
    are the presets of `domain.rules`, and the match events' CPU level is this one."""
    assert get_args(settings.PartySeats) == settings.PARTY_SEATS
    assert (None, *get_args(settings.TurnLimit)) == settings.TURN_LIMITS
    assert get_args(settings.TurnLimit) == settings.ARENA_TURN_LIMITS
    assert tuple(rules.PRESETS) == settings.ARENA_RULES
    assert (*get_args(settings.CpuWait), None) == settings.CPU_WAITS
    assert events.CpuLevel is settings.CpuLevel
    assert settings.POOL_TURN_LIMIT in settings.TIMED_TURN_LIMITS
    assert [k.name for k in POOL_KINDS] == list(get_args(PoolName))


def _accepts(struct: type[msgspec.Struct], field: str, value: Any) -> bool:
    try:
        msgspec.convert({field: value}, struct)
    except msgspec.ValidationError:
        return False
    return True


@pytest.mark.parametrize(
    ("struct", "field", "values", "outside"),
    [
        (NewParty, "seats", settings.PARTY_SEATS, (1, 5)),
        (NewParty, "turn_limit", settings.TURN_LIMITS, (0, 45, 90)),
        (ChangeSettings, "turn_limit", (0, *settings.TURN_LIMITS), (45, 90)),
        (NewParty, "cpu_speed", settings.CPU_SPEEDS, ("slow",)),
        (AddCpu, "level", settings.CPU_LEVELS, ("expert",)),
        (EnterPool, "cpu_after", settings.CPU_WAITS, (0, 60)),
    ],
)
def test_the_request_bodies_take_exactly_the_domains_values(
    struct: type[msgspec.Struct], field: str, values: tuple[Any, ...], outside: tuple[Any, ...]
) -> None:
    """Each body field takes every value of its setting and refuses others (a 422)."""
    assert all(_accepts(struct, field, v) for v in values)
    assert not any(_accepts(struct, field, v) for v in outside)


def test_the_arena_body_takes_exactly_the_domains_values() -> None:
    """The arena's create body: each field's Literal is the domain's, its default the first."""
    hints = get_type_hints(ArenaCreate, include_extras=False)
    for field, values in (
        ("seats", settings.ARENA_SEATS),
        ("rules", settings.ARENA_RULES),
        ("turn_limit", settings.ARENA_TURN_LIMITS),
        ("minutes", settings.ARENA_MINUTES),
    ):
        assert get_args(hints[field]) == values
        assert getattr(ArenaCreate(name="x"), field) == values[0]
        assert settings.CHOICES["arena"]["defaults"][field] == values[0]


@pytest.mark.parametrize(
    ("field", "values", "outside", "said"),
    [
        ("seats", settings.ARENA_SEATS, 3, "seats is 2 or 4"),
        ("minutes", settings.ARENA_MINUTES, 45, "minutes is 20, 30 or 60"),
        ("turn_limit", settings.ARENA_TURN_LIMITS, 90, "turn_limit is 30 or 60"),
        ("rules", settings.ARENA_RULES, "ludo-king", "rules is standard or bga"),
    ],
)
def test_the_operators_schedule_takes_exactly_the_arenas_values(
    field: str, values: tuple[Any, ...], outside: Any, said: str
) -> None:
    """`LUDO_ARENA_SCHEDULE` entries: every value of the domain's taken, another refused
    with a message that lists the domain's values."""
    base = {"name": "x", "every": "day", "at": "12:00", "seats": 2, "minutes": 20}

    def entry(value: Any) -> str:
        return json.dumps([{**base, field: value}])

    for value in values:
        assert getattr(arena_schedule.parse(entry(value))[0], field) == value
    with pytest.raises(arena_schedule.ScheduleError, match=said):
        arena_schedule.parse(entry(outside))


@pytest.mark.parametrize("page", ["lobby.html", "table.html", "arenas.html"])
def test_the_pages_are_served_the_domains_values(page: str) -> None:
    """Each page with a settings form gets `SETTINGS`, the domain's `CHOICES`, as the JSON
    data block #settings of its shell (data, not script: the CSP need not allow it)."""
    response = page_response(page)
    html = str(response.content)
    block = r'<script nonce="[^"]+" type="application/json" id="settings">(.*?)</script>'
    found = re.search(block, html)
    assert found is not None
    assert json.loads(found.group(1)) == json.loads(json.dumps(settings.CHOICES))
    assert "'nonce-" in response.headers["Content-Security-Policy"]


def _doc_rows() -> dict[str, tuple[list[Any], list[Any]]]:
    text = (ROOT / "docs" / "api.md").read_text("utf-8")
    section = text.split("## Table settings\n", 1)[1].split("\n## ", 1)[0]
    rows: dict[str, tuple[list[Any], list[Any]]] = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) != 3 or not cells[0].startswith(("party", "arena", "pool")):
            continue

        def value(word: str) -> Any:
            word = word.strip()
            return json.loads(word) if re.fullmatch(r"-?\d+|null|true|false", word) else word

        rows[cells[0]] = (
            [value(w) for w in cells[1].split(",")],
            [value(w) for w in cells[2].split(",")],
        )
    return rows


def test_the_api_doc_lists_the_domains_values() -> None:
    """docs/api.md "Table settings" says each setting's values and default as the domain
    has them."""
    party, arena, pool = (settings.CHOICES[k] for k in ("party", "arena", "pool"))
    expected = {
        "party `seats`": (party["seats"], [party["defaults"]["seats"]]),
        "party `turn_limit` (seconds)": (party["turn_limit"], [party["defaults"]["turn_limit"]]),
        "party `cpu_speed`": (party["cpu_speed"], [party["defaults"]["cpu_speed"]]),
        "party CPU `level`": (party["cpu_level"], [party["defaults"]["cpu_level"]]),
        "party `ranked`, `stamps`": (
            [True, False],
            [party["defaults"]["ranked"], party["defaults"]["stamps"]],
        ),
        "arena `seats`": (arena["seats"], [arena["defaults"]["seats"]]),
        "arena `rules`": (arena["rules"], [arena["defaults"]["rules"]]),
        "arena `turn_limit` (seconds)": (arena["turn_limit"], [arena["defaults"]["turn_limit"]]),
        "arena `minutes`": (arena["minutes"], [arena["defaults"]["minutes"]]),
        "pool `seats`": (pool["seats"], [pool["defaults"]["seats"]]),
        "pool `cpu_after` (seconds; null: people only)": (
            pool["cpu_after"],
            [pool["defaults"]["cpu_after"]],
        ),
        "pool table's `turn_limit` (seconds)": ([pool["turn_limit"]], [pool["turn_limit"]]),
    }
    assert _doc_rows() == expected
