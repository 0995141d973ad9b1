"""How service processes are served (services/shared/serving.py): the start-up heap is
frozen once a serving process has started."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]

# In a process of its own: freezing the test process's heap would outlive the test.
_SCRIPT = """
import gc
from services.match.app import app_from_env as match_app
from services.ranking.app import app_from_env as ranking_app
from services.shared.serving import settle_heap

for app in (match_app(), ranking_app()):
    assert settle_heap in app.on_startup, app.on_startup
assert gc.get_freeze_count() == 0
settle_heap()
print(gc.get_freeze_count())
"""


def test_serving_processes_freeze_their_start_up_heap(tmp_path: Path) -> None:
    """Both services' serving factories run `settle_heap` at start-up, which puts the
    objects made so far out of the cyclic collector's reach."""
    env = {
        **os.environ,
        "LUDO_DATA_DIR": str(tmp_path),
        # Never connected to: the factories only build the apps.
        "DATABASE_URL": "postgresql://nobody@127.0.0.1:1/none",
        "LUDO_LOG_FORMAT": "json",
    }
    done = subprocess.run(
        [sys.executable, "-c", _SCRIPT],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert int(done.stdout.strip().splitlines()[-1]) > 10_000
