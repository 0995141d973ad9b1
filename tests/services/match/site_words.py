"""The site's words as the pages have them, read from the JavaScript files themselves (no
build step, no JavaScript engine): web/js/lib/site.js's WORDS and a page's own words module, whose
`mergeWords({...})` adds to them (replay_words.js, dispute_words.js). Each is an object
literal of bare or double-quoted keys, double-quoted strings, `//` comments and trailing
commas, which `js_object` reads as JSON."""

from __future__ import annotations

import json
import re
from typing import Any

from tests.paths import ROOT

LIB = ROOT / "web" / "js" / "lib"
JS = ROOT / "web" / "js"
_WORD = re.compile(r"[A-Za-z_$][\w$]*")
_STRING = re.compile(r'"(?:[^"\\\n]|\\.)*"')


def js_object(text: str) -> dict[str, Any]:
    """The object literal `text` as Python: bare keys quoted, comments and trailing commas
    dropped, strings kept as they are."""
    out: list[str] = []
    i = 0
    while i < len(text):
        if text[i] == '"':
            found = _STRING.match(text, i)
            assert found is not None, f"an unclosed string at {text[i : i + 40]!r}"
            out.append(found.group(0))
            i = found.end()
        elif text.startswith("//", i):
            i = text.index("\n", i)
        elif word := _WORD.match(text, i):
            name = word.group(0)
            out.append(name if name in ("true", "false", "null") else json.dumps(name))
            i = word.end()
        else:
            out.append(text[i])
            i += 1
    table: dict[str, Any] = json.loads(re.sub(r",(\s*[}\]])", r"\1", "".join(out)))
    return table


def _between(text: str, start: str, end: str) -> str:
    """The text from the `{` that ends `start` to the `}` of the first line `end` after it,
    the object's last line, at the module's top level."""
    head = text.index(start) + len(start) - 1
    return text[head : text.index(f"\n{end}", head) + 2]


def site_words() -> dict[str, Any]:
    """site.js's WORDS: {"ja": {...}, "en": {...}}."""
    return js_object(_between((LIB / "site.js").read_text("utf-8"), "const WORDS = {", "};"))


def page_words(name: str) -> dict[str, Any]:
    """The words the module `name` (web/js/lib) adds with `mergeWords({...})`."""
    return js_object(_between((LIB / name).read_text("utf-8"), "mergeWords({", "});"))
