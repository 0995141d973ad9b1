"""Each top-level folder imports only what is below it: domain < replays < services <
ludo_cli < benchmarks (and migrations, tools); `domain/` and `replays/` import no database or
web library; no chain of imports leads from a module back to itself. Read from the source's
syntax trees, so a lazy import inside a function counts.

The benchmarks sit above the `ludo` command: they use its argument types, progress bar and
cluster, while `ludo_cli/main.py` only names `benchmarks.cmd` as an optional subcommand that
a checkout has and a wheel does not (no import statement, so no cycle)."""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator, Mapping
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


def _module_name(root: Path, path: Path) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _module_graph(root: Path, folders: Iterable[str]) -> dict[str, set[str]]:
    """Each module of `folders` -> the modules of `folders` it imports, at any depth of its
    code, relative imports resolved; `from package import name` is an import of
    `package.name` when that is a module (as `import package.name` is: a package's
    `__init__` that imports its own modules is no cycle)."""
    paths = {_module_name(root, p): p for folder in folders for p in (root / folder).rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in paths.items():
        package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        named: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Import):
                named.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = package[: len(package) - node.level + 1] if node.level else []
                module = ".".join([*base, *([node.module] if node.module else [])])
                for alias in node.names:
                    submodule = f"{module}.{alias.name}"
                    named.add(submodule if submodule in paths else module)
        graph[name] = {other for other in named if other in paths and other != name}
    return graph


def _a_cycle(graph: Mapping[str, set[str]]) -> list[str]:
    """One chain of imports from a module back to itself, or [] when there is none."""
    done: set[str] = set()

    def walk(module: str, chain: list[str]) -> list[str]:
        if module in chain:
            return [*chain[chain.index(module) :], module]
        if module in done:
            return []
        for imported in sorted(graph[module]):
            found = walk(imported, [*chain, module])
            if found:
                return found
        done.add(module)
        return []

    for module in sorted(graph):
        found = walk(module, [])
        if found:
            return found
    return []


def test_no_import_cycle() -> None:
    """No module imports, through any chain, a module that imports it back."""
    assert _a_cycle(_module_graph(ROOT, ALLOWED)) == []


def test_the_check_sees_a_cycle_through_a_lazy_import(tmp_path: Path) -> None:
    """A cycle closed by an import inside a function (as service_bench.py and
    service_socket.py had one) is found, relative and `from package import module` too."""
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("", encoding="utf-8")
    (package / "a.py").write_text("from pkg import b\n", encoding="utf-8")
    (package / "b.py").write_text("from .c import f\n", encoding="utf-8")
    (package / "c.py").write_text("def f():\n    import pkg.a\n", encoding="utf-8")
    assert _a_cycle(_module_graph(tmp_path, ["pkg"])) == ["pkg.a", "pkg.b", "pkg.c", "pkg.a"]
    (package / "c.py").write_text("def f():\n    return 1\n", encoding="utf-8")
    assert _a_cycle(_module_graph(tmp_path, ["pkg"])) == []


# ------------------------------------------------------------ inside the match service

MATCH = ROOT / "services" / "match"
# A capability of the match service (a folder of services/match/) -> the sibling
# capabilities it may import (docs/design.md#where-things-go). Besides these, a capability
# imports only the plumbing at services/match/'s root, services/shared/, domain/ and replays/.
MATCH_CAPABILITIES: dict[str, frozenset[str]] = {
    "play": frozenset(),
    "parties": frozenset({"play"}),
    "players": frozenset({"parties"}),
    "pools": frozenset({"parties", "players"}),
    "replays": frozenset({"play"}),
    "arenas": frozenset({"play", "parties", "players", "pools", "replays"}),
    "lobby": frozenset({"play", "parties", "players", "pools"}),
    "moderation": frozenset({"play", "players"}),
    "pages": frozenset({"play", "parties", "arenas"}),
    "ratings": frozenset(),
}
# The composition root: the modules that build the parts and the app, and import them all.
MATCH_ROOTS = frozenset({"app", "parts"})


def _match_imports(path: Path) -> Iterator[tuple[int, str]]:
    """(line, what of services/match it imports: a capability's or a root module's name)."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
            if node.module == "services.match":
                names = [f"services.match.{alias.name}" for alias in node.names]
        else:
            continue
        for name in names:
            parts = name.split(".")
            if parts[:2] == ["services", "match"] and len(parts) > 2:
                yield node.lineno, parts[2]


def _match_misplaced_imports(match: Path) -> list[str]:
    """Each import inside `match` (a services/match/ tree) that crosses a line it may not."""
    capabilities = {p.name for p in match.iterdir() if (p / "__init__.py").is_file()}
    wrong = []
    for path in sorted(match.rglob("*.py")):
        where = path.relative_to(match).parts
        owner = where[0] if len(where) > 1 else None  # None: the plumbing at the root
        if owner is None and path.stem in MATCH_ROOTS:
            continue
        allowed = set() if owner is None else {owner, *MATCH_CAPABILITIES.get(owner, ())}
        for line, name in _match_imports(path):
            if name in capabilities and name not in allowed:
                wrong.append(f"{'/'.join(where)}:{line} imports {name}")
    return wrong


def test_match_capabilities_import_only_what_they_may() -> None:
    """Within services/match, a capability imports only the sibling capabilities
    `MATCH_CAPABILITIES` allows it, the plumbing imports none, and every capability is listed."""
    capabilities = {p.name for p in MATCH.iterdir() if (p / "__init__.py").is_file()}
    assert capabilities == set(MATCH_CAPABILITIES)
    assert _match_misplaced_imports(MATCH) == []


def test_match_capabilities_allow_no_cycle() -> None:
    """The allowed sideways imports between the match service's capabilities go one way."""
    graph = {name: set(allowed) for name, allowed in MATCH_CAPABILITIES.items()}
    assert _a_cycle(graph) == []


def test_the_match_check_sees_a_sideways_import(tmp_path: Path) -> None:
    """An import of a capability not allowed, or from the plumbing, is named; the composition
    root may import any."""
    for folder in ("play", "parties"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "__init__.py").write_text("", encoding="utf-8")
    (tmp_path / "play" / "routes.py").write_text(
        "def f():\n    from services.match.parties.service import PartyCommands\n",
        encoding="utf-8",
    )
    (tmp_path / "parties" / "routes.py").write_text(
        "from services.match.play import reads\n", encoding="utf-8"
    )
    (tmp_path / "sockets.py").write_text("import services.match.play.reads\n", encoding="utf-8")
    (tmp_path / "app.py").write_text("import services.match.parties.routes\n", encoding="utf-8")
    assert _match_misplaced_imports(tmp_path) == [
        "play/routes.py:2 imports parties",
        "sockets.py:1 imports play",
    ]
