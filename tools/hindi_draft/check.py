"""Checks the Hindi draft against the site's English words, read from the sources themselves.

For every source table (web/js/lib/site.js's WORDS, each page's `mergeWords({...})` in its
entry module or in web/js/lib/, the dashboard page's `#words` block, the rules page's English
article) the Hindi file must hold exactly the same
key paths, every value a non-empty text with the same {placeholders} and the same HTML
tags (with their attributes) as the English one. Digits that differ from the English are
reported as warnings (a number said in words in one language and in figures in the other).
The JavaScript tables are evaluated by node, so the check reads what the browser reads.

Run: python3 tools/hindi_draft/check.py  (exit status 0 when everything holds).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections import Counter
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
JS = ROOT / "web" / "js"
PAGES = ROOT / "web" / "pages"

# Finds the object literal after `marker` (every occurrence) by counting braces outside
# strings and comments, and evaluates it: the table exactly as the page's script holds it.
NODE = r"""
const fs = require("fs");
const [file, marker] = process.argv.slice(1);
const text = fs.readFileSync(file, "utf-8");
const out = [];
let at = 0;
while ((at = text.indexOf(marker, at)) >= 0) {
  let i = at + marker.length - 1, depth = 0, quote = null;
  const start = i;
  for (; i < text.length; i++) {
    const c = text[i];
    if (quote) { if (c === "\\") i++; else if (c === quote) quote = null; continue; }
    if (c === '"' || c === "'" || c === "`") { quote = c; continue; }
    if (c === "/" && text[i + 1] === "/") { i = text.indexOf("\n", i); continue; }
    if (c === "/" && text[i + 1] === "*") { i = text.indexOf("*/", i) + 1; continue; }
    if (c === "{") depth++;
    else if (c === "}") { depth--; if (depth === 0) break; }
  }
  out.push((new Function("return (" + text.slice(start, i + 1) + ")"))());
  at = i;
}
process.stdout.write(JSON.stringify(out));
"""


def js_tables(name: str, marker: str = "mergeWords({") -> list[dict[str, Any]]:
    """Every {ja, en} table after `marker` in web/js/`name`, in file order."""
    found = subprocess.run(
        ["node", "-e", NODE, str(JS / name), marker], check=True, capture_output=True, text=True
    )
    tables: list[dict[str, Any]] = json.loads(found.stdout)
    assert tables, f"no {marker!r} in {name}"
    return tables


def merged_en(name: str) -> dict[str, Any]:
    """The English of all of a file's `mergeWords` tables, merged as mergeWords does."""
    out: dict[str, Any] = {}
    for table in js_tables(name):
        for key, value in table["en"].items():
            assert key not in out, f"{name}: {key} twice"
            out[key] = value
    return out


def dashboard_en() -> dict[str, Any]:
    text = (PAGES / "dashboard.html").read_text("utf-8")
    block = re.search(r'<script type="application/json" id="words">(.*?)</script>', text, re.S)
    assert block
    words: dict[str, Any] = json.loads(block.group(1))["en"]
    return words


# ------------------------------------------------------------------- the rules page
BLOCKS = {"h1", "h2", "p", "li", "th", "td", "dt", "dd", "summary", "footer"}
VOID = {"br", "img", "hr", "input", "meta", "link"}


class Article(HTMLParser):
    """The English <article> of rules.html as {section: {key: inner HTML}}: sections by id
    ("setup-en" -> "setup"; the unnamed first and last cards are "top" and "play_now"), and
    in a section h1 "title", h2 "heading", p "p1".., ul's li "items.1".., a table's header
    cells "columns.1".. and rows "rows.1.th"/"rows.1.td1".., dl "terms.1.term"/".text",
    details "questions.1.question"/".answer"; the footer "footer"."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=False)
        self.inside = False
        self.depth = 0
        self.sections: dict[str, dict[str, Any]] = {}
        self.section: dict[str, Any] | None = None
        self.unnamed = 0
        self.capture: list[str] | None = None
        self.capture_tag = ""
        self.capture_depth = 0
        self.key: list[str] = []
        self.counts: Counter[str] = Counter()
        self.in_thead = False
        self.row = 0
        self.cell = 0
        self.in_details = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "article" and a.get("lang") == "en":
            self.inside = True
            return
        if not self.inside:
            return
        if self.capture is not None:
            self.capture.append(self.get_starttag_text() or "")
            if tag not in VOID:
                self.capture_depth += 1
            return
        if tag == "details":
            self.in_details = True
        if tag == "section":
            ident = a.get("id")
            if ident:
                name = ident.removesuffix("-en").replace("-", "_")
            else:
                name = "top" if self.unnamed == 0 else "play_now"
                self.unnamed += 1
            self.section = self.sections.setdefault(name, {})
            self.counts = Counter()
            return
        if tag == "thead":
            self.in_thead = True
        elif tag == "tr" and not self.in_thead:
            self.counts["row"] += 1
            self.cell = 0
        elif tag == "details":
            self.counts["question"] += 1
        elif tag == "dt":
            self.counts["term"] += 1
        if tag in BLOCKS:
            self.key = self.key_of(tag)
            self.capture, self.capture_tag, self.capture_depth = [], tag, 0

    def key_of(self, tag: str) -> list[str]:
        c = self.counts
        if tag == "h1":
            return ["title"]
        if tag == "h2":
            return ["heading"]
        if tag == "footer":
            return ["footer"]
        if tag == "li":
            c["li"] += 1
            return ["items", str(c["li"])]
        if tag == "th" and self.in_thead:
            c["col"] += 1
            return ["columns", str(c["col"])]
        if tag == "th":
            return ["rows", str(c["row"]), "th"]
        if tag == "td":
            self.cell += 1
            return ["rows", str(c["row"]), f"td{self.cell}"]
        if tag == "dt":
            return ["terms", str(c["term"]), "term"]
        if tag == "dd":
            return ["terms", str(c["term"]), "text"]
        if tag == "summary":
            return ["questions", str(c["question"]), "question"]
        if tag == "p" and self.in_details:
            return ["questions", str(c["question"]), "answer"]
        c["p"] += 1
        return [f"p{c['p']}"]

    def handle_endtag(self, tag: str) -> None:
        if not self.inside:
            return
        if self.capture is not None:
            if tag == self.capture_tag and self.capture_depth == 0:
                text = re.sub(r"\s+", " ", "".join(self.capture)).strip()
                node: Any = self.sections if self.key == ["footer"] else self.section
                assert node is not None
                if self.key == ["footer"]:
                    node["footer"] = text
                else:
                    for part in self.key[:-1]:
                        node = node.setdefault(part, {})
                    node[self.key[-1]] = text
                self.capture = None
            else:
                self.capture.append(f"</{tag}>")
                self.capture_depth -= 1
            return
        if tag == "thead":
            self.in_thead = False
        elif tag == "details":
            self.in_details = False
        elif tag == "article":
            self.inside = False

    def handle_data(self, data: str) -> None:
        if self.capture is not None:
            self.capture.append(data)

    def handle_entityref(self, name: str) -> None:
        if self.capture is not None:
            self.capture.append(f"&{name};")

    def handle_charref(self, name: str) -> None:
        if self.capture is not None:
            self.capture.append(f"&#{name};")


def rules_en() -> dict[str, Any]:
    """The rules page's English: its `rules_title` word (in rules.js) and its article (in the
    page), section by section."""
    parser = Article()
    parser.feed((PAGES / "rules.html").read_text("utf-8"))
    out: dict[str, Any] = dict(merged_en("rules.js"))
    out.update(parser.sections)
    return out


# --------------------------------------------------------------------------- checks
PLACEHOLDER = re.compile(r"\{(\w+)\}")
TAG = re.compile(r"<[a-zA-Z][^>]*>")
DIGITS = re.compile(r"\d+")


def leaves(node: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in node.items():
        if isinstance(value, dict):
            out |= leaves(value, f"{prefix}{key}.")
        else:
            out[prefix + key] = value
    return out


def strip(text: str) -> str:
    """`text` without its placeholders and tags: what is left to read."""
    return PLACEHOLDER.sub("", TAG.sub("", text))


def compare(
    name: str, en: dict[str, Any], hi: dict[str, Any], problems: list[str], warnings: list[str]
) -> int:
    """`hi` against `en`: the same key paths, texts, placeholders and tags. Returns the count."""
    e, h = leaves(en), leaves(hi)
    for key in sorted(set(e) - set(h)):
        problems.append(f"{name}: missing {key}")
    for key in sorted(set(h) - set(e)):
        problems.append(f"{name}: not in the English: {key}")
    for key in sorted(set(e) & set(h)):
        english, hindi = e[key], h[key]
        if not isinstance(hindi, str) or not hindi.strip():
            problems.append(f"{name}: {key} is not a text")
            continue
        if set(PLACEHOLDER.findall(english)) != set(PLACEHOLDER.findall(hindi)):
            found = (PLACEHOLDER.findall(english), PLACEHOLDER.findall(hindi))
            problems.append(f"{name}: {key} placeholders {found[0]} != {found[1]}")
        if Counter(TAG.findall(english)) != Counter(TAG.findall(hindi)):
            problems.append(f"{name}: {key} markup differs")
        if english.count("</") != hindi.count("</"):
            problems.append(f"{name}: {key} closing tags differ")
        digits = (DIGITS.findall(strip(english)), DIGITS.findall(strip(hindi)))
        if Counter(digits[0]) != Counter(digits[1]):
            warnings.append(f"{name}: {key} digits {digits[0]} vs {digits[1]}")
        if english == hindi and re.search(r"[A-Za-z]{3,}", PLACEHOLDER.sub("", english)):
            warnings.append(f"{name}: {key} left in English: {english!r}")
    return len(h)


def check_guest_names(problems: list[str]) -> int:
    sys.path.insert(0, str(ROOT))
    from services.match.guest_names import ANIMALS, COLOURS, NUMBERS  # noqa: PLC0415 (ROOT first)

    hi = json.loads((HERE / "guest_names.json").read_text("utf-8"))
    if sorted(hi) != ["animals", "colours"]:
        problems.append("guest_names: keys must be colours and animals")
        return 0
    for part, source in (("colours", COLOURS), ("animals", ANIMALS)):
        if len(hi[part]) != len(source["en"]):
            problems.append(f"guest_names: {len(hi[part])} {part}, English has {len(source['en'])}")
        if len(set(hi[part])) != len(hi[part]):
            problems.append(f"guest_names: a repeated word in {part}")
    for colour in hi["colours"]:
        for animal in hi["animals"]:
            name = f"{colour} {animal} {max(NUMBERS)}"
            if not name.isprintable() or len(name) > 32:
                problems.append(f"guest_names: {name!r} is not 1-32 printable characters")
    return len(hi["colours"]) + len(hi["animals"])


def check_meta(problems: list[str]) -> int:
    meta = json.loads((HERE / "meta.json").read_text("utf-8"))
    for key in ("lang", "name", "name_en", "lang_switch", "description", "titles"):
        if key not in meta:
            problems.append(f"meta: no {key}")
    pages = sorted(p.stem for p in PAGES.glob("*.html"))
    titles = meta.get("titles", {})
    for page in pages:
        if not isinstance(titles.get(page), str) or not titles[page].strip():
            problems.append(f"meta: no title for {page}")
    for page in set(titles) - set(pages):
        problems.append(f"meta: a title for no page: {page}")
    return len(leaves(meta))


SOURCES = {
    "site.json": lambda: js_tables("lib/site.js", "export const WORDS = {")[0]["en"],
    "lobby.json": lambda: merged_en("lobby.js"),
    "arenas.json": lambda: merged_en("arenas.js"),
    "table.json": lambda: merged_en("table.js"),
    "ratings.json": lambda: merged_en("ratings.js"),
    "report_player.json": lambda: merged_en("lib/report_player.js"),
    "replay.json": lambda: merged_en("lib/replay_words.js"),
    "dispute.json": lambda: merged_en("lib/dispute_words.js"),
    "analysis.json": lambda: merged_en("lib/analysis_words.js"),
    "dashboard.json": dashboard_en,
    "rules.json": rules_en,
}


def main() -> int:
    problems: list[str] = []
    warnings: list[str] = []
    total = 0
    for name, english in SOURCES.items():
        path = HERE / name
        if not path.exists():
            problems.append(f"{name}: missing file")
            continue
        count = compare(name, english(), json.loads(path.read_text("utf-8")), problems, warnings)
        print(f"{name:20} {count:4} strings")
        total += count
    for name, checker in (("guest_names.json", check_guest_names), ("meta.json", check_meta)):
        if not (HERE / name).exists():
            problems.append(f"{name}: missing file")
            continue
        count = checker(problems)
        print(f"{name:20} {count:4} strings")
        total += count
    print(f"{'total':20} {total:4} strings")
    for w in warnings:
        print("warning:", w)
    for p in problems:
        print("PROBLEM:", p)
    print("OK" if not problems else f"{len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
