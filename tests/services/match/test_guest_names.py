"""A guest who gives no name gets one (services/match/guest_names.py, `createPlayer`
without `name`): made up by the server in the page's language, checked as any name, and
changed later like any name."""

from __future__ import annotations

import random
import re

import pytest
import sqlalchemy as sa

from services.match.guest_names import (
    LANGUAGES,
    NUMBERS,
    Lang,
    animals,
    colours,
    generated_name,
)
from services.shared.words import languages
from tests.services.conftest import Api

_JA = re.compile(r"^(?P<colour>.+の)(?P<animal>\D+)(?P<n>\d{2})$")
_EN = re.compile(r"^(?P<colour>[A-Z][a-z]+) (?P<animal>[A-Z][A-Za-z ]+) (?P<n>\d{2})$")
# Devanagari words (a space may stand inside an animal: "लाल पांडा"), then the number.
_HI = re.compile(r"^(?P<colour>[\u0900-\u097f]+) (?P<animal>[\u0900-\u097f ]+) (?P<n>\d{2})$")


def test_the_word_lists_pair_up_and_make_short_distinct_names() -> None:
    """Every catalogue has a name's words, its lists as long as every other's (the n-th
    words mean the same), no word twice, and the longest name fits the 32 characters a
    name may have."""
    assert set(LANGUAGES) == {language["code"] for language in languages()}
    for lang in LANGUAGES:
        for words, english in ((colours(lang), colours("en")), (animals(lang), animals("en"))):
            assert len(words) == len(english), lang
            assert len(set(words)) == len(words), lang
        longest = max(len(f"{c} {a} 99") for c in colours(lang) for a in animals(lang))
        assert longest <= 32, lang
    assert len(colours("en")) * len(animals("en")) * len(NUMBERS) >= 40_000


def test_a_name_is_a_colour_an_animal_and_a_number_in_every_language() -> None:
    """The same draw reads as the same name in Japanese, English and Hindi."""
    patterns: dict[Lang, re.Pattern[str]] = {"ja": _JA, "en": _EN, "hi": _HI}
    found: dict[Lang, re.Match[str]] = {}
    for lang in LANGUAGES:
        name = generated_name(lang, random.Random(7))
        parts = patterns[lang].match(name)
        assert parts is not None, name
        found[lang] = parts
    en = found["en"]
    for lang, parts in found.items():
        assert colours(lang).index(parts["colour"]) == colours("en").index(en["colour"])
        assert animals(lang).index(parts["animal"]) == animals("en").index(en["animal"])
        assert parts["n"] == en["n"]


@pytest.mark.anyio
async def test_a_guest_without_a_name_gets_one_in_the_language_asked(api: Api) -> None:
    """`{"lang": "ja"}` makes a Japanese name, `{"lang": "hi"}` a Hindi one, `{}` an
    English one; each is the guest's name from then on (getMe), and changes like any other
    (renameMe)."""
    made = {}
    cases: list[tuple[dict[str, str], re.Pattern[str]]] = [
        ({"lang": "ja"}, _JA),
        ({}, _EN),
        ({"lang": "en"}, _EN),
        ({"lang": "hi"}, _HI),
    ]
    for body, pattern in cases:
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
