"""The benches are not part of the product: the wheel leaves `benchmarks/` out, while a
checkout's editable install (pyproject.toml's packages, setup.py's editable hook) runs them as
`ludo bench …` and `python -m benchmarks …` from any directory."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import warnings
import zipfile
from pathlib import Path

import pytest

from tests.paths import ROOT

# What a wheel is built from: the build files and every top-level package of the repository,
# the benches included (the package list, not the copy, must leave them out).
_BUILD_FILES = ("pyproject.toml", "setup.py", "README.md")
_PACKAGES = ("domain", "replays", "services", "ludo_cli", "migrations", "web", "benchmarks")


def _top_level(names: list[str]) -> set[str]:
    return {name.split("/")[0].split(".")[0] for name in names}


def _ludo() -> str:
    """The installed `ludo` script: beside this interpreter (a venv) or in its scripts
    folder (pip's, e.g. /usr/local/bin for Debian's python3), else on PATH."""
    folders = [str(Path(sys.executable).parent), sysconfig.get_path("scripts")]
    found = shutil.which("ludo", path=os.pathsep.join([*folders, os.environ.get("PATH", "")]))
    assert found, "no `ludo` script: install the checkout (pip install -e '.[test]')"
    return found


def test_setuptools_packages_leave_the_benchmarks_out() -> None:
    """The package list setuptools reads from pyproject.toml has the product and no bench."""
    setuptools = pytest.importorskip("setuptools")
    pyproject = pytest.importorskip("setuptools.config.pyprojecttoml")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # `[tool.setuptools]` in pyproject.toml is "beta"
        dist = pyproject.apply_configuration(setuptools.Distribution(), ROOT / "pyproject.toml")
    top = {package.split(".")[0] for package in dist.packages}
    assert top == {"domain", "replays", "services", "ludo_cli", "migrations", "web"}
    assert "benchmarks" not in top


@pytest.mark.slow
def test_the_wheel_ships_no_benchmarks(tmp_path: Path) -> None:
    """A wheel built as `pip install .` builds it holds the product's modules and its front
    end (the pages' shells, modules and styles), no bench."""
    source = tmp_path / "source"
    source.mkdir()
    for name in _BUILD_FILES:
        shutil.copy2(ROOT / name, source / name)
    for name in _PACKAGES:
        shutil.copytree(ROOT / name, source / name, ignore=shutil.ignore_patterns("__pycache__"))
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(tmp_path), "."],
        cwd=source,
        check=True,
        timeout=600,
    )
    (wheel,) = tmp_path.glob("ludo_backend-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "ludo_cli/main.py" in names
    for served in (
        "web/pages/lobby.html",
        "web/js/lobby.js",
        "web/js/lib/site.js",
        "web/css/site.css",
    ):
        assert served in names
    assert "benchmarks" not in _top_level(names)


@pytest.mark.parametrize(
    "command",
    [
        ["ludo", "bench", "--help"],
        ["python", "-m", "benchmarks", "--help"],
    ],
    ids=["ludo bench", "python -m benchmarks"],
)
def test_a_dev_install_runs_the_benches_from_any_directory(
    command: list[str], tmp_path: Path
) -> None:
    """The editable install maps `benchmarks`: its help lists every bench outside the checkout."""
    program = {"ludo": _ludo(), "python": sys.executable}[command[0]]
    done = subprocess.run(
        [program, *command[1:]],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: ludo bench")
    for target in ("domain", "service", "floor", "store", "faults", "live", "site"):
        assert f"    {target} " in done.stdout
