"""The operator dashboard's words, read from the files (no browser): its section of the
catalogues (web/i18n/<lang>.json `dashboard`, which the server puts in the page's `#words`
block) in Japanese, English and Hindi, and the keys the page and its module
(web/js/dashboard.js) name."""

from __future__ import annotations

import re
from typing import Any

from services.shared.words import catalogue
from tests.paths import ROOT
from tests.words import check_named, check_same_words, latin_words, leaves

PAGE = (ROOT / "web" / "pages" / "dashboard.html").read_text("utf-8")
SCRIPT = (ROOT / "web" / "js" / "dashboard.js").read_text("utf-8")
# What the Japanese texts may spell in Latin letters: the names of things (settings, the
# HTTP status, the CPU seats, the Enter key, the switch's "English", a doc's path, the
# rating models as the model menu names them).
NAMES = {"API", "CPU", "English", "Enter", "HTTP", "LUDO", "OPERATOR", "PATRONI", "Patroni"}
NAMES |= {"TOKEN", "URL", "UTC", "docs", "analysis", "openskill", "elo", "glicko"}
# Intl.PluralRules' categories, which name a plural entry's forms (tn() in the page).
PLURAL_FORMS = ("zero", "one", "two", "few", "many", "other")


def words(languages: tuple[str, ...] = ("ja", "en")) -> dict[str, Any]:
    """The dashboard's section of each catalogue of `languages`, by language."""
    return {lang: catalogue(lang)["dashboard"] for lang in languages}


def test_the_page_names_its_section() -> None:
    """The shell's words block asks for the dashboard's section and nothing else."""
    block = '<script type="application/json" id="words" data-sections="dashboard"></script>'
    assert PAGE.count(block) == 1


def test_japanese_and_english_have_the_same_words() -> None:
    """ja and en hold exactly the same keys, each a text with the same {names} to fill in."""
    check_same_words(words(), PLURAL_FORMS)


def test_hindi_has_the_same_words_as_english() -> None:
    """hi holds exactly en's keys, each a text with the same {names} (a plural entry's
    forms aside: Hindi's are its own)."""
    hi, en = (leaves(table) for table in words(("hi", "en")).values())
    single = {key for key in en if key.rsplit(".", 1)[-1] not in PLURAL_FORMS}
    assert single <= set(hi), sorted(single - set(hi))
    for key in single:
        assert isinstance(hi[key], str) and hi[key].strip(), key
        names = [set(re.findall(r"\{(\w+)\}", text[key])) for text in (hi, en)]
        assert names[0] == names[1], key


def test_the_japanese_texts_hold_no_english_words() -> None:
    """Latin words in the Japanese texts are only names: settings, protocols, keys, files."""
    found = latin_words(words()["ja"])
    assert found <= NAMES, sorted(found - NAMES)


def test_every_key_the_page_names_is_in_the_table() -> None:
    """Every key the page names (data-t, t(), tn()) is in every language, in the right
    shape."""
    table = words(("ja", "en", "hi"))
    script = SCRIPT
    plain = set(re.findall(r'data-t="([\w.]+)"', PAGE + SCRIPT)) | set(
        re.findall(r'\bt\("([\w.]+)"', script)
    )
    plural = set(re.findall(r'\btn\("([\w.]+)"', script))
    assert len(plain) > 100 and len(plural) > 5  # the patterns still find the page's keys
    check_named(table, {"text": plain, "plural": plural})
