"""The README is the product's front page, not its manual: at most 200 lines; its Layout
names every folder of the tree (docs/layout.md names every file); its Docs section links
every page under docs/."""

from __future__ import annotations

import re
import subprocess

from tests import paths
from tests.test_layout_doc import headed_folders

ROOT = paths.ROOT
README = (ROOT / "README.md").read_text(encoding="utf-8")
MAX_LINES = 200


def _section(title: str) -> str:
    """The text under the heading `title` (any level), up to the next heading of its level
    or above."""
    match = re.search(rf"^(#+) {re.escape(title)}\n", README, re.MULTILINE)
    assert match is not None, f"the README has no heading {title!r}"
    level = len(match.group(1))
    rest = README[match.end() :]
    end = re.search(rf"^#{{1,{level}}} ", rest, re.MULTILINE)
    return rest if end is None else rest[: end.start()]


def _tracked_folders() -> set[str]:
    """The top-level folders of the tracked tree, as `name/`."""
    listed = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True
    ).stdout.decode()
    return {name.split("/", 1)[0] + "/" for name in listed.split("\0") if "/" in name}


def test_the_readme_is_at_most_200_lines() -> None:
    """The README holds what the product is and where to read on, in 200 lines or fewer."""
    assert len(README.splitlines()) <= MAX_LINES


def test_the_docs_section_links_every_page() -> None:
    """Every `docs/*.md` is linked from the README's Docs section, and every link there is a
    page that exists."""
    linked = set(re.findall(r"\]\((docs/[\w-]+\.md)\)", _section("Docs")))
    pages = {page.relative_to(ROOT).as_posix() for page in (ROOT / "docs").glob("*.md")}
    assert len(pages) > 10
    assert sorted(pages - linked) == []
    assert sorted(linked - pages) == []


def test_the_layout_names_every_folder() -> None:
    """Every top-level folder of the tree, and every folder docs/layout.md lists on its own,
    is named in the README's Layout."""
    layout = _section("Layout")
    folders = _tracked_folders() | headed_folders()
    assert {"domain/", "services/match/", ".ci/"} <= folders  # both listings were read
    assert sorted(f for f in folders if f"`{f}`" not in layout) == []
