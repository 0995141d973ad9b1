"""Each top-level folder imports only what is below it: domain < replays < services <
ludo_cli < benchmarks (and migrations, tools); `domain/` and `replays/` import no database or
web library. Read from the source's syntax trees, so a lazy import inside a function counts.

The benchmarks sit above the `ludo` command: they use its argument types, progress bar and
cluster, while `ludo_cli/main.py` only names `benchmarks.cmd` as an optional subcommand that
a checkout has and a wheel does not (no import statement, so no cycle)."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import paths

ROOT = paths.ROOT

# A folder -> the project's folders it may import (itself included).
ALLOWED: dict[str, frozenset[str]] = {
    "domain": frozenset({"domain"}),
    "replays": frozenset({"domain", "replays"}),
    "services": frozenset({"domain", "replays", "services"}),
    "migrations": frozenset({"domain", "replays", "services", "migrations"}),
    "ludo_cli": frozenset({"domain", "replays", "services", "ludo_cli"}),
    "tools": frozenset({"domain", "replays", "services", "ludo_cli", "tools"}),
    "benchmarks": frozenset({"domain", "replays", "services", "ludo_cli", "benchmarks"}),
}
PROJECT = frozenset(ALLOWED) | {"tests"}

# What "pure" rules out: storage, the web, HTTP clients, the process's environment.
IMPURE = frozenset(
    {"sqlalchemy", "psycopg", "alembic", "litestar", "httpx", "uvicorn", "structlog", "socket"}
)
PURE = ("domain", "replays")


def _imports(path: Path) -> Iterator[tuple[int, str]]:
    """(line, top-level module) of every absolute import in the file."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.lineno, node.module.split(".")[0]


def _modules(folder: str) -> list[Path]:
    return sorted((ROOT / folder).rglob("*.py"))


@pytest.mark.parametrize("folder", sorted(ALLOWED))
def test_no_import_goes_upward(folder: str) -> None:
    """No module imports a project folder above its own (nor tests/)."""
    modules = _modules(folder)
    assert modules, f"{folder}/ has no modules"
    upward = [
        f"{path.relative_to(ROOT)}:{line} imports {top}"
        for path in modules
        for line, top in _imports(path)
        if top in PROJECT and top not in ALLOWED[folder]
    ]
    assert upward == []


@pytest.mark.parametrize("folder", PURE)
def test_pure_folders_import_no_io_library(folder: str) -> None:
    """`domain/` and `replays/` import no database, web or logging library."""
    impure = [
        f"{path.relative_to(ROOT)}:{line} imports {top}"
        for path in _modules(folder)
        for line, top in _imports(path)
        if top in IMPURE
    ]
    assert impure == []


def test_the_check_sees_an_upward_import(tmp_path: Path) -> None:
    """The walk finds imports at any depth, `from` and plain, lazy ones too."""
    module = tmp_path / "m.py"
    module.write_text(
        "import services.shared.eventstore\n"
        "def f():\n"
        "    from ludo_cli.main import main\n"
        "    from . import sibling\n",
        encoding="utf-8",
    )
    assert list(_imports(module)) == [(1, "services"), (3, "ludo_cli")]
