"""CI (.ci/run) runs the README's test command: its install once, then its pytest command,
word for word, as the script's last command. Read from both files' text."""

from __future__ import annotations

import re
import shlex

from tests.paths import ROOT


def readme_test_command() -> tuple[list[str], list[str]]:
    """The Quick start's test line, `<install> && <pytest>`, as its two commands' words."""
    readme = (ROOT / "README.md").read_text()
    block = re.search(r"## Quick start\n.*?```sh\n(.*?)```", readme, re.S)
    assert block is not None, "README: no sh block under ## Quick start"
    lines = [line for line in block.group(1).splitlines() if "pytest" in line]
    assert len(lines) == 1, lines
    install, test = lines[0].split(" && ")
    return shlex.split(install), shlex.split(test)


def ci_lines() -> list[str]:
    """.ci/run's lines that are not blank."""
    return [line for line in (ROOT / ".ci" / "run").read_text().splitlines() if line.strip()]


def ci_python_commands() -> list[list[str]]:
    """.ci/run's commands that start with `python3`, one a line, as words, in order."""
    return [shlex.split(line) for line in ci_lines() if line.startswith("python3 ")]


def test_ci_runs_the_readme_test_command_last() -> None:
    """The last command of .ci/run is the README's pytest command, word for word."""
    _, test = readme_test_command()
    assert test[:3] == ["python3", "-m", "pytest"], test
    assert shlex.split(ci_lines()[-1]) == test


def test_ci_installs_once_as_the_readme_does() -> None:
    """.ci/run installs the project once, with the README's install command (made quiet)."""
    install, _ = readme_test_command()
    pip = ["python3", "-m", "pip", "install"]
    installs = [words for words in ci_python_commands() if words[:4] == pip]
    assert [[word for word in words if word != "-q"] for words in installs] == [install]
