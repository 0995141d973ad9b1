"""The match site's words, read from its JavaScript files (no browser): site.js's WORDS and
the words a page adds (replay_words.js, dispute_words.js, report_player.js,
analysis_words.js) have the same
keys and {names} in Japanese and English; the dispute report's Japanese holds no English
words, and every key the dispute report names is there."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.paths import ROOT
from tests.services.match.site_words import JS, page_words, site_words
from tests.words import check_named, check_same_words, latin_words

WORDS_FILES = [
    "site.js",
    "replay_words.js",
    "dispute_words.js",
    "report_player.js",
    "analysis_words.js",
]
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
