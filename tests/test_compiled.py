"""The engine compiled with mypyc (`LUDO_COMPILE=1 pip install .`) plays exactly as the
source: the same events, byte for byte, for every golden match and for normal and hard
CPUs under several rulesets, and the same replay verdicts."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from compiled_probe import fingerprint

from ludo_cli.bench import engine_form

ROOT = Path(__file__).parents[1]


def test_compiled_engine_plays_the_same_events(tmp_path: Path) -> None:
    """Compile the modules listed in pyproject.toml into a copy of the packages, then
    compare the copy's fingerprint of matches and verdicts with this process's (the
    source)."""
    pytest.importorskip("mypyc")
    if shutil.which("cc") is None and shutil.which("gcc") is None:
        pytest.skip("no C compiler")
    modules = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["ludo"][
        "compiled-modules"
    ]
    for package in ("domain", "replays"):
        shutil.copytree(ROOT / package, tmp_path / package)
    build = subprocess.run(
        [sys.executable, "-m", "mypyc", *modules],
        check=False,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert build.returncode == 0, build.stdout[-3000:] + build.stderr[-3000:]
    probe = subprocess.run(
        [sys.executable, str(Path(__file__).with_name("compiled_probe.py"))],
        check=False,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert probe.returncode == 0, probe.stderr[-3000:]
    compiled = json.loads(probe.stdout)
    assert compiled["form"] == "compiled"
    assert engine_form() == "interpreted"
    assert compiled["fingerprint"] == fingerprint()
