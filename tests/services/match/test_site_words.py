"""The match site's words, read from its files (no browser): the words a page still adds
in JavaScript (replay_words.js, dispute_words.js) have the same keys and {names} in
Japanese and English; the dispute report's Japanese holds no English words, and every key
the dispute report names is there. The pages that read the catalogues (web/i18n/, the
sections their shell names on its #words block) find every key they name there, in every
language."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from services.shared.words import catalogue, languages
from tests.paths import ROOT
from tests.services.match.site_words import JS, page_words, site_words
from tests.words import check_named, check_same_words, latin_words

WORDS_FILES = [
    "site.js",
    "replay_words.js",
    "dispute_words.js",
]
# The pages whose words are the catalogues' sections, by shell (their entry module is
# web/js/<page>.js).
CATALOGUE_PAGES = ["lobby", "arenas", "table", "ratings", "rules", "not_found"]
# What the dispute report's Japanese may spell in Latin letters: the names of things (the
# setting holding the token, the time zone, the CPU seats).
NAMES = {"CPU", "LUDO", "OPERATOR", "TOKEN", "UTC"}


def words_of(name: str) -> dict[str, Any]:
    return site_words() if name == "site.js" else page_words(name)


def merged(*tables: dict[str, Any]) -> dict[str, Any]:
    """The tables added one to another as the pages' mergeWords does (deeply)."""
    out: dict[str, Any] = {}
    for table in tables:
        for key, value in table.items():
            if isinstance(value, dict) and isinstance(out.get(key), dict):
                out[key] = merged(out[key], value)
            else:
                out[key] = value
    return out


@pytest.mark.parametrize("name", WORDS_FILES)
def test_japanese_and_english_have_the_same_words(name: str) -> None:
    """ja and en hold exactly the same keys, each a text with the same {names} to fill in."""
    check_same_words(words_of(name))


def test_the_dispute_reports_japanese_holds_no_english_words() -> None:
    """Latin words in the dispute report's own Japanese are only names: a setting, UTC, CPU."""
    found = latin_words(page_words("dispute_words.js")["ja"])
    assert found <= NAMES, sorted(found - NAMES)


def test_every_key_the_dispute_report_names_is_in_the_table() -> None:
    """Every key the dispute report names (data-t, t("…"), and the tables its t(`…${…}`)
    picks from) is in both languages of site.js, replay_words.js and dispute_words.js."""
    page = (ROOT / "web" / "pages" / "dispute_report.html").read_text("utf-8")
    page += (JS / "dispute_report.js").read_text("utf-8")
    table = merged(site_words(), page_words("replay_words.js"), page_words("dispute_words.js"))
    texts = set(re.findall(r'data-t="([\w.]+)"', page)) | set(re.findall(r'\bt\("([\w.]+)"', page))
    tables = set(re.findall(r"\bt\(`([\w.]+)\.\$\{", page))
    assert len(texts) > 35 and len(tables) > 4  # the patterns still find the page's keys
    check_named(table, {"text": texts, "table": tables})


def modules_of(entry: Path) -> list[Path]:
    """`entry` and every module it imports, at any depth (relative imports only)."""
    found: list[Path] = []
    todo = [entry]
    while todo:
        module = todo.pop()
        if module in found:
            continue
        found.append(module)
        for name in re.findall(r'from "(\.{1,2}/[\w/]+\.js)"', module.read_text("utf-8")):
            todo.append((module.parent / name).resolve())
    return found


@pytest.mark.parametrize("page", CATALOGUE_PAGES)
def test_every_key_a_page_names_is_in_its_sections_in_every_language(page: str) -> None:
    """Each key the page names (data-t in its shell, t("…"), tn("…") and "data-t" in its
    modules) is in the sections its #words block names, in every catalogue; a plural
    (tn) as its forms, with "other" among them."""
    shell = (ROOT / "web" / "pages" / f"{page}.html").read_text("utf-8")
    block = re.search(
        r'<script type="application/json" id="words" data-sections="([a-z_ ]+)">', shell
    )
    assert block, f"{page}.html has no words block"
    code = "\n".join(
        re.sub(r"^\s*//.*$", "", m.read_text("utf-8"), flags=re.M)  # comments name keys too
        for m in modules_of((JS / f"{page}.js").resolve())
    )
    texts = set(re.findall(r'data-t="([\w.]+)"', shell)) | set(re.findall(r'\bt\("([\w.]+)"', code))
    texts |= set(re.findall(r'"data-t": "([\w.]+)"', code))
    plurals = set(re.findall(r'\btn\("([\w.]+)"', code))
    assert len(texts) > 5
    for language in languages():
        words: dict[str, Any] = {}
        for section in block.group(1).split():
            words |= catalogue(language["code"])[section]
        check_named({language["code"]: words}, {"text": texts, "plural": plurals})
