"""The operator dashboard's words, read from the page's files (no browser): the WORDS
table of web/pages/dashboard.html (its JSON block `#words`) in Japanese and English, and
the keys the page and its module (web/js/dashboard.js) name."""

from __future__ import annotations

import json
import re
from typing import Any

from tests.paths import ROOT
from tests.words import check_named, check_same_words, latin_words

PAGE = (ROOT / "web" / "pages" / "dashboard.html").read_text("utf-8")
SCRIPT = (ROOT / "web" / "js" / "dashboard.js").read_text("utf-8")
# What the Japanese texts may spell in Latin letters: the names of things (settings, the
# HTTP status, the CPU seats, the Enter key, the switch's "English", a doc's path, the
# rating models as the model menu names them).
NAMES = {"API", "CPU", "English", "Enter", "HTTP", "LUDO", "OPERATOR", "PATRONI", "Patroni"}
NAMES |= {"TOKEN", "URL", "UTC", "docs", "analysis", "openskill", "elo", "glicko"}
# Intl.PluralRules' categories, which name a plural entry's forms (tn() in the page).
PLURAL_FORMS = ("zero", "one", "two", "few", "many", "other")
WORDS_BLOCK = re.compile(r'<script type="application/json" id="words">(.*?)</script>', re.DOTALL)


def words() -> dict[str, Any]:
    found = WORDS_BLOCK.findall(PAGE)
    assert len(found) == 1, "one #words block"
    table: dict[str, Any] = json.loads(found[0])
    return table


def test_japanese_and_english_have_the_same_words() -> None:
    """ja and en hold exactly the same keys, each a text with the same {names} to fill in."""
    check_same_words(words(), PLURAL_FORMS)


def test_the_japanese_texts_hold_no_english_words() -> None:
    """Latin words in the Japanese texts are only names: settings, protocols, keys, files."""
    found = latin_words(words()["ja"])
    assert found <= NAMES, sorted(found - NAMES)


def test_every_key_the_page_names_is_in_the_table() -> None:
    """Every key the page names (data-t, t(), tn()) is in both languages, in the right shape."""
    table = words()
    script = SCRIPT
    plain = set(re.findall(r'data-t="([\w.]+)"', PAGE + SCRIPT)) | set(
        re.findall(r'\bt\("([\w.]+)"', script)
    )
    plural = set(re.findall(r'\btn\("([\w.]+)"', script))
    assert len(plain) > 100 and len(plural) > 5  # the patterns still find the page's keys
    check_named(table, {"text": plain, "plural": plural})
