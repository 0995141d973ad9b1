"""The message catalogues (web/i18n/<lang>.json): every language holds every word the
English does, with the same {names} and markup; every page's sections merge without a
clash; and every key a page or one of its modules names is in its words in every language,
so no page shows a key without its word (at run time page_common.js also reports any key
it cannot find as a console error, which the page tests fail on)."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from services.match.guest_names import NUMBERS
from services.shared.words import catalogue, choose_language, languages, page_words
from tests.paths import ROOT
from tests.words import SHAPES, entry, latin_words, leaves

I18N = ROOT / "web" / "i18n"
PAGES = ROOT / "web" / "pages"
JS = ROOT / "web" / "js"
LANGS = [language["code"] for language in languages()]
OTHERS = [lang for lang in LANGS if lang != "en"]
SHELLS = sorted(p.name for p in PAGES.glob("*.html"))

# Intl.PluralRules' categories, which name a plural entry's forms (tn()): a language's
# forms are its own (Japanese has only "other"), so a plural entry is compared by "other".
PLURAL_FORMS = {"zero", "one", "two", "few", "many", "other"}
PLACEHOLDER = re.compile(r"\{(\w+)\}")
TAG = re.compile(r"</?[a-zA-Z][^>]*>")
WORDS_BLOCK = re.compile(r'<script type="application/json" id="words" data-sections="([a-z_ ]+)">')
IMPORT = re.compile(r"""^import\s[^;]*?["'](\.{1,2}/[^"']+)["'];""", re.MULTILINE | re.DOTALL)


def comparable(lang: str) -> dict[str, Any]:
    """A catalogue's entries by dotted key, plural entries by their "other" form alone
    (their other forms are the language's own), the guest names' lists by their length."""
    out: dict[str, Any] = {}
    for key, value in leaves(catalogue(lang)).items():
        head, _, last = key.rpartition(".")
        if last in PLURAL_FORMS:
            if last == "other":
                out[head] = value
            continue
        out[key] = value
    return out


def test_the_languages_are_japanese_english_and_hindi() -> None:
    """A language is a catalogue file: web/i18n holds ja, en and hi, each naming itself."""
    assert sorted(p.stem for p in I18N.glob("*.json")) == ["en", "hi", "ja"]
    assert {lang["code"]: lang["name"] for lang in languages()} == {
        "en": "English",
        "hi": "हिन्दी",
        "ja": "日本語",
    }


@pytest.mark.parametrize("lang", OTHERS)
def test_a_catalogue_holds_every_english_key_with_its_names_and_markup(lang: str) -> None:
    """The same keys as English, each a non-empty text with the same {names} to fill in
    and the same tags (the rules' marks and links), or a list as long as English's."""
    english, other = comparable("en"), comparable(lang)
    assert sorted(set(english) ^ set(other)) == []
    for key, text in english.items():
        found = other[key]
        if isinstance(text, list):
            assert isinstance(found, list) and len(found) == len(text), key
            continue
        assert isinstance(found, str) and found.strip(), key
        names = [set(PLACEHOLDER.findall(t)) for t in (text, found)]
        if key.rsplit(".", 1)[-1] in PLURAL_FORMS or key in _plural_keys():
            names = [n - {"n"} for n in names]  # "the last day": one form needs no {n}
        assert names[0] == names[1], key
        assert Counter(TAG.findall(text)) == Counter(TAG.findall(found)), key


def _plural_keys() -> set[str]:
    return {
        key.rpartition(".")[0]
        for key in leaves(catalogue("en"))
        if key.rpartition(".")[2] in PLURAL_FORMS
    }


@pytest.mark.parametrize("lang", LANGS)
def test_a_language_names_itself_and_titles_every_page(lang: str) -> None:
    """`meta`: the language's own name and English name, the menu's label, a description,
    and a title for every page."""
    meta = catalogue(lang)["meta"]
    for key in ("name", "name_en", "language_menu", "description"):
        assert isinstance(meta[key], str) and meta[key].strip(), key
    assert sorted(meta["titles"]) == sorted(name.removesuffix(".html") for name in SHELLS)


@pytest.mark.parametrize("lang", LANGS)
def test_guest_names_fit_in_every_language(lang: str) -> None:
    """16 colours and 32 animals, none twice, every name they make 1–32 printable
    characters."""
    names = catalogue(lang)["guest_names"]
    assert (len(names["colours"]), len(names["animals"])) == (16, 32)
    for part in ("colours", "animals"):
        assert len(set(names[part])) == len(names[part]), part
    longest = max(names["colours"], key=len), max(names["animals"], key=len)
    sep = "" if lang == "ja" else " "
    made = f"{longest[0]}{sep}{longest[1]}{sep}{max(NUMBERS)}"
    assert made.isprintable() and len(made) <= 32, made


@pytest.mark.parametrize("lang", ["ja"])
def test_the_operators_japanese_holds_no_english_words(lang: str) -> None:
    """Latin words in the dashboard's and the dispute report's Japanese are only names:
    settings, protocols, keys, files, the rating models."""
    names = {"API", "CPU", "Enter", "HTTP", "LUDO", "OPERATOR", "PATRONI", "Patroni", "TOKEN"}
    names |= {"URL", "UTC", "docs", "analysis", "openskill", "elo", "glicko"}
    for section in ("dashboard", "dispute"):
        found = latin_words(catalogue(lang)[section])
        assert found <= names, (section, sorted(found - names))


# ------------------------------------------------------------------------ the pages


def sections(shell: str) -> tuple[str, ...]:
    found = WORDS_BLOCK.findall((PAGES / shell).read_text("utf-8"))
    assert len(found) == 1, f"{shell}: one words block"
    return tuple(found[0].split())


def modules(shell: str) -> list[Path]:
    """The page's entry module and every module it imports, transitively."""
    entry_module = JS / shell.replace(".html", ".js")
    seen: list[Path] = []
    todo = [entry_module]
    while todo:
        module = todo.pop()
        if module in seen:
            continue
        seen.append(module)
        text = module.read_text("utf-8")
        todo += [(module.parent / found).resolve() for found in IMPORT.findall(text)]
    return seen


def named(shell: str) -> dict[str, set[str]]:
    """The keys a page names, by the shape it needs: data-t (a text), t("…") (a text or
    a table), tn("…") (a plural entry), t(`table.${…}`) (a table it picks from)."""
    html = (PAGES / shell).read_text("utf-8")
    code = "\n".join(m.read_text("utf-8") for m in modules(shell))
    return {
        "text": set(re.findall(r'data-t="([\w.]+)"', html))
        | set(re.findall(r'"data-t": "([\w.]+)"', code)),
        "any": set(re.findall(r'\bt\("([\w.]+)"', code)),
        "plural": set(re.findall(r'\btn\("([\w.]+)"', code)),
        "table": set(re.findall(r"\bt\(`([\w.]+)\.\$\{", code)),
    }


@pytest.mark.parametrize("shell", SHELLS)
def test_a_pages_sections_merge_without_a_clash(shell: str) -> None:
    """Every page has one words block naming catalogue sections, which merge into one
    table in every language without a key in two of them."""
    for lang in LANGS:
        served = page_words(lang, sections(shell))
        assert served["lang"] == lang and served["words"]


@pytest.mark.parametrize("shell", SHELLS)
def test_every_key_a_page_names_is_in_its_words(shell: str) -> None:
    """Each key the shell or its modules name is in the page's words, in the shape it is
    used in, in every language."""
    keys = named(shell)
    assert sum(len(found) for found in keys.values()) > 2, "the patterns find the page's keys"
    shapes: dict[str, Callable[[Any], bool]] = {
        **SHAPES,
        "any": lambda found: isinstance(found, (str, dict)),
    }
    for lang in LANGS:
        words = page_words(lang, sections(shell))["words"]
        for shape, found in keys.items():
            for key in found:
                assert shapes[shape](entry(words, key)), (lang, shell, key)


def test_the_reader_gets_the_language_asked_for() -> None:
    """The cookie first, then Accept-Language by q-value, else English; unknown ones
    skipped."""
    assert choose_language("hi", "ja") == "hi"
    assert choose_language("xx", "fr, ja;q=0.5, hi;q=0.8") == "hi"
    assert choose_language(None, "ja-JP,ja;q=0.9,en;q=0.8") == "ja"
    assert choose_language(None, "hi;q=0, ja;q=bad, fr") == "en"
    assert choose_language(None, None) == "en"
