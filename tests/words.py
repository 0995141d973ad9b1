"""The pages' words tables, {"ja": {...}, "en": {...}} (the dashboard's JSON block, the
match site's JavaScript files), as their tests read them: every entry of a language by its
dotted key, one entry, the Latin words of a language, and the checks that both languages
say the same things and hold every key a page names."""

from __future__ import annotations

import re
from typing import Any


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


def check_same_words(table: dict[str, Any], plural_forms: tuple[str, ...] = ()) -> None:
    """`table`'s ja and en hold exactly the same keys, each a text with the same {names} to
    fill in; a plural form (a key's last part in `plural_forms`) may leave out the {n}."""
    assert sorted(table) == ["en", "ja"]
    ja, en = leaves(table["ja"]), leaves(table["en"])
    assert sorted(set(ja) ^ set(en)) == []
    for key in ja:
        assert isinstance(ja[key], str) and ja[key].strip(), key
        assert isinstance(en[key], str) and en[key].strip(), key
        names = [set(re.findall(r"\{(\w+)\}", text[key])) for text in (ja, en)]
        if key.rsplit(".", 1)[-1] in plural_forms:
            names = [found - {"n"} for found in names]  # "the last day": one needs no {n}
        assert names[0] == names[1], key


def latin_words(language: dict[str, Any]) -> set[str]:
    """The words in Latin letters (3 or more) of a language's texts, {names} aside."""
    text = " ".join(leaves(language).values())
    return set(re.findall(r"[A-Za-z]{3,}", re.sub(r"\{\w+\}", " ", text)))


# What a key a page names must be in each language: a text, a table of texts it picks one
# from (t(`table.${…}`)), or a plural entry (tn(), with its "other" form at least).
SHAPES = {
    "text": lambda found: isinstance(found, str),
    "table": lambda found: isinstance(found, dict),
    "plural": lambda found: isinstance(found, dict) and "other" in found,
}


def check_named(table: dict[str, Any], named: dict[str, set[str]]) -> None:
    """Every key of `named[shape]` is in both languages of `table`, in that shape (SHAPES)."""
    for language in table.values():
        for shape, keys in named.items():
            for key in keys:
                assert SHAPES[shape](entry(language, key)), key
