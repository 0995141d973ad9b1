"""`ludo bench site`: what a player's browser loads, and how soon the table is playable.

The match service runs under uvicorn in a subprocess on a scratch database (as for
`ludo bench service`), or `--url` names one already running on a loopback address. A
guest opens a 2-seat table with one CPU and starts it; nobody rolls, so the table stays
at the guest's roll.

- **Page weight**: every page of the site as served (HTML with its inline script and
  style: each page is one self-contained file), uncompressed, with the script and style
  shares; target ≤ 150 KB.
- **Time to a playable table**: Debian's Chromium (headless, the system's
  /usr/bin/chromium) navigates to the table N times; each time the figure is the page's
  own `performance.mark("ludo:playable")` (set when the board is drawn and the roll
  button is live), in ms since the navigation started.
- **Baseline, same run, same browser**: navigating to `/healthz` (a 16-byte JSON answer),
  to the navigation's `responseEnd`: the floor of a loopback navigation here. The target
  is a ratio to it (the machine's speed moves up to 3× between hours): a playable table
  within `TARGET_PLAYABLE_FLOORS` bare navigations (p90 over p90).

Nothing asserts a time; the figures are printed beside the targets (docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import re
import statistics
import sys
from typing import Any

import msgspec

from benchmarks.chromium import CHROMIUM, CHROMIUM_ARGS
from benchmarks.common import BenchError, scratch_db
from benchmarks.harness import Bench, Figures, Say, to_stderr
from benchmarks.service_process import check_loopback, serve
from ludo_cli.arguments import positive_int

__all__ = ["BENCH", "bench", "measure", "print_table"]

TARGET_KB = 150.0
TARGET_PLAYABLE_FLOORS = 25.0


def _options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--loads", type=positive_int, default=20, help="timed table loads")
    parser.add_argument(
        "--url", default=None, help="a running service (loopback only), e.g. http://127.0.0.1:8000"
    )


def measure(args: argparse.Namespace, say: Say) -> Figures:
    if not os.path.exists(CHROMIUM):
        raise BenchError(f"no {CHROMIUM}; install Debian's chromium (apt-get install chromium)")
    return bench(args.loads, args.url)


def bench(loads: int, url: str | None) -> dict[str, Any]:
    from services.shared.database import database_url
    from services.shared.settings import Settings

    if url is not None:
        check_loopback(url)
    with contextlib.ExitStack() as stack:
        if url is None:
            server = stack.enter_context(database_url(Settings.from_env()))
            db_url = stack.enter_context(scratch_db(server))
            base, _pid = stack.enter_context(serve(db_url, log_level="warning", say=to_stderr))
        else:
            base = url.rstrip("/")
        table = _set_table(base)
        weights = _weights(base, table)
        timing = asyncio.run(_timings(base, table, loads))
    return {"url": base, "pages": weights, **timing}


def _set_table(base: str) -> dict[str, str]:
    """A guest at a started 2-seat table with one CPU, waiting on the guest's roll."""
    import httpx

    with httpx.Client(base_url=base, timeout=30) as http:
        made = http.post("/api/players", json={"name": "bench"}).json()
        auth = {"Authorization": f"Bearer {made['token']}"}
        party = http.post("/api/parties", json={"seats": 2}, headers=auth).json()
        http.post(f"/api/parties/{party['id']}/cpus", json={}, headers=auth).raise_for_status()
        started = http.post(f"/api/parties/{party['id']}/start", headers=auth)
        started.raise_for_status()
    return {
        "party": party["id"],
        "match": started.json()["match_id"],
        "guest": msgspec.json.encode(
            {"id": made["id"], "name": "bench", "token": made["token"]}
        ).decode(),
    }


def _weights(base: str, table: dict[str, str]) -> list[dict[str, Any]]:
    import httpx

    pages = {
        "lobby /": "/",
        "table /party/{id}": f"/party/{table['party']}",
        "replay /replay/{id}": f"/replay/{table['match']}",
        "ratings /leaderboard": "/leaderboard",
    }
    out = []
    with httpx.Client(base_url=base, timeout=30) as http:
        for name, path in pages.items():
            html = http.get(path).raise_for_status().content
            text = html.decode()
            script = sum(len(b.encode()) for b in re.findall(r"<script>(.*?)</script>", text, re.S))
            style = sum(len(b.encode()) for b in re.findall(r"<style>(.*?)</style>", text, re.S))
            out.append(
                {
                    "page": name,
                    "bytes": len(html),
                    "script": script,
                    "style": style,
                    "kb": round(len(html) / 1024, 1),
                }
            )
    return out


async def _timings(base: str, table: dict[str, str], loads: int) -> dict[str, Any]:
    from playwright.async_api import async_playwright

    playable: list[float] = []
    floor: list[float] = []
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        context = await browser.new_context(viewport={"width": 1280, "height": 900})
        # The guest of this device, as the lobby would have kept it.
        await context.add_init_script(
            f"localStorage.setItem('ludo.guest', {msgspec.json.encode(table['guest']).decode()})"
        )
        page = await context.new_page()
        mark = "performance.getEntriesByName('ludo:playable')"
        for i in range(loads + 1):  # the first load warms the browser's and server's caches
            await page.goto(f"{base}/party/{table['party']}")
            # A function, not a string: the page's CSP forbids eval of a string predicate.
            await page.wait_for_function(f"() => {mark}.length > 0", timeout=30_000)
            ms = await page.evaluate(f"{mark}[0].startTime")
            await page.goto(f"{base}/healthz")
            floor_ms = await page.evaluate(
                "performance.getEntriesByType('navigation')[0].responseEnd"
            )
            if i:
                playable.append(float(ms))
                floor.append(float(floor_ms))
            print(f"\rload {i}/{loads}: playable in {ms:.0f} ms", end="", file=sys.stderr)
        print(file=sys.stderr)
        await browser.close()
    return {"loads": loads, "playable_ms": _summary(playable), "baseline_ms": _summary(floor)}


def _summary(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {
        "p50": round(statistics.median(ordered), 1),
        "p90": round(ordered[int(0.9 * (len(ordered) - 1))], 1),
        "max": round(ordered[-1], 1),
    }


def print_table(r: dict[str, Any]) -> None:
    print(f"site at {r['url']}")
    print(f"{'page':<24} {'KB':>7} {'script':>8} {'style':>7}   target ≤ {TARGET_KB:.0f} KB")
    for p in r["pages"]:
        ok = "met" if p["kb"] <= TARGET_KB else "NOT met"
        print(f"{p['page']:<24} {p['kb']:>7} {p['script']:>8} {p['style']:>7}   {ok}")
    pm, bm = r["playable_ms"], r["baseline_ms"]
    print(
        f"\nnavigation → playable table, {r['loads']} loads (ms): p50 {pm['p50']}  "
        f"p90 {pm['p90']}  max {pm['max']}"
    )
    print(
        f"baseline, navigation → /healthz answered (ms): p50 {bm['p50']}  p90 {bm['p90']}  "
        f"max {bm['max']}"
    )
    floors = pm["p90"] / bm["p90"]
    ok = "met" if floors <= TARGET_PLAYABLE_FLOORS else "NOT met"
    print(
        f"playable table ÷ baseline (p90): {floors:.1f}×   "
        f"target ≤ {TARGET_PLAYABLE_FLOORS:.0f}×: {ok}"
    )


BENCH = Bench(
    name="site",
    help="page weight of every page, and ms from navigation to a playable table",
    options=_options,
    measure=measure,
    table=print_table,
)
