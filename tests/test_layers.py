"""Each top-level folder imports only what is below it: domain < replays < services <
ludo_cli < benchmarks (and migrations, tools); `domain/` and `replays/` import no database or
web library; no chain of imports leads from a module back to itself. Read from the source's
syntax trees, so a lazy import inside a function counts.

Inside `services/`: `shared/` is below both services, and neither service imports the other.
Inside a service, each capability's sub-package imports only the service's root plumbing,
`services/shared`, `domain`, `replays` and the sibling capabilities its dict names; the
plumbing imports no capability; `app.py`, the composition root, imports them all
(docs/design.md#where-things-go-in-the-ranking-service).

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
    "web": frozenset({"web"}),
    "replays": frozenset({"domain", "replays"}),
    "services": frozenset({"domain", "replays", "services", "web"}),
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


# ------------------------------------------------------------------------ inside services


def _named_imports(root: Path, path: Path) -> Iterator[tuple[int, str]]:
    """(line, dotted name) of every import in the file, at any depth, relative ones
    resolved; `from package import name` names `package.name` (a module or not)."""
    parts = path.relative_to(root).with_suffix("").parts
    package = list(parts if parts[-1] == "__init__" else parts[:-1])
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            module = ".".join([*base, *([node.module] if node.module else [])])
            for alias in node.names:
                yield node.lineno, f"{module}.{alias.name}"


def _within(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


# services/<this> must not import services/<that>.
SERVICES_APART = (
    ("shared", "match"),
    ("shared", "ranking"),
    ("match", "ranking"),
    ("ranking", "match"),
)


def test_services_import_each_other_only_downward() -> None:
    """`services/shared` imports neither service, and neither service imports the other."""
    crossing = [
        f"{path.relative_to(ROOT)}:{line} imports {name}"
        for this, that in SERVICES_APART
        for path in _modules(f"services/{this}")
        for line, name in _named_imports(ROOT, path)
        if _within(name, f"services.{that}")
    ]
    assert crossing == []


def _capability_imports(
    service_dir: str,
    allowed: Mapping[str, frozenset[str]],
    root: Path = ROOT,
    roots: frozenset[str] = frozenset({"app"}),
) -> list[str]:
    """The imports inside `service_dir` that break its layering: a capability (a
    sub-package) importing a sibling that `allowed[capability]` does not name, `app`, or
    another service than `services/shared`; a root module other than `app.py` (the
    plumbing) importing a capability or `app`; a sub-package missing from `allowed`, or
    named there and missing. The composition root (`roots`: `app.py`, and the module
    that builds the parts where there is one) may import everything."""
    service = service_dir.replace("/", ".")
    base = root / service_dir
    capabilities = {p.parent.name for p in base.glob("*/__init__.py")}
    wrong = [
        f"{service_dir}/{c}/: in the folder or the dict, not both"
        for c in sorted(capabilities ^ set(allowed))
    ]
    for path in sorted(base.rglob("*.py")):
        inner = path.relative_to(base).parts
        if len(inner) == 1 and path.stem in roots:
            continue
        capability = inner[0] if len(inner) > 1 else None
        # The capabilities this module may import: none from the plumbing.
        reachable = {capability, *allowed.get(capability, ())} if capability else set()
        for line, name in _named_imports(root, path):
            where = f"{path.relative_to(root)}:{line} imports {name}"
            if _within(name, "services") and not (
                _within(name, service) or _within(name, "services.shared")
            ):
                wrong.append(where)
            if not _within(name, service) or name == service:
                continue
            first = name[len(service) + 1 :].split(".")[0]
            if first in roots or (first in capabilities and first not in reachable):
                wrong.append(where)
    return wrong


# A capability of the ranking service -> the sibling capabilities it may import.
RANKING_CAPABILITIES: dict[str, frozenset[str]] = {
    "ratings": frozenset(),
    "analysis": frozenset({"ratings"}),
    "moderation": frozenset(),
    "dashboard": frozenset({"ratings", "analysis"}),
}


def test_ranking_capabilities_import_only_what_their_dict_allows() -> None:
    """Each ranking capability imports only plumbing, shared and its allowed siblings."""
    assert _capability_imports("services/ranking", RANKING_CAPABILITIES) == []


def test_the_capability_check_sees_a_wrong_import(tmp_path: Path) -> None:
    """A sibling not allowed (lazily too), another service, the app, an unlisted folder."""
    service = tmp_path / "services" / "toy"
    for folder in ("a", "b", "c"):
        (service / folder).mkdir(parents=True)
        (service / folder / "__init__.py").write_text("", encoding="utf-8")
    (service / "plumbing.py").write_text("from services.toy.a import x\n", encoding="utf-8")
    (service / "app.py").write_text("from services.toy import a, b, c\n", encoding="utf-8")
    (service / "a" / "m.py").write_text(
        "from services.toy import plumbing\n"
        "from services.shared import y\n"
        "from ..b import z\n"
        "def f():\n"
        "    from services.toy.c.n import w\n"
        "    import services.other.v\n"
        "    from services.toy.app import create_app\n",
        encoding="utf-8",
    )
    allowed = {"a": frozenset({"b"}), "b": frozenset()}
    assert _capability_imports("services/toy", allowed, tmp_path) == [
        "services/toy/c/: in the folder or the dict, not both",
        "services/toy/a/m.py:5 imports services.toy.c.n.w",
        "services/toy/a/m.py:6 imports services.other.v",
        "services/toy/a/m.py:7 imports services.toy.app.create_app",
        "services/toy/plumbing.py:1 imports services.toy.a.x",
    ]


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
# The match service's composition root: the modules that build the parts and the app.
MATCH_ROOTS = frozenset({"app", "parts"})


def test_match_capabilities_import_only_what_their_dict_allows() -> None:
    """Each match capability imports only plumbing, shared and its allowed siblings."""
    assert _capability_imports("services/match", MATCH_CAPABILITIES, roots=MATCH_ROOTS) == []


@pytest.mark.parametrize(
    "allowed", [MATCH_CAPABILITIES, RANKING_CAPABILITIES], ids=["match", "ranking"]
)
def test_capabilities_allow_no_cycle(allowed: Mapping[str, frozenset[str]]) -> None:
    """The allowed sideways imports between a service's capabilities go one way."""
    assert _a_cycle({name: set(siblings) for name, siblings in allowed.items()}) == []
