"""How the suite is sorted and shared out: the `browser`, `infra` and `bench` markers, and
the pytest-xdist groups and data folders that let it run on parallel workers.

The markers are given here by folder and by what a module uses, not written on each test,
so a new test in a browser module or under tests/benchmarks/ is marked without a word:

- `browser`: every test carrying `tests.browser.requires_chromium` (a page in Chromium);
- `bench`: every test under tests/benchmarks/ (each `ludo bench …` run tiny);
- `infra`: the modules in `INFRA`, which start infrastructure of their own (clusters,
  HAProxy, etcd and Patroni, standbys, backups, outages, the mypyc build).

Parallel workers (`-n 2 --dist loadgroup`, README: Tests): a worker is its own process
with its own embedded PostgreSQL, in `LUDO_DATA_DIR/xdist/<worker>` (`worker_data_dir`),
so no two workers share a data directory, a server or its Unix socket; each test still
gets a fresh database. Tests go to any free worker one by one, except the groups below,
each run whole on one worker:

- a module with a fixture of module or class scope (a cluster, a compiled copy, a played
  match the module's tests all read): split over two workers, each would build it again;
- `SERIAL`: the modules that listen on fixed ports or stop and start their own servers
  (tests/standby.py's port, test_read_standby's mute port), kept in one group so that no
  two of them run at once.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

from services.shared.settings import default_data_dir

MARKERS = ("browser", "infra", "bench")

# Modules (relative to tests/) that start infrastructure of their own.
INFRA = frozenset(
    {
        "test_backup.py",
        "test_balancer.py",
        "test_balancer_limits.py",
        "test_compiled.py",
        "test_ha.py",
        "test_pitr.py",
        "services/test_outage.py",
        "services/test_read_standby.py",
    }
)

# Modules that must not run beside one another: fixed loopback ports.
SERIAL = frozenset({"services/test_read_standby.py"})

TESTS = Path(__file__).resolve().parent


def worker_data_dir(worker: str, environ: dict[str, str] | None = None) -> Path:
    """The data folder of xdist worker `worker` ("gw0", …): beside the serial run's `pg/`,
    under `LUDO_DATA_DIR` (or the user data directory when it is unset)."""
    env = os.environ if environ is None else environ
    base = Path(env["LUDO_DATA_DIR"]) if env.get("LUDO_DATA_DIR") else default_data_dir()
    return base / "xdist" / worker


def configure_worker() -> None:
    """In an xdist worker, point `LUDO_DATA_DIR` (read by `Settings.from_env`, here and in
    every process a test starts) at the worker's own folder."""
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if worker:
        os.environ["LUDO_DATA_DIR"] = str(worker_data_dir(worker))


def _module(item: pytest.Item) -> str:
    return Path(str(item.path)).resolve().relative_to(TESTS).as_posix()


def _shares_fixture(item: pytest.Item) -> bool:
    """Whether `item` uses a fixture of module or class scope defined in its module (or its
    folder's conftest): one the module's tests share. Session fixtures (the database
    server) are set up once per worker anyway."""
    info = getattr(item, "_fixtureinfo", None)  # pytest's own record of the item's fixtures
    if info is None:
        return False
    return any(
        defs and defs[-1].scope in ("module", "class") for defs in info.name2fixturedefs.values()
    )


def _needs_chromium(item: pytest.Item, chromium_mark: Any) -> bool:
    return any(mark == chromium_mark for mark in item.iter_markers(name="skipif"))


def _weight(item: pytest.Item) -> int:
    """0 for the longest kinds of test (infrastructure), then benches and pages, other
    `slow` tests, whole modules run as one group, and last (4) the rest, which take well
    under a second each."""
    marks = {mark.name for mark in item.iter_markers()}
    kinds = ({"infra"}, {"bench", "browser"}, {"slow"}, {"xdist_group"})
    return next((n for n, kind in enumerate(kinds) if marks & kind), len(kinds))


def sort(items: list[pytest.Item], chromium_mark: Any) -> None:
    """Mark each item (`browser`, `bench`, `infra`), give it its xdist group, if any, and
    order the items longest kind first (a stable sort: within a kind, as collected). The
    workers take work in this order, so the long runs start at once, and the many short
    tests at the end fill whichever worker is free first, instead of one long module
    starting last while the other worker idles."""
    _mark(items, chromium_mark)
    items.sort(key=_weight)


def _mark(items: Iterable[pytest.Item], chromium_mark: Any) -> None:
    for item in items:
        module = _module(item)
        if _needs_chromium(item, chromium_mark):
            item.add_marker(pytest.mark.browser)
        if module.startswith("benchmarks/"):
            item.add_marker(pytest.mark.bench)
        if module in INFRA:
            item.add_marker(pytest.mark.infra)
        if module in SERIAL:
            item.add_marker(pytest.mark.xdist_group("serial"))
        elif _shares_fixture(item):
            item.add_marker(pytest.mark.xdist_group(module))
