"""The message catalogues (web/i18n/<lang>.json) and a page's words in its language.

A catalogue is one JSON object per language: a language is a file. Its top-level keys are
*sections*: `meta` (the language's own name and the pages' titles), `common` (the words
every page of the match site shares), one per page or shared script (`lobby`, `table`,
`replay`, `dispute`, `dashboard`, `rules`, …) and `guest_names` (the server's own words:
services/match/guest_names.py). Every catalogue holds exactly the key paths of every other,
each value a text with the same `{placeholders}` (tests/test_catalogues.py).

A page names the sections it says in its shell, on its words block:
`<script type="application/json" id="words" data-sections="common lobby"></script>`.
Serving the page (services/shared/pages.py), the server fills the block with those
sections merged into one table (a key in two of them is refused when the catalogue is
read), the page's language and the list of languages; the page's first pass has its words
without a request of its own, so a reader never sees a word of another language. A switch
of language fetches the same sections of the other catalogue (`/static/i18n/<lang>/
<section>.json`, `section_files`) and sets the `ludo_lang` cookie.

The page's language (`choose_language`): the `ludo_lang` cookie when it names a catalogue;
else the first language of the browser's `Accept-Language` (by its q-values) that has one;
else English.
"""

from __future__ import annotations

import functools
import json
import re
from typing import Any, Final

import web

__all__ = [
    "DEFAULT_LANGUAGE",
    "LANGUAGE_COOKIE",
    "catalogue",
    "choose_language",
    "languages",
    "page_words",
    "section_files",
]

LANGUAGE_COOKIE: Final = "ludo_lang"
DEFAULT_LANGUAGE: Final = "en"
_TAG: Final = re.compile(r"^[a-z]{2,3}$")


@functools.cache
def _catalogues() -> dict[str, dict[str, Any]]:
    """Every catalogue by its language code (the file's name), read once."""
    found: dict[str, dict[str, Any]] = {}
    for entry in web.FILES.joinpath("i18n").iterdir():
        name = entry.name
        if name.endswith(".json") and _TAG.match(name.removesuffix(".json")):
            found[name.removesuffix(".json")] = json.loads(entry.read_text("utf-8"))
    return dict(sorted(found.items()))


def catalogue(lang: str) -> dict[str, Any]:
    """The catalogue of `lang` (a KeyError for a language without one)."""
    return _catalogues()[lang]


def languages() -> list[dict[str, str]]:
    """Every language with a catalogue, by code: `{"code": "hi", "name": "हिन्दी", "menu":
    "भाषा"}` (its name in itself, as a language menu shows it, and the menu's label in it)."""
    return [
        {"code": code, "name": words["meta"]["name"], "menu": words["meta"]["language_menu"]}
        for code, words in _catalogues().items()
    ]


def choose_language(cookie: str | None, accept_language: str | None) -> str:
    """The page's language: the cookie's when it has a catalogue, else the browser's
    first wanted one that has, else English."""
    known = _catalogues()
    if cookie is not None and cookie in known:
        return cookie
    wanted: list[tuple[float, int, str]] = []
    for order, part in enumerate((accept_language or "").split(",")):
        tag, _, params = part.strip().partition(";")
        quality = 1.0
        if params.strip().startswith("q="):
            try:
                quality = float(params.strip()[2:])
            except ValueError:
                continue
        base = tag.strip().lower().split("-")[0]
        if base in known and quality > 0:
            wanted.append((-quality, order, base))
    return min(wanted)[2] if wanted else DEFAULT_LANGUAGE


@functools.cache
def _merged(lang: str, sections: tuple[str, ...]) -> dict[str, Any]:
    words: dict[str, Any] = {}
    for section in sections:
        table = catalogue(lang)[section]
        if not isinstance(table, dict):
            raise ValueError(f"web/i18n/{lang}.json: {section} is not a table")
        twice = words.keys() & table.keys()
        if twice:
            raise ValueError(f"web/i18n/{lang}.json: {sorted(twice)} in {section} and before it")
        words.update(table)
    return words


def page_words(lang: str, sections: tuple[str, ...]) -> dict[str, Any]:
    """What a page's words block holds: its language, the languages, and the words of
    `sections` in `lang` merged into one table."""
    return {"lang": lang, "languages": languages(), "words": _merged(lang, sections)}


def section_files() -> dict[str, bytes]:
    """Each section of each catalogue as a file of its own, by its path under /static
    (`i18n/hi/lobby.json`): what a page fetches when its reader switches language."""
    return {
        f"i18n/{lang}/{section}.json": json.dumps(table, ensure_ascii=False).encode()
        for lang, words in _catalogues().items()
        for section, table in words.items()
    }
