"""docs/operations.md against the code: every environment variable the shipped code reads
and every event the services log at info or above is documented there, and the log
table names no event the code no longer logs."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from tests import paths

ROOT = paths.ROOT
DOC = ROOT / "docs" / "operations.md"

# What ships: the packages, the build script and the deployment files (tests are not).
SHIPPED_DIRS = ("services", "ludo_cli", "migrations", "replays", "domain", "deploy")
SHIPPED_FILES = ("setup.py", "Dockerfile", "compose.yaml")
_VARIABLE = re.compile(r"\b(LUDO_[A-Z0-9_]*[A-Z0-9]|DATABASE_URL)\b")
# structlog's (and the standard library's) methods at info and above.
_LEVELS = {"info", "warning", "warn", "error", "exception", "critical", "fatal"}


def _shipped_files() -> list[Path]:
    files = [ROOT / name for name in SHIPPED_FILES]
    for folder in SHIPPED_DIRS:
        files += [
            p
            for p in sorted((ROOT / folder).rglob("*"))
            if p.is_file() and p.suffix in (".py", ".sh", ".yaml", ".yml", ".ini", ".mako")
        ]
    return files


def _read_variables() -> set[str]:
    return {m for path in _shipped_files() for m in _VARIABLE.findall(path.read_text())}


def _logger_name(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return ""


def logged_events(root: Path = ROOT) -> dict[str, str]:
    """Event name -> where it is logged, for every `<logger>.<info+>("name", …)` call in
    services/ and ludo_cli/ (a logger is a name ending in `log`: `_log`, `_request_log`)."""
    found: dict[str, str] = {}
    for folder in ("services", "ludo_cli"):
        for path in sorted((root / folder).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if not (
                    isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Attribute)
                    and node.func.attr in _LEVELS
                    and _logger_name(node.func.value).lower().endswith("log")
                    and node.args
                    and isinstance(node.args[0], ast.Constant)
                    and isinstance(node.args[0].value, str)
                ):
                    continue
                found.setdefault(node.args[0].value, f"{path.relative_to(root)}:{node.lineno}")
            found.update(_named_events(path, root))
    return found


def _named_events(path: Path, root: Path) -> dict[str, str]:
    """The log events a class names in its `EVENTS` dict (the log followers of
    services/ranking/leadership.py log through it: every one is at warning or info)."""
    found: dict[str, str] = {}
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.AnnAssign | ast.Assign):
            targets = [node.target] if isinstance(node, ast.AnnAssign) else node.targets
            if any(isinstance(t, ast.Name) and t.id == "EVENTS" for t in targets) and isinstance(
                node.value, ast.Dict
            ):
                for value in node.value.values:
                    if isinstance(value, ast.Constant) and isinstance(value.value, str):
                        found[value.value] = f"{path.relative_to(root)}:{node.lineno}"
    return found


def _doc_section(title: str) -> str:
    text = DOC.read_text()
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else len(text)]


def _documented_events() -> set[str]:
    return set(re.findall(r"^\| `([a-z_]+)` \|", _doc_section("Logs"), re.MULTILINE))


def test_every_variable_the_code_reads_is_in_the_configuration_table() -> None:
    """Each LUDO_* or DATABASE_URL name in the shipped code is a row of Configuration."""
    variables = _read_variables()
    assert {"DATABASE_URL", "LUDO_DB_APP_ROLE", "LUDO_REQUEST_TIMEOUT"} <= variables
    rows = set(re.findall(r"^\| `([A-Z0-9_]+)` \|", _doc_section("Configuration"), re.MULTILINE))
    assert sorted(variables - rows) == []


def test_every_settings_variable_is_in_the_configuration_table() -> None:
    """Each variable of `ENV_VARS` (what `Settings.from_env` reads) is documented."""
    from services.shared.settings import ENV_VARS  # noqa: PLC0415 - keeps collection light

    section = _doc_section("Configuration")
    assert [var for var, _ in ENV_VARS.values() if f"| `{var}` |" not in section] == []


def test_every_event_logged_at_info_or_above_is_in_the_log_table() -> None:
    """Each event name the services log at info or above has a row under Logs."""
    events = logged_events()
    assert len(events) >= 25, events  # the scan found the loggers at all
    missing = {name: where for name, where in events.items() if name not in _documented_events()}
    assert missing == {}


def test_the_log_table_names_only_events_the_code_logs() -> None:
    """No row under Logs is left over from an event the code no longer logs."""
    assert sorted(_documented_events() - set(logged_events())) == []
