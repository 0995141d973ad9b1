"""The pages' words (a catalogue of web/i18n, or a page's merged sections) as their tests
read them: every entry by its dotted key, one entry, the Latin words of a language, and
the shapes a key a page names must have."""

from __future__ import annotations

import re
from collections.abc import Callable
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


def latin_words(language: dict[str, Any]) -> set[str]:
    """The words in Latin letters (3 or more) of a language's texts, {names} aside."""
    text = " ".join(leaves(language).values())
    return set(re.findall(r"[A-Za-z]{3,}", re.sub(r"\{\w+\}", " ", text)))


# What a key a page names must be in each language: a text, a table of texts it picks one
# from (t(`table.${…}`)), or a plural entry (tn(), with its "other" form at least).
SHAPES: dict[str, Callable[[Any], bool]] = {
    "text": lambda found: isinstance(found, str),
    "table": lambda found: isinstance(found, dict),
    "plural": lambda found: isinstance(found, dict) and "other" in found,
}
