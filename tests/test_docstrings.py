"""Every test says the behaviour it pins down in a docstring (README: "each test has a
one-line docstring"): its summary, the first paragraph, is one sentence, wrapped to the
line length at most over four lines; details may follow after a blank line. Read from the
tests' syntax trees, as the layering check reads imports."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from tests import paths

TESTS = paths.ROOT / "tests"
SUMMARY_LINES = 4
SENTENCE_ENDS = (".", "?", "!", ")", "…")


def _tests(path: Path) -> Iterator[ast.FunctionDef | ast.AsyncFunctionDef]:
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith(
            "test"
        ):
            yield node


def _problems() -> Iterator[str]:
    for path in sorted(TESTS.rglob("test_*.py")):
        if "vendor" in path.parts:
            continue
        for test in _tests(path):
            where = f"{path.relative_to(paths.ROOT)}:{test.lineno} {test.name}"
            doc = ast.get_docstring(test)
            if not doc:
                yield f"{where}: no docstring"
                continue
            summary = doc.split("\n\n")[0].strip()
            if len(summary.splitlines()) > SUMMARY_LINES:
                yield f"{where}: a summary of {len(summary.splitlines())} lines"
            elif not summary.endswith(SENTENCE_ENDS):
                yield f"{where}: the summary is not a sentence"


def test_every_test_says_what_it_pins_down() -> None:
    """Each test function has a docstring whose first paragraph is one short sentence."""
    problems = list(_problems())
    assert not problems, "\n".join(problems)


def test_the_check_sees_a_test_without_a_docstring(tmp_path: Path) -> None:
    """The reader finds test functions (sync, async, in classes) and their docstrings."""
    source = tmp_path / "test_x.py"
    source.write_text(
        "def test_a():\n    pass\nclass TestB:\n    async def test_b(self):\n        '''Says.'''\n",
        encoding="utf-8",
    )
    found = {t.name: ast.get_docstring(t) for t in _tests(source)}
    assert found == {"test_a": None, "test_b": "Says."}
