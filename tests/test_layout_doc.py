"""docs/layout.md stays true to the tree: one line per product source file, and no line
naming a file or folder that does not exist.

The block's grammar (docs/layout.md's code block): a line at column 0 is a top-level file, or a
folder when it ends in `/`; a line indented by two spaces is an entry of the folder above
it (a file, a `*` pattern, or a folder of static assets ending in `/`); several entries
may share a line, separated by ", "; the entry ends at the first two spaces, its
description follows; a line indented further continues the description above it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

ROOT = Path(__file__).resolve().parent.parent

# The folders of source: every `*.py` in them has a line of its own (`tools/` and
# `benchmarks/` too, though the wheel leaves them out).
SOURCE_FOLDERS = ("domain", "replays", "services", "ludo_cli", "migrations", "tools", "benchmarks")
# Every other file in these (assets, data, configuration) is on some line, alone or in a
# pattern or a folder.
LISTED_FOLDERS = (*SOURCE_FOLDERS, "deploy", "web")
# The top-level files that say how the product is built, run and checked.
TOP_LEVEL = ("setup.py", "pyproject.toml", "compose.yaml", "Dockerfile", ".ci/run")
# The folders the block has a heading for (a check that it was read at all).
REQUIRED_FOLDERS = frozenset(
    {
        *(f"{folder}/" for folder in LISTED_FOLDERS if folder != "services"),
        "domain/cpu/",
        "services/shared/",
        "services/shared/eventstore/",
        "services/match/",
        "services/ranking/",
        "migrations/versions/",
        "benchmarks/",
        "tests/",
        "docs/",
    }
)
# What a build or a run leaves behind, not part of the tree.
LEFTOVERS = ("__pycache__", "node_modules")  # node_modules: `npm ci --prefix web`
LEFTOVER_SUFFIXES = (".pyc", ".so", ".pyd")


@dataclass(frozen=True)
class Entry:
    """One name of the block, as a path from the repository's root."""

    path: str
    line: int
    heading: bool = False  # a folder whose entries follow, not a folder listed whole

    @property
    def is_folder(self) -> bool:
        return self.path.endswith("/")

    @property
    def is_pattern(self) -> bool:
        return "*" in self.path


def _layout_block() -> list[str]:
    page = (ROOT / "docs" / "layout.md").read_text(encoding="utf-8")
    match = re.search(r"^```\n(.*?)^```$", page, re.DOTALL | re.MULTILINE)
    assert match, "docs/layout.md has no code block"
    return match.group(1).splitlines()


def _entries() -> list[Entry]:
    entries: list[Entry] = []
    folder: str | None = None
    for number, line in enumerate(_layout_block(), start=1):
        indent = len(line) - len(line.lstrip(" "))
        if not line.strip() or indent > 2:
            continue  # a description's continuation
        names, _, description = line.strip().partition("  ")
        assert description.strip(), f"layout line {number} says nothing of {names!r}"
        if indent == 0:
            (name,) = names.split(", ")
            folder = name if name.endswith("/") else None
            entries.append(Entry(name, number, heading=folder is not None))
            continue
        assert indent == 2 and folder, f"layout line {number} is inside no folder"
        entries.extend(Entry(folder + name, number) for name in names.split(", "))
    return entries


def _files(folder: str) -> list[str]:
    return sorted(
        path.relative_to(ROOT).as_posix()
        for path in (ROOT / folder).rglob("*")
        if path.is_file()
        and not path.name.endswith(LEFTOVER_SUFFIXES)
        and not set(path.relative_to(ROOT).parts) & set(LEFTOVERS)
    )


def _is_empty_init(path: str) -> bool:
    return path.endswith("/__init__.py") and not (ROOT / path).read_text(encoding="utf-8").strip()


def _covers(entry: Entry, path: str) -> bool:
    if entry.heading:
        return False
    if entry.is_folder:
        return path.startswith(entry.path)
    if entry.is_pattern:
        return PurePosixPath(path).parent == PurePosixPath(entry.path).parent and (
            PurePosixPath(path).match(entry.path)
        )
    return path == entry.path


def test_every_source_file_has_its_own_line() -> None:
    """Each product `*.py` (but an empty `__init__.py`) and top-level file is named on a line."""
    named = {entry.path for entry in _entries()}
    sources = [
        path
        for folder in SOURCE_FOLDERS
        for path in _files(folder)
        if path.endswith(".py") and not _is_empty_init(path)
    ]
    top_level = [name for name in TOP_LEVEL if (ROOT / name).is_file()]
    assert sources
    assert [path for path in sources + top_level if path not in named] == []


def test_every_other_file_is_on_some_line() -> None:
    """Each asset, data or configuration file of the product folders is on a line."""
    entries = _entries()
    others = [
        path for folder in LISTED_FOLDERS for path in _files(folder) if not path.endswith(".py")
    ]
    assert others
    assert [path for path in others if not any(_covers(e, path) for e in entries)] == []


def test_every_line_names_what_exists() -> None:
    """Each name in the layout is an existing file or folder, or a pattern that matches one."""
    missing = []
    for entry in _entries():
        if entry.is_pattern:
            found = any(ROOT.glob(entry.path))
        elif entry.is_folder:
            found = (ROOT / entry.path).is_dir()
        else:
            found = (ROOT / entry.path).is_file()
        if not found:
            missing.append(f"line {entry.line}: {entry.path}")
    assert missing == []


def test_no_file_is_named_twice() -> None:
    """No name has two lines, so a file's one description cannot be contradicted by another."""
    paths = [entry.path for entry in _entries()]
    assert sorted({path for path in paths if paths.count(path) > 1}) == []


def test_the_grammar_reads_this_block() -> None:
    """The parser finds every folder the layout describes (the other checks read its output)."""
    folders = {entry.path for entry in _entries() if entry.is_folder}
    assert REQUIRED_FOLDERS - folders == set()


def headed_folders() -> set[str]:
    """The folders whose files the block lists under a heading line of their own."""
    return {entry.path for entry in _entries() if entry.heading}
