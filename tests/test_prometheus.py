"""deploy/prometheus/ against Prometheus itself: the alert rules and the scrape
configuration pass `promtool check`, the rules' unit tests (alerts_test.yml) pass
`promtool test rules`, and every metric the rules read is one the services export.

`promtool` comes with Debian's `prometheus` package, which .ci/run installs; without it
these tests fail and say so."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests import paths

DEPLOY = paths.ROOT / "deploy" / "prometheus"


def _promtool() -> str:
    promtool = shutil.which("promtool")
    assert promtool is not None, "promtool is missing: apt-get install prometheus (.ci/run does)"
    return promtool


def _run(*args: str, cwd: Path = DEPLOY) -> str:
    done = subprocess.run(
        [_promtool(), *args], cwd=cwd, capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_the_alert_rules_pass_promtool_check() -> None:
    """`promtool check rules` accepts alerts.yml."""
    assert "SUCCESS" in _run("check", "rules", "alerts.yml")


def test_the_scrape_config_passes_promtool_check(tmp_path: Path) -> None:
    """`promtool check config` accepts prometheus.yml as written, with its token file and
    rules beside it (a copy of the folder: the token file is the operator's)."""
    for name in ("prometheus.yml", "alerts.yml"):
        shutil.copy(DEPLOY / name, tmp_path / name)
    (tmp_path / "ludo_operator_token").write_text("an-operator-token\n")
    assert "is valid prometheus config" in _run("check", "config", "prometheus.yml", cwd=tmp_path)


def test_the_alerts_unit_tests_pass() -> None:
    """`promtool test rules`: the lag, leaderless, 5xx and database-unavailable alerts
    fire when they should and stay quiet when they should (alerts_test.yml)."""
    assert "SUCCESS" in _run("test", "rules", "alerts_test.yml")


@pytest.mark.parametrize("name", ["alerts.yml", "alerts_test.yml"])
def test_the_rules_read_only_exported_metrics(name: str) -> None:
    """Every `ludo_*` series the rules (and their tests) name is one the services define
    (a metric's name in services/, with the suffixes of its type): a renamed metric
    cannot leave an alert reading nothing."""
    defined = {
        literal
        for path in (paths.ROOT / "services").rglob("*.py")
        for literal in re.findall(r'"(ludo_[a-z_]+)"', path.read_text())
    }
    suffixes = ("", "_total", "_count", "_bucket", "_sum")
    exported = {f"{metric}{suffix}" for metric in defined for suffix in suffixes}
    named = set(re.findall(r"\bludo_[a-z_]+", (DEPLOY / name).read_text()))
    assert named, "no metric named"
    assert named <= exported, named - exported
    assert {"ludo_consumer_leader", "ludo_http_request_duration_seconds"} <= defined
