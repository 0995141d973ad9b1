"""A guest who gives no name gets one (services/match/guest_names.py, `createPlayer`
without `name`): made up by the server in the page's language, checked as any name, and
changed later like any name."""

from __future__ import annotations

import random
import re

import pytest
import sqlalchemy as sa

from services.match.guest_names import ANIMALS, COLOURS, NUMBERS, generated_name
from tests.services.conftest import Api

_JA = re.compile(r"^(?P<colour>.+の)(?P<animal>\D+)(?P<n>\d{2})$")
_EN = re.compile(r"^(?P<colour>[A-Z][a-z]+) (?P<animal>[A-Z][A-Za-z ]+) (?P<n>\d{2})$")


def test_the_word_lists_pair_up_and_make_short_distinct_names() -> None:
    """The two languages' lists are the same length (the n-th words mean the same), hold
    no word twice, and the longest name fits the 32 characters a name may have."""
    for lists in (COLOURS, ANIMALS):
        assert len(lists["ja"]) == len(lists["en"])
        for words in lists.values():
            assert len(set(words)) == len(words)
    longest = max(
        len(f"{c} {a} {n}") for c in COLOURS["en"] for a in ANIMALS["en"] for n in NUMBERS
    )
    assert longest <= 32
    assert len(COLOURS["en"]) * len(ANIMALS["en"]) * len(NUMBERS) >= 40_000


def test_a_name_is_a_colour_an_animal_and_a_number_in_either_language() -> None:
    """The same draw reads as the same name in Japanese and in English."""
    ja = generated_name("ja", random.Random(7))
    en = generated_name("en", random.Random(7))
    a, b = _JA.match(ja), _EN.match(en)
    assert a is not None and b is not None, (ja, en)
    assert COLOURS["ja"].index(a["colour"]) == COLOURS["en"].index(b["colour"])
    assert ANIMALS["ja"].index(a["animal"]) == ANIMALS["en"].index(b["animal"])
    assert a["n"] == b["n"]


@pytest.mark.anyio
async def test_a_guest_without_a_name_gets_one_in_the_language_asked(api: Api) -> None:
    """`{"lang": "ja"}` makes a Japanese name, `{}` an English one; each is the guest's
    name from then on (getMe), and changes like any other (renameMe)."""
    made = {}
    for body, pattern in (({"lang": "ja"}, _JA), ({}, _EN), ({"lang": "en"}, _EN)):
        r = await api.call("POST", "/api/players", json=body)
        assert r.status_code == 201, r.text
        guest = r.json()
        assert pattern.match(guest["name"]), guest["name"]
        assert set(guest) == {"id", "name", "token"}
        made[guest["name"]] = guest
    ja = next(g for name, g in made.items() if _JA.match(name))
    auth = {"Authorization": f"Bearer {ja['token']}"}
    me = (await api.call("GET", "/api/players/me", headers=auth)).json()
    assert me == {"id": ja["id"], "name": ja["name"]}
    r = await api.call("PUT", "/api/players/me", json={"name": "みか"}, headers=auth)
    assert r.json() == {"id": ja["id"], "name": "みか"}


@pytest.mark.anyio
async def test_a_given_name_wins_and_bad_input_is_refused_naming_the_field(api: Api) -> None:
    """A name given is the name (the language then unused); an unknown language, a blank
    name or an unknown field is a 422 naming it, and no guest is made."""
    r = await api.call("POST", "/api/players", json={"name": "ken", "lang": "ja"})
    assert r.status_code == 201 and r.json()["name"] == "ken"
    guests = await players(api)
    for body, field in (
        ({"lang": "fr"}, "lang"),
        ({"name": "   "}, "name"),
        ({"name": ""}, "name"),
        ({"nick": "x"}, "nick"),
    ):
        r = await api.call("POST", "/api/players", json=body)
        assert r.status_code in (400, 422), (body, r.text)
        assert field in r.text, (body, r.text)
    assert await players(api) == guests


async def players(api: Api) -> int:
    async with api.engine.connect() as conn:
        return int(await conn.scalar(sa.text("SELECT count(*) FROM players")) or 0)
