"""Every table the product code names in its SQL is declared in a catalog (the `sa.Table`
declarations of services/shared/eventstore/_tables.py, tests/match_tables.py and
services/ranking/tables.py); the ranking service names no table of the match service;
only the event store names `events` and `commands`, and only services/shared/match_rows.py
names `matches` and `match_seeds`. Read from the string literals of the source's syntax
trees (docstrings left out), so SQL assembled from f-string pieces counts too."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

from services.ranking import tables as ranking_tables
from services.shared.eventstore import events_table
from services.shared.eventstore._sql import append_statement
from tests import match_tables, paths

ROOT = paths.ROOT
PRODUCT = ("domain", "replays", "services", "ludo_cli")  # migrations are history

CATALOGED = frozenset(events_table.metadata.tables) | frozenset(match_tables.TABLES.tables)
CATALOGED |= frozenset(ranking_tables.TABLES.tables)
MATCH_TABLES = frozenset(match_tables.TABLES.tables)
# Tables that are no one's catalog: Alembic's own.
NOT_OURS = frozenset({"alembic_version"})
# CTEs of the store's one append statement, which side writes (`SideWrite`, written as
# separate strings) select from: checked below to be CTEs of that statement.
APPEND_CTES = frozenset({"appended", "inserted"})
# Where the SQL on some tables may be: the event store's (the only reader of the log), and
# the one module of the rows a match keeps beside its stream. The ranking consumer reads
# `matches` (party link and the `ranked` flag, docs/ranking.md "What counts", which the
# events alone do not give without a scan of every party stream) through that module.
OWNERS = {
    "events": "services/shared/eventstore/",
    "commands": "services/shared/eventstore/",
    "matches": "services/shared/match_rows.py",
    "match_seeds": "services/shared/match_rows.py",
}

# A relation named after FROM / JOIN / INTO / UPDATE / TABLE in upper-case SQL (a name
# followed by "(" is a function: unnest(...), LATERAL (...)); "epoch FROM x" is extract().
_RELATION = re.compile(
    r"(?<!epoch )\b(?:FROM|JOIN|INTO|UPDATE|TABLE)\s+(?:ONLY\s+|IF\s+(?:NOT\s+)?EXISTS\s+)?"
    r"([a-z_][a-z0-9_]*)\b(?!\s*\()(?!\.)"
)
# Names a statement defines itself: WITH head AS (...), inserted AS (...).
_CTE = re.compile(r"\b([a-z_][a-z0-9_]*)\s+AS\s+(?:MATERIALIZED\s+)?\(")


def relations(sql: str) -> set[str]:
    """The tables `sql` reads or writes, system catalogs and its own CTEs left out."""
    ctes = set(_CTE.findall(sql))
    return {
        name
        for name in _RELATION.findall(sql)
        if name not in ctes and not name.startswith("pg_") and name != "stdin"
    }


def _docstrings(tree: ast.AST) -> set[int]:
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                out.add(id(body[0].value))
    return out


def named_tables() -> Iterator[tuple[str, int, str]]:
    """(file, line, table) of every table named in a string literal of the product."""
    for folder in PRODUCT:
        for path in sorted((ROOT / folder).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
            skip = _docstrings(tree)
            for node in ast.walk(tree):
                if (
                    isinstance(node, ast.Constant)
                    and isinstance(node.value, str)
                    and id(node) not in skip
                ):
                    for table in relations(node.value):
                        yield path.relative_to(ROOT).as_posix(), node.lineno, table


def test_the_scanner_finds_tables_and_only_tables() -> None:
    """Tables after FROM, JOIN, INTO, UPDATE and TABLE count; CTEs, functions, system
    catalogs, extract() and COPY's STDIN do not."""
    sql = (
        "WITH head AS (SELECT 1 FROM events e JOIN commands c ON true),"
        " x AS (INSERT INTO seat_presence SELECT * FROM unnest(%s)) UPDATE parties SET"
        " a = extract(epoch FROM due_at) FROM head, pg_locks; COPY ratings FROM STDIN;"
        " ALTER TABLE IF EXISTS matches"
    )
    assert relations(sql) == {"events", "commands", "seat_presence", "parties", "matches"}


def test_every_table_in_the_sql_is_in_a_catalog() -> None:
    """No SQL string of the product names a table that no catalog declares."""
    found = list(named_tables())
    assert {"events", "commands", "ratings", "players", "seat_presence"} <= {t for _, _, t in found}
    append = append_statement(1, False, True, [("SELECT 1", None)])
    assert set(_CTE.findall(append)) >= APPEND_CTES
    known = CATALOGED | NOT_OURS | APPEND_CTES
    unknown = [(f, line, t) for f, line, t in found if t not in known]
    assert unknown == []


def test_the_ranking_service_names_no_match_service_table() -> None:
    """The ranking service keeps its own names (ratings.name) and reads no `players`."""
    crossing = {
        (f, t)
        for f, _, t in named_tables()
        if f.startswith("services/ranking/") and t in MATCH_TABLES
    }
    assert crossing == set()


def test_the_log_and_the_match_rows_are_read_in_one_place_each() -> None:
    """Only the event store names `events` and `commands`; only match_rows.py names
    `matches` and `match_seeds` (the benches, outside the product, may measure them raw)."""
    found = list(named_tables())
    assert {t for f, _, t in found if f.startswith("services/shared/")} >= set(OWNERS)
    elsewhere = [
        (f, line, t) for f, line, t in found if t in OWNERS and not f.startswith(OWNERS[t])
    ]
    assert elsewhere == []


# The ranking service's tables that the match service reads (or, for `reports`, writes)
# directly from the same database, each through one shared module: a pool entry and a
# player's standing must not depend on the ranking process being up (docs/ranking.md,
# Reputation), and a report is filed where the match is (the match service) but decided on
# the ranking service's dashboard. Every instance writes its own figures for the operator's
# live view (instance_stats.py). A finished match's socket asks whether its analysis is
# written (analysis_hints.py), on the analysis consumer's hint. Nowhere else outside
# services/ranking/.
SHARED_RANKING = {
    "ratings": ("services/shared/standing.py",),
    "reputation_matches": ("services/shared/standing.py",),
    "reports": ("services/shared/standing.py", "services/shared/reports.py"),
    "instance_stats": ("services/shared/instance_stats.py",),
    "match_analyses": ("services/shared/analysis_hints.py",),
}


def test_the_ranking_tables_are_read_outside_it_in_the_listed_modules_only() -> None:
    """Outside services/ranking/, only standing.py names the ratings and the reputation
    fold, only it and reports.py name `reports`, only instance_stats.py the instances'
    figures and only analysis_hints.py whether an analysis is written; no other ranking
    table at all."""
    ranking = frozenset(ranking_tables.TABLES.tables)
    found = [
        (f, t)
        for f, _, t in named_tables()
        if t in ranking and not f.startswith("services/ranking/")
    ]
    assert {t for _, t in found} >= set(SHARED_RANKING)
    elsewhere = [(f, t) for f, t in found if f not in SHARED_RANKING.get(t, ())]
    assert elsewhere == []
