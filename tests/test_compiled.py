"""The engine compiled with mypyc (`LUDO_COMPILE=1 pip install .`) plays exactly as the
source: the same events, byte for byte, for every golden match and for normal and hard
CPUs under several rulesets, and the same replay verdicts; and the engine's own tests pass
against it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from domain.engine_form import engine_form
from tests import paths
from tests.compiled_probe import fingerprint

pytestmark = pytest.mark.slow  # builds the engine with mypyc (about a minute)

ROOT = paths.ROOT


# The engine's own tests, run a second time against the compiled build: the fingerprint
# below compares whole matches, these pin every rejection and edge case (a compiled
# function checks its argument types at the call, which once turned a bad die into a
# TypeError instead of a rejection).
ENGINE_TESTS = (
    "domain/test_board.py",
    "domain/test_decider.py",
    "domain/test_dice.py",
    "domain/test_events.py",
    "domain/test_golden.py",
    "domain/test_moves.py",
    "domain/test_options.py",
    "domain/test_oracle.py",
    "domain/test_properties.py",
    "domain/test_rules.py",
    "domain/test_ruleset.py",
    "replays/test_verify.py",
)


@pytest.fixture(scope="module")
def compiled_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the engine's packages with the modules listed in pyproject.toml compiled."""
    pytest.importorskip("mypyc")
    if shutil.which("cc") is None and shutil.which("gcc") is None:
        pytest.skip("no C compiler")
    root = tmp_path_factory.mktemp("compiled")
    modules = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["ludo"][
        "compiled-modules"
    ]
    for package in ("domain", "replays"):
        shutil.copytree(ROOT / package, root / package)
    build = subprocess.run(
        [sys.executable, "-m", "mypyc", *modules],
        check=False,
        cwd=root,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert build.returncode == 0, build.stdout[-3000:] + build.stderr[-3000:]
    return root


def _in_copy(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Run Python in `root`, where the compiled packages come before the source's (and the
    repository after them, for the `tests` package)."""
    return subprocess.run(
        [sys.executable, *args],
        check=False,
        cwd=root,
        env={
            **os.environ,
            "PYTHONPATH": os.pathsep.join((str(root), str(ROOT))),
            "LUDO_EXPECT_ENGINE": "compiled",
        },
        capture_output=True,
        text=True,
        timeout=900,
    )


def test_compiled_engine_plays_the_same_events(compiled_copy: Path) -> None:
    """The compiled copy's fingerprint of matches and verdicts equals this process's (the
    source's)."""
    # As a module: run as a script, its folder (tests/, with tests/domain and
    # tests/replays) would come first on sys.path and shadow the engine's packages.
    probe = _in_copy(compiled_copy, "-m", "tests.compiled_probe")
    assert probe.returncode == 0, probe.stderr[-3000:]
    compiled = json.loads(probe.stdout)
    assert compiled["form"] == "compiled"
    assert engine_form() == "interpreted"
    assert compiled["fingerprint"] == fingerprint()


def test_the_engine_tests_pass_against_the_compiled_engine(compiled_copy: Path) -> None:
    """Every test of the rules engine, the dice and the replay verifier passes when the
    engine is the compiled copy (conftest checks the child really imported it)."""
    tests = [str(ROOT / "tests" / name) for name in ENGINE_TESTS]
    run = _in_copy(
        compiled_copy,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        # Appended, not prepended: the tests are a package, and the repository's root put
        # first on sys.path would import the source engine instead of the compiled copy.
        "--import-mode=append",
        "-c",
        str(ROOT / "pyproject.toml"),
        "--rootdir",
        str(ROOT),
        *tests,
    )
    assert run.returncode == 0, run.stdout[-5000:] + run.stderr[-2000:]
    assert " passed" in run.stdout
