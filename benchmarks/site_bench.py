"""`ludo bench site`: what a player's browser loads, and how soon the table is playable.

The match service runs under uvicorn in a subprocess on a scratch database (as for
`ludo bench service`), or `--url` names one already running on a loopback address. A
guest opens a 2-seat table with one CPU and starts it; nobody rolls, so the table stays
at the guest's roll.

- **Page weight**: every page of the site as a browser loads it, uncompressed: the HTML
  shell, its ES modules (the entry module and every module it imports, each once) and its
  stylesheets, with the script and style shares; target ≤ 150 KB.
- **Time to a playable table**: Debian's Chromium (its headless shell,
  benchmarks/chromium.py) navigates to the table N times; each time the figure is the page's
  own `performance.mark("ludo:playable")` (set when the board is drawn and the roll
  button is live), in ms since the navigation started.
- **Baseline, same run, same browser**: navigating to `/healthz` (a 16-byte JSON answer),
  to the navigation's `responseEnd`: the floor of a loopback navigation here. The target
  is a ratio to it (the machine's speed moves up to 3× between hours): a playable table
  within `TARGET_PLAYABLE_FLOORS` bare navigations (p90 over p90).
- **A long match draws as soon as a short one**: three matches stored in the service's
  database (`benchmarks/long_match.py`: four easy CPUs, no `matches` row): the first 20
  events of a match (short), the first 2,000 (long, in play) and a whole match of 2,000
  events or more (finished, its seed revealed). Each is opened `--length-loads` times at
  `/match/{id}` (as a spectator) and at `/replay/{id}`, the three in turn; the figure is
  the moment the page sets `body[data-ready]` (its first drawing: the board, the state,
  the result of a finished match; the replay's first step), in ms since the navigation
  started, with the bytes the page had received by then (HTTP bodies and socket
  messages) and its longest task (the main thread busy without a break). Before the next
  load the page's own later reads finish (network idle: the replay's audit and dice, read
  after its first drawing, would otherwise load the service under the next page).
  Target: each long match ≤ `TARGET_LENGTH_RATIO` × the short one's time (p50 over p50),
  page by page.
  With `--url`, the matches are written to the database of `LUDO_DATA_DIR` (or
  `DATABASE_URL`): the one `ludo up` of that data dir serves.

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
from urllib.parse import urljoin

import msgspec

from benchmarks.chromium import CHROMIUM, CHROMIUM_ARGS
from benchmarks.common import BenchError, scratch_db
from benchmarks.harness import Bench, Figures, Say, to_stderr
from benchmarks.service_process import check_loopback, serve
from ludo_cli.arguments import positive_int

__all__ = ["BENCH", "bench", "measure", "print_lengths", "print_table"]

TARGET_KB = 150.0
TARGET_PLAYABLE_FLOORS = 25.0
TARGET_LENGTH_RATIO = 1.5
SHORT_EVENTS = 20
LONG_EVENTS = 2000

# Recorded in every page from its first script on: when the page first set
# `body[data-ready]`, the bytes it had received by then (the bodies of its HTTP answers and
# its socket messages), and its longest task.
_RECORD_DRAW = """
window.__socketBytes = 0;
const NativeSocket = window.WebSocket;
window.WebSocket = class extends NativeSocket {
  constructor(...args) {
    super(...args);
    this.addEventListener("message", (e) => {
      const data = e.data;
      window.__socketBytes += typeof data === "string" ? new Blob([data]).size : data.size || 0;
    });
  }
};
window.__longest = 0;
try {
  new PerformanceObserver((list) => {
    for (const task of list.getEntries()) {
      window.__longest = Math.max(window.__longest, task.duration);
    }
  }).observe({ type: "longtask", buffered: true });
} catch (_) { /* no long task timing here */ }
window.__drawn = null;
new MutationObserver(() => {
  if (window.__drawn !== null || !document.body || document.body.dataset.ready !== "true") return;
  const http = performance.getEntriesByType("resource")
    .reduce((n, r) => n + (r.encodedBodySize || 0), 0);
  const nav = performance.getEntriesByType("navigation")[0];
  window.__drawn = { ms: performance.now(), http: http + (nav ? nav.encodedBodySize : 0),
                     socket: window.__socketBytes };
}).observe(document, { subtree: true, attributes: true, attributeFilter: ["data-ready"] });
"""


def _options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--loads", type=positive_int, default=20, help="timed table loads")
    parser.add_argument(
        "--length-loads",
        type=positive_int,
        default=10,
        help="timed loads of each page of each match (short, long, finished)",
    )
    parser.add_argument(
        "--url", default=None, help="a running service (loopback only), e.g. http://127.0.0.1:8000"
    )


def measure(args: argparse.Namespace, say: Say) -> Figures:
    if not os.path.exists(CHROMIUM):
        raise BenchError(f"no {CHROMIUM}: apt-get install chromium-headless-shell")
    return bench(args.loads, args.url, length_loads=args.length_loads)


def bench(
    loads: int, url: str | None, *, length_loads: int = 10, db_url: str | None = None
) -> dict[str, Any]:
    """The figures; with `url`, of the service running there on `db_url` (default: the
    database of this process's settings, the one `ludo up` of the same data dir serves)."""
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
            if db_url is None:
                db_url = stack.enter_context(database_url(Settings.from_env()))
            base = url.rstrip("/")
        table = _set_table(base)
        weights = _weights(base, table)
        timing = asyncio.run(_timings(base, table, loads))
        matches = asyncio.run(_store_matches(db_url))
        lengths = asyncio.run(_length_timings(base, matches, length_loads))
    return {"url": base, "pages": weights, **timing, "lengths": lengths}


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


# What a shell loads: its entry module and stylesheets, and what a module imports.
_MODULE_SRC = re.compile(r'<script\b[^>]*\bsrc="([^"]+)"')
_STYLESHEET = re.compile(r'<link\b[^>]*rel="stylesheet"[^>]*href="([^"]+)"')
_IMPORT = re.compile(r"""^\s*import\s[^;]*?from\s+"([^"]+)";""", re.MULTILINE | re.DOTALL)


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
            # The module graph, each module once (a browser fetches a module once per page).
            modules: dict[str, int] = {}
            todo = [urljoin(path, src) for src in _MODULE_SRC.findall(text)]
            while todo:
                url = todo.pop()
                if url in modules:
                    continue
                body = http.get(url).raise_for_status().content
                modules[url] = len(body)
                todo += [urljoin(url, spec) for spec in _IMPORT.findall(body.decode())]
            style = sum(
                len(http.get(urljoin(path, href)).raise_for_status().content)
                for href in _STYLESHEET.findall(text)
            )
            script = sum(modules.values())
            total = len(html) + script + style
            out.append(
                {
                    "page": name,
                    "bytes": total,
                    "script": script,
                    "style": style,
                    "kb": round(total / 1024, 1),
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


async def _store_matches(db_url: str) -> dict[str, dict[str, Any]]:
    """The short, long and finished matches, stored under fresh ids: {name: {id, events}}."""
    import uuid

    from benchmarks.long_match import long_match, store_match
    from services.shared.database import create_engine

    made = {
        "short": long_match(SHORT_EVENTS),
        "long": long_match(LONG_EVENTS),
        "finished": long_match(LONG_EVENTS, finished=True),
    }
    engine = create_engine(db_url)
    try:
        out = {}
        for name, (events, seed) in made.items():
            match_id = str(uuid.uuid4())
            await store_match(engine, match_id, events, seed)
            out[name] = {"id": match_id, "events": len(events)}
        return out
    finally:
        await engine.dispose()


async def _length_timings(
    base: str, matches: dict[str, dict[str, Any]], loads: int
) -> list[dict[str, Any]]:
    """Each page of each match opened `loads` times (after one unmeasured load of each),
    the matches in turn: the first drawing's time, bytes and longest task."""
    from playwright.async_api import async_playwright

    pages = {"table /match/{id}": "/match/", "replay /replay/{id}": "/replay/"}
    seen: dict[tuple[str, str], list[dict[str, float]]] = {
        (page, name): [] for page in pages for name in matches
    }
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        context = await browser.new_context(viewport={"width": 1280, "height": 900})
        await context.add_init_script(_RECORD_DRAW)
        page = await context.new_page()
        for i in range(loads + 1):  # the first round warms the browser's and server's caches
            for (which, name), drawn in seen.items():
                await page.goto(f"{base}{pages[which]}{matches[name]['id']}")
                await page.wait_for_function("() => window.__drawn !== null", timeout=120_000)
                # What the page reads after its first drawing (the replay's audit and dice,
                # the analysis) is let finish: the next load starts on an idle service.
                await page.wait_for_load_state("networkidle")
                figures = await page.evaluate("({ ...window.__drawn, longest: window.__longest })")
                if i:
                    drawn.append(figures)
                print(
                    f"\rround {i}/{loads}: {which.split()[0]} {name} drawn in "
                    f"{figures['ms']:.0f} ms          ",
                    end="",
                    file=sys.stderr,
                )
        print(file=sys.stderr)
        await browser.close()
    out = []
    for (which, name), drawn in seen.items():
        out.append(
            {
                "page": which,
                "match": name,
                "events": matches[name]["events"],
                "drawn_ms": _summary([d["ms"] for d in drawn]),
                "http_bytes": round(statistics.median(d["http"] for d in drawn)),
                "socket_bytes": round(statistics.median(d["socket"] for d in drawn)),
                "longest_task_ms": round(max(d["longest"] for d in drawn), 1),
            }
        )
    return out


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
    if r.get("lengths"):
        print_lengths(r["lengths"])


def print_lengths(lengths: list[dict[str, Any]]) -> None:
    """The first drawing of each page of each match, and each long match's ratio to the
    short one on the same page."""
    print(
        f"\nnavigation → first drawing (ms), by the match's length; "
        f"target: long ≤ {TARGET_LENGTH_RATIO:g}× short (p50)"
    )
    print(
        f"{'page':<20} {'match':<9} {'events':>6} {'p50':>8} {'p90':>8} {'max':>8} "
        f"{'KB http':>8} {'KB socket':>9} {'longest task':>12}   ratio"
    )
    short = {x["page"]: x["drawn_ms"]["p50"] for x in lengths if x["match"] == "short"}
    for x in lengths:
        d = x["drawn_ms"]
        ratio = ""
        if x["match"] != "short":
            times = d["p50"] / short[x["page"]]
            ok = "met" if times <= TARGET_LENGTH_RATIO else "NOT met"
            ratio = f"{times:.2f}× {ok}"
        print(
            f"{x['page']:<20} {x['match']:<9} {x['events']:>6} {d['p50']:>8} {d['p90']:>8} "
            f"{d['max']:>8} {x['http_bytes'] / 1024:>8.1f} {x['socket_bytes'] / 1024:>9.1f} "
            f"{x['longest_task_ms']:>12}   {ratio}"
        )


BENCH = Bench(
    name="site",
    help="page weight of every page, ms from navigation to a playable table, and to the "
    "first drawing of a long match beside a short one",
    options=_options,
    measure=measure,
    table=print_table,
)
