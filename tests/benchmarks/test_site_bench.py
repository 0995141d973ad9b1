"""`ludo bench site` end to end, briefly: the real match service (uvicorn, loopback) and
Debian's Chromium, two table loads. Figures are not checked (the machine decides them),
only that every page was weighed and every load reached a playable table."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.site_bench import bench, print_table
from services.shared.settings import Settings
from tests.browser import requires_chromium
from tests.services.match.test_live import Instance

pytestmark = [pytest.mark.slow, requires_chromium]


def test_bench_weighs_every_page_and_times_each_load(
    database_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Four pages weighed with their script and style shares; two loads timed, each with
    the page's own playable mark and the /healthz baseline; a short, a long and a finished
    match drawn by the table and the replay viewer, the long ones' ratio printed."""
    settings = Settings(data_dir=tmp_path, database_url=database_url, cpu_delay=0)
    with Instance(settings) as service:
        result = bench(2, service.http, length_loads=1, db_url=database_url)
    assert [p["page"].split()[0] for p in result["pages"]] == [
        "lobby",
        "table",
        "replay",
        "ratings",
    ]
    for weighed in result["pages"]:
        assert weighed["bytes"] > weighed["script"] > 0 and weighed["style"] > 0
    assert result["loads"] == 2
    for figures in (result["playable_ms"], result["baseline_ms"]):
        assert 0 < figures["p50"] <= figures["max"]
    drawn = {(x["page"].split()[0], x["match"]): x for x in result["lengths"]}
    assert set(drawn) == {
        (p, m) for p in ("table", "replay") for m in ("short", "long", "finished")
    }
    assert [drawn["table", m]["events"] for m in ("short", "long", "finished")] == [20, 2001, 2036]
    for x in drawn.values():
        assert 0 < x["drawn_ms"]["p50"] <= x["drawn_ms"]["max"]
    # Bytes, not times: the long match's table took its last events, not all of them.
    short = drawn["table", "short"]["socket_bytes"]
    assert short > 0 and drawn["table", "finished"]["socket_bytes"] < 4 * short
    print_table(result)
    out = capsys.readouterr().out
    assert "playable table" in out and out.count("× met") + out.count("× NOT met") == 4
