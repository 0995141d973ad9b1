"""The suite's plan holds on real workers: under `-n 2 --dist loadgroup` a module whose
tests share a module-scoped fixture runs whole on one worker, so the fixture is built once
(tests/suite_plan.py; the groups reach pytest-xdist only if they are marked before its own
collection hook reads them)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from tests.paths import ROOT

# Four tests of test_pages.py that use its module-scoped `client`, two that do not.
SHARING = ("served_typed_and_revalidated", "catalogues_section_is_served")
ALONE = ("csp_is_strict",)


def test_a_modules_shared_fixture_keeps_its_tests_on_one_worker(tmp_path: Path) -> None:
    """Every test using the module's fixture runs on one worker, its id carrying the
    module's group; the module's other tests may go to either worker."""
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-n",
            "2",
            "--dist",
            "loadgroup",
            "-p",
            "no:cacheprovider",
            "-v",
            "tests/services/shared/test_pages.py",
            "-k",
            " or ".join(SHARING + ALONE),
        ],
        cwd=ROOT,
        env={**os.environ, "LUDO_DATA_DIR": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    ran = re.findall(r"^\[(gw\d)\] .*? PASSED (\S+)", run.stdout, re.MULTILINE)
    shared = [(worker, test) for worker, test in ran if any(s in test for s in SHARING)]
    assert len(shared) >= 4, run.stdout[-3000:]
    assert len({worker for worker, _ in shared}) == 1, shared
    assert all(test.endswith("@services/shared/test_pages.py") for _, test in shared), shared
    alone = [test for _, test in ran if any(s in test for s in ALONE)]
    assert alone and not any("@" in test for test in alone), alone
