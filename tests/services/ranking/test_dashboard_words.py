"""The operator dashboard's words, read from the page file itself (no browser): the WORDS
table of services/ranking/dashboard.html (its JSON block `#words`) in Japanese and English,
and the keys the page names."""

from __future__ import annotations

import json
import re
from typing import Any

from tests.paths import ROOT

PAGE = (ROOT / "services" / "ranking" / "dashboard.html").read_text("utf-8")
# What the Japanese texts may spell in Latin letters: the names of things (settings, the
# HTTP status, the CPU seats, the Enter key, the switch's "English", a doc's path).
NAMES = {"API", "CPU", "English", "Enter", "HTTP", "LUDO", "OPERATOR", "PATRONI", "Patroni"}
NAMES |= {"TOKEN", "URL", "UTC", "docs", "analysis"}
# Intl.PluralRules' categories, which name a plural entry's forms (tn() in the page).
PLURAL_FORMS = ("zero", "one", "two", "few", "many", "other")
WORDS_BLOCK = re.compile(r'<script type="application/json" id="words">(.*?)</script>', re.DOTALL)


def words() -> dict[str, Any]:
    found = WORDS_BLOCK.findall(PAGE)
    assert len(found) == 1, "one #words block"
    table: dict[str, Any] = json.loads(found[0])
    return table


def leaves(node: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Every entry of a language as {"dotted.key": text}; a plural entry's forms are keys
    too ("dice.bar.one", "dice.bar.other")."""
    out: dict[str, Any] = {}
    for key, value in node.items():
        if isinstance(value, dict):
            out |= leaves(value, f"{prefix}{key}.")
        else:
            out[prefix + key] = value
    return out


def entry(language: dict[str, Any], key: str) -> Any:
    node: Any = language
    for part in key.split("."):
        assert isinstance(node, dict) and part in node, f"no {key}"
        node = node[part]
    return node


def test_japanese_and_english_have_the_same_words() -> None:
    """ja and en hold exactly the same keys, each a text with the same {names} to fill in."""
    table = words()
    assert sorted(table) == ["en", "ja"]
    ja, en = leaves(table["ja"]), leaves(table["en"])
    assert sorted(set(ja) ^ set(en)) == []
    for key in ja:
        assert isinstance(ja[key], str) and ja[key].strip(), key
        assert isinstance(en[key], str) and en[key].strip(), key
        names = [set(re.findall(r"\{(\w+)\}", text[key])) for text in (ja, en)]
        if key.rsplit(".", 1)[-1] in PLURAL_FORMS:
            names = [found - {"n"} for found in names]  # "the last day": one needs no {n}
        assert names[0] == names[1], key


def test_the_japanese_texts_hold_no_english_words() -> None:
    """Latin words in the Japanese texts are only names: settings, protocols, keys, files."""
    text = " ".join(leaves(words()["ja"]).values())
    found = set(re.findall(r"[A-Za-z]{3,}", re.sub(r"\{\w+\}", " ", text)))
    assert found <= NAMES, sorted(found - NAMES)


def test_every_key_the_page_names_is_in_the_table() -> None:
    """Every key the page names (data-t, t(), tn()) is in both languages, in the right shape."""
    table = words()
    script = PAGE.split('<script type="application/json" id="words">')[1]
    plain = set(re.findall(r'data-t="([\w.]+)"', PAGE)) | set(
        re.findall(r'\bt\("([\w.]+)"', script)
    )
    plural = set(re.findall(r'\btn\("([\w.]+)"', script))
    assert len(plain) > 100 and len(plural) > 5  # the patterns still find the page's keys
    for language in table.values():
        for key in plain:
            assert isinstance(entry(language, key), str), key
        for key in plural:
            forms = entry(language, key)
            assert isinstance(forms, dict) and "other" in forms, key
