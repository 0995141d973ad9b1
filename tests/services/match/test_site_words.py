"""The match site's words, read from the catalogues (no browser): the sections shared by
the pages (common, report_player, analysis) and the replay viewer's and the dispute
report's (replay, dispute) have the same keys and {names} in Japanese and English; the
dispute report's Japanese holds no English words, and every key the dispute report names
is in every language of the sections its shell asks for."""

from __future__ import annotations

import re

import pytest

from services.shared.words import catalogue, languages, page_words
from tests.paths import ROOT
from tests.services.match.site_words import JS
from tests.words import check_named, check_same_words, latin_words

SECTIONS = ["common", "replay", "dispute", "report_player", "analysis"]
# What the dispute report's Japanese may spell in Latin letters: the names of things (the
# setting holding the token, the time zone, the CPU seats).
NAMES = {"CPU", "LUDO", "OPERATOR", "TOKEN", "UTC"}
# The sections the dispute report's shell asks for (web/pages/dispute_report.html).
DISPUTE_SECTIONS = ("common", "replay", "dispute")


@pytest.mark.parametrize("section", SECTIONS)
def test_japanese_and_english_have_the_same_words(section: str) -> None:
    """ja and en hold exactly the same keys, each a text with the same {names} to fill in."""
    check_same_words({lang: catalogue(lang)[section] for lang in ("ja", "en")})


def test_the_dispute_reports_japanese_holds_no_english_words() -> None:
    """Latin words in the dispute report's own Japanese are only names: a setting, UTC, CPU."""
    found = latin_words(catalogue("ja")["dispute"])
    assert found <= NAMES, sorted(found - NAMES)


def test_every_key_the_dispute_report_names_is_in_the_table() -> None:
    """Every key the dispute report names (data-t, t("…"), and the tables its t(`…${…}`)
    picks from) is in every language of the sections its shell names."""
    page = (ROOT / "web" / "pages" / "dispute_report.html").read_text("utf-8")
    assert f'data-sections="{" ".join(DISPUTE_SECTIONS)}"' in page
    page += (JS / "dispute_report.js").read_text("utf-8")
    table = {
        found["code"]: page_words(found["code"], DISPUTE_SECTIONS)["words"] for found in languages()
    }
    texts = set(re.findall(r'data-t="([\w.]+)"', page)) | set(re.findall(r'\bt\("([\w.]+)"', page))
    tables = set(re.findall(r"\bt\(`([\w.]+)\.\$\{", page))
    assert len(texts) > 35 and len(tables) > 4  # the patterns still find the page's keys
    check_named(table, {"text": texts, "table": tables})
