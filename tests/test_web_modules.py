"""The pages' pure modules pass their unit tests in node (`node --test web/test/`), so the
README's test command covers them too; skipped, saying why, only where node is missing."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from tests.paths import ROOT


@pytest.mark.skipif(shutil.which("node") is None, reason="no node: apt-get install nodejs")
def test_the_modules_unit_tests_pass() -> None:
    """Every test of web/test/ passes (the board's geometry, DOM-free)."""
    run = subprocess.run(
        ["node", "--test", "web/test/"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    assert "# fail 0" in run.stdout and "# pass 0" not in run.stdout
