"""Every reader of match events (and of arena events) handles every event type: each is
one `match event:` whose last arm is `case _: assert_never(event)`, so mypy fails on a
reader that a new member of `domain.events.Event` (`domain.arena.ArenaEvent`) is not
written into. The fast test reads the readers' code; the slow one adds an event type to a
copy of the code and runs mypy on it. The folds, which
dispatch through a table by exact type for speed, hold every event of their stream.
"""

from __future__ import annotations

import ast
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import get_args

import pytest

from domain import arena, decider, party, pool
from domain.events import DieRolled, Event, PieceMoved, RollPassed, TurnEnded
from tests.paths import ROOT

MATCH_EVENTS = frozenset(cls.__name__ for cls in get_args(Event))
ARENA_EVENTS = frozenset(cls.__name__ for cls in get_args(arena.ArenaEvent))

# (file, function): every function that reads each event type of a stream for what it
# means, with that stream's event types.
READERS = {
    ("replays/steps.py", "Walker.step"): MATCH_EVENTS,
    ("replays/steps.py", "describe"): MATCH_EVENTS,
    ("replays/verify.py", "_command_for"): MATCH_EVENTS,
    ("replays/viewer.py", "event_facts"): MATCH_EVENTS,
    ("replays/viewer.py", "marks_of"): MATCH_EVENTS,
    ("replays/report.py", "report_view"): MATCH_EVENTS,
    ("replays/tournament_verify.py", "_command_for"): ARENA_EVENTS,
}


def _functions(tree: ast.Module) -> dict[str, ast.FunctionDef]:
    found: dict[str, ast.FunctionDef] = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            found[node.name] = node
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.FunctionDef):
                    found[f"{node.name}.{item.name}"] = item
    return found


def _classes(pattern: ast.pattern) -> set[str]:
    """The classes a pattern matches whatever their fields hold."""
    if isinstance(pattern, ast.MatchClass) and not pattern.patterns and not pattern.kwd_patterns:
        return {ast.unparse(pattern.cls).rsplit(".", 1)[-1]}
    if isinstance(pattern, ast.MatchOr):
        return set().union(*(_classes(p) for p in pattern.patterns))
    if isinstance(pattern, ast.MatchAs) and pattern.pattern is not None:
        return _classes(pattern.pattern)
    return set()


def _exhaustive_match(function: ast.FunctionDef) -> tuple[set[str], bool]:
    """The classes an event `match` in `function` handles, and whether it ends in
    `case _: assert_never(<subject>)`."""
    for node in ast.walk(function):
        if not isinstance(node, ast.Match):
            continue
        handled: set[str] = set()
        for case in node.cases:
            if case.guard is None:
                handled |= _classes(case.pattern)
        if not handled & (MATCH_EVENTS | ARENA_EVENTS):
            continue
        last = node.cases[-1]
        closed = (
            isinstance(last.pattern, ast.MatchAs)
            and last.pattern.pattern is None
            and last.guard is None
            and len(last.body) == 1
            and ast.unparse(last.body[0]) == f"assert_never({ast.unparse(node.subject)})"
        )
        return handled, closed
    return set(), False


@pytest.mark.parametrize(("path", "name"), sorted(READERS))
def test_each_reader_matches_every_event_type(path: str, name: str) -> None:
    """The reader is one match with an unguarded arm for each event type of its stream,
    closed by `assert_never`: nothing falls through to a silent default."""
    function = _functions(ast.parse((ROOT / path).read_text("utf-8")))[name]
    handled, closed = _exhaustive_match(function)
    assert closed, f"{path}:{name} does not end its match in `case _: assert_never(...)`"
    members = READERS[path, name]
    assert handled == members, f"{path}:{name} leaves out {sorted(members - handled)}"


def test_the_readers_are_all_the_closed_event_matches() -> None:
    """A new reader written as a closed match belongs in READERS (and so in the mypy run
    below); a reader that drops its match fails the test above."""
    found = set()
    for folder in ("domain", "replays", "services", "ludo_cli"):
        for file in sorted((ROOT / folder).rglob("*.py")):
            tree = ast.parse(file.read_text("utf-8"))
            for name, function in _functions(tree).items():
                _handled, closed = _exhaustive_match(function)
                if closed:
                    found.add((file.relative_to(ROOT).as_posix(), name))
    assert found == set(READERS)


_FAKE = """

class Fake{stream}Event({base}, frozen=True):
    \"\"\"An event type no reader knows.\"\"\"

    seat: int
"""


def _add_fake(module: Path, union: str, stream: str, base: str) -> None:
    """Declare `Fake<stream>Event` in `module` and make it the first member of `union`."""
    text = module.read_text("utf-8")
    first = f"\n{union} = (\n    Fake{stream}Event\n    | "
    text, added = re.subn(rf"\n{union} = \(\n", first, text)
    assert added == 1
    fake = _FAKE.format(stream=stream, base=base)
    text = text.replace(f"\n{union} = (", fake + f"\n\n{union} = (", 1)
    module.write_text(text, "utf-8")


@pytest.mark.slow
def test_mypy_fails_each_reader_of_an_event_type_it_does_not_handle(tmp_path: Path) -> None:
    """A copy of domain/ and replays/ whose `Event` and `ArenaEvent` unions hold one type
    more each: mypy fails in every reader, and only there, until each has an arm for it."""
    for folder in ("domain", "replays"):
        shutil.copytree(
            ROOT / folder, tmp_path / folder, ignore=shutil.ignore_patterns("*.so", "__pycache__")
        )
    _add_fake(tmp_path / "domain" / "events.py", "Event", "", "_Event")
    _add_fake(tmp_path / "domain" / "arena.py", "ArenaEvent", "Arena", "_ArenaEvent")
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--config-file",
            str(ROOT / "pyproject.toml"),
            "--cache-dir",
            str(tmp_path / ".mypy_cache"),
            "domain",
            "replays",
        ],
        check=False,  # mypy exits 1 here: the errors are what is read
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(tmp_path)},
    )
    failing: set[tuple[str, str]] = set()
    for line in run.stdout.splitlines():
        hit = re.match(r"(\S+\.py):(\d+): error: .*\"assert_never\".*\"Fake(Arena)?Event\"", line)
        if hit is None:
            continue
        path, at = hit.group(1), int(hit.group(2))
        for name, function in _functions(ast.parse((tmp_path / path).read_text())).items():
            if function.lineno <= at <= (function.end_lineno or 0):
                failing.add((path, name))
    assert failing == set(READERS), run.stdout


def test_every_fold_applies_every_event_of_its_stream() -> None:
    """The folds dispatch through a table by exact type (`apply` of a match tests its four
    commonest events first): each table, with those, holds every member of its union, so
    no event type reaches a fold that would miss it."""
    direct = {DieRolled, PieceMoved, TurnEnded, RollPassed}
    assert set(decider._APPLY) | direct == set(get_args(Event))
    assert not set(decider._APPLY) & direct
    assert set(arena._APPLY) == set(get_args(arena.ArenaEvent))
    assert set(party._APPLY) == set(get_args(party.PartyEvent))
    assert set(pool._APPLY) == set(get_args(pool.PoolEvent))
