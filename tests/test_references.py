"""What the repository's files cite stays inside the repository and finds what it names: no
file names a specification kept outside it, every `docs/<page>.md#anchor` (and every link
between the docs by anchor) is a heading of that page, and no file names an issue by its
number (history belongs in the commits; the git tag the benches measure against keeps its
name)."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

from tests import paths

ROOT = paths.ROOT
DOCS = ROOT / "docs"

# Spelled in pieces, so that this file does not name them itself.
OUTSIDE = ("DESIGN" + ".md", "RULES" + ".md", "../" + "shared")
# `docs/<page>.md#<anchor>`, anywhere in any file.
_CITED = re.compile(r"(?<![\w/.-])docs/([\w-]+)\.md#([\w-]+)")
# A Markdown link by anchor inside docs/: `](page.md#anchor)` or `](#anchor)`.
_LINKED = re.compile(r"\]\(((?:[\w-]+\.md)?)#([\w-]+)\)")
_FENCE = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)
# An issue named by its number: "issue N", "Issue N's", "issues N and M", "(#N)". A bare
# `#` number is one or two digits after a space or a bracket: a colour has three or more,
# a URL's fragment follows a path.
_ISSUE = re.compile(r"(?i)\bissues?[ _-]?#?\d+|(?:^|(?<=[\s(\[]))#\d{1,2}\b(?![\w-])")
# The git tag the benches' baseline is, named by the code it was set on (not an issue).
BASELINE_TAG = "issue-14-start"
# Files whose bytes are not prose of ours: the vendored libraries and the recorded
# fixtures (third-party code, pinned replay files, images, the weights).
NOT_OURS = ("tests/vendor/", "tests/golden/", "services/shared/openapi_assets/")


def _tracked() -> Iterator[tuple[str, str]]:
    """Every tracked file outside `NOT_OURS` that is text: its path and its text."""
    listed = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        path = ROOT / name
        if name.startswith(NOT_OURS) or not path.is_file():
            continue
        data = path.read_bytes()
        if b"\0" in data:
            continue
        try:
            yield name, data.decode("utf-8")
        except UnicodeDecodeError:
            continue


def github_anchor(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors_of(text: str) -> set[str]:
    """The anchors a page's headings give, code blocks left out (a repeated heading gets
    `-1`, `-2`, … as GitHub numbers it)."""
    found: set[str] = set()
    seen: dict[str, int] = {}
    for heading in re.findall(r"^#+ (.+)$", _FENCE.sub("", text), re.MULTILINE):
        base = github_anchor(heading)
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def _page_anchors() -> dict[str, set[str]]:
    return {page.stem: anchors_of(page.read_text(encoding="utf-8")) for page in DOCS.glob("*.md")}


def unresolved(name: str, text: str, pages: dict[str, set[str]]) -> list[str]:
    """The citations in file `name` (a path from the root) of a page or a heading that
    `pages` (page stem -> its anchors) does not have."""
    bad = [
        f"{name}: docs/{page}.md#{anchor}"
        for page, anchor in _CITED.findall(text)
        if anchor not in pages.get(page, set())
    ]
    if name.startswith("docs/") and name.endswith(".md"):
        here = Path(name).stem
        for target, anchor in _LINKED.findall(_FENCE.sub("", text)):
            page = Path(target).stem if target else here
            if anchor not in pages.get(page, set()):
                bad.append(f"{name}: ({target}#{anchor})")
    return bad


def issue_numbers(text: str) -> list[str]:
    """The issues `text` names by number, the baseline tag's name left out."""
    return _ISSUE.findall(text.replace(BASELINE_TAG, ""))


def test_the_reference_check_sees_a_bad_reference() -> None:
    """A citation of a missing page or heading, by path or by a link between the docs, is
    found, and a good one is not."""
    pages = {"rules": {"moves"}, "design": {"fair-dice"}}
    docs = "docs/"  # apart, so that this file cites no missing heading itself
    good = f"see {docs}rules.md#moves and {docs}design.md#fair-dice."
    assert unresolved("domain/x.py", good, pages) == []
    bad = f"{docs}rules.md#move, {docs}nope.md#moves"
    assert unresolved("domain/x.py", bad, pages) == [
        f"domain/x.py: {docs}rules.md#move",
        f"domain/x.py: {docs}nope.md#moves",
    ]
    linked = "[Moves](rules.md#moves), [Dice](design.md#dice), [Here](#nowhere)"
    assert unresolved("docs/design.md", linked, pages) == [
        "docs/design.md: (design.md#dice)",
        "docs/design.md: (#nowhere)",
    ]


def test_anchors_are_github_s() -> None:
    """Punctuation and backticks drop out, spaces become hyphens, a repeat is numbered."""
    page = "# Three sixes: `three_sixes`\n## Captures\n```\n# not a heading\n```\n## Captures\n"
    assert anchors_of(page) == {"three-sixes-three_sixes", "captures", "captures-1"}


def test_no_file_names_a_specification_outside_the_repository() -> None:
    """No tracked file cites the design or the rules as files outside the repository."""
    files = list(_tracked())
    assert len(files) > 300  # the listing found the tree at all
    assert [f"{name}: {word}" for name, text in files for word in OUTSIDE if word in text] == []


def test_every_cited_heading_exists() -> None:
    """Every `docs/<page>.md#anchor` in a tracked file, and every link by anchor between the
    docs, is a heading of that page."""
    pages = _page_anchors()
    files = list(_tracked())
    cited = sum(len(_CITED.findall(text)) for _, text in files)
    assert cited > 100  # the scan found the citations at all
    assert [bad for name, text in files for bad in unresolved(name, text, pages)] == []


def test_the_issue_check_sees_an_issue_number() -> None:
    """The word issue with a number, or `#` with one, names an issue; the baseline tag, a
    colour, a URL's fragment and an HTML entity do not."""
    word, hash_ = "issue", "#"  # apart, so that this file names no issue itself
    text = f"as {word} 14 asked; {word.title()} 27's target; see ({hash_}39)."
    assert issue_numbers(text) == [f"{word} 14", f"{word.title()} 27", f"{hash_}39"]
    assert issue_numbers("git tag issue-14-start; color: #047857 #0003; /replay/x#10; &#39;") == []


def test_no_file_names_an_issue_by_number() -> None:
    """Code, docs, tests and migrations say the reason, not the issue that asked for it."""
    found = [f"{name}: {number}" for name, text in _tracked() for number in issue_numbers(text)]
    assert found == []
