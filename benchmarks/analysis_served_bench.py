"""`ludo bench analysis-served`: how soon after a match's end its analysis reaches the end
card, on an idle machine and under the load of `ludo bench service`, in one run.

The site runs as `ludo up` runs it: the ranking service (its analysis consumer and worker)
and the match service (its deadline worker playing the CPUs, `LUDO_RANKING_URL` set), each
under uvicorn in a subprocess, on a scratch database of the embedded PostgreSQL (or of
`DATABASE_URL`). N matches (default 3, four seats of our `standard` rules: the learned
network values them) are played at once by CPUs at `--cpu-delay` seconds per action: a
guest hosts each, seats CPUs of the `--seats` levels, starts it and leaves, so a CPU
stands in. The bench follows each match on its socket, as the end card does:

- *end*: the `MatchFinished` event frame arrives;
- *push*: the socket's `{"type": "analysis"}` frame arrives (what tells the card);
- *card*: `GET /api/ratings/analysis/{id}` (through the match service), asked on that
  frame, has answered 200: the card can draw the analysis;
- *served*: the first 200 of the same GET asked every 50 ms from the end (independent of
  the push: a code without it is measured by this one).

Each figure is in seconds after *end*. The same is then measured under load: `ludo bench
service`'s load (`--load-matches` 2-guest matches played as fast as the service answers,
from its generator processes) on a match service of its own, on its own scratch database
of the same PostgreSQL, for as long as the measured matches take. The target is a ratio
to the idle run of the same bench: the card under load within 2x idle (p50) and within a
few seconds. Nothing asserts a time; the figures are printed beside the target
(docs/benchmarks.md).

With `--baseline-ref REF` the site of REF (a `git worktree`, its own scratch database
migrated by it) is measured the same way beside this tree's, idle and under the same load:
where REF sends no `analysis` frame, only *served* is measured for it.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import platform
import statistics
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec

from benchmarks.common import ROOT, BenchError, commit_of, loadavg, scratch_db, worktree
from benchmarks.harness import Bench, Figures, Say
from benchmarks.service_process import Service, serve
from ludo_cli.arguments import positive_float, positive_int, rules_json, seats

__all__ = ["BENCH", "measure", "table"]

RANKING_APP = "services.ranking.app:app_from_env"
TARGET_RATIO = 2.0  # the card under load, p50, within this many times the idle p50
POLL = 0.05  # s between the *served* asks
PUSH_GRACE = 30.0  # s the socket's word is waited for after *served*
FIGURES = ("push", "card", "served")


def _options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--matches", type=positive_int, default=3, help="measured matches per condition"
    )
    parser.add_argument(
        "--seats",
        type=seats,
        default=seats("easy,normal,hard"),
        help="the CPU levels seated beside the guest who leaves (a normal CPU stands in)",
    )
    parser.add_argument(
        "--rules", type=rules_json, default='{"preset": "standard"}', help="ruleset JSON"
    )
    parser.add_argument(
        "--cpu-delay",
        type=float,
        default=0.1,
        help="seconds a CPU waits before each action in the measured matches (the site: 0.5)",
    )
    parser.add_argument(
        "--load-matches", type=positive_int, default=32, help="the load's concurrent matches"
    )
    parser.add_argument(
        "--timeout", type=positive_float, default=900.0, help="seconds a measured match may take"
    )
    parser.add_argument(
        "--baseline-ref",
        default=None,
        help="also serve this git ref's site (its own scratch database) and measure it the "
        "same way, idle and under the same load, beside this tree's",
    )


def measure(args: argparse.Namespace, say: Say) -> Figures:
    from services.shared.database import database_url
    from services.shared.settings import Settings, SettingsError

    try:
        settings = Settings.from_env()
    except SettingsError as exc:
        raise BenchError(str(exc)) from exc
    rules = msgspec.json.decode(args.rules)
    baseline = commit_of(args.baseline_ref) if args.baseline_ref else None
    with contextlib.ExitStack() as stack:
        server = stack.enter_context(database_url(settings))
        roots = {"now": ROOT}
        if baseline is not None:
            roots["baseline"] = stack.enter_context(worktree(baseline))
        sites = {}
        for label, root in roots.items():
            tree = None if root == ROOT else root
            db = stack.enter_context(scratch_db(server, f"ludo_bench_{label}", root=tree))
            sites[label] = stack.enter_context(_site(db, root, args.cpu_delay, say)).base
        runs: dict[str, dict[str, list[Figures]]] = {label: {} for label in sites}
        averages: dict[str, list[float] | None] = {"idle": loadavg()}
        for label, base in sites.items():
            say(f"idle, {label}: {args.matches} matches of {len(args.seats) + 1} seats")
            runs[label]["idle"] = asyncio.run(_matches(base, args, rules))
        say(f"under load: {args.load_matches} matches of `ludo bench service` beside")
        load_db = stack.enter_context(scratch_db(server, "ludo_bench_load"))
        with _load(load_db, args.load_matches, say) as load:
            averages["loaded"] = loadavg()
            for label, base in sites.items():
                say(f"under load, {label}: {args.matches} matches")
                runs[label]["loaded"] = asyncio.run(_matches(base, args, rules))
    return _figures(args, runs, load, averages, baseline)


@contextlib.contextmanager
def _site(db_url: str, root: Path, cpu_delay: float, say: Say) -> Iterator[Service]:
    """The ranking service, then the match service that forwards to it (as `ludo up`),
    from the source tree `root`."""
    env = {"LUDO_CPU_DELAY": str(cpu_delay)}
    with serve(
        db_url, root=root, factory=RANKING_APP, ready="/healthz", log_level="warning", say=say
    ) as rank:
        site = {**env, "LUDO_RANKING_URL": rank.base}
        with serve(db_url, root=root, env=site, log_level="warning", say=say) as match:
            yield match


@contextlib.contextmanager
def _load(db_url: str, matches: int, say: Say) -> Iterator[dict[str, Any]]:
    """`ludo bench service`'s load on a match service of its own."""
    from benchmarks.service_bench import Config, background_load

    config = Config(matches=matches, progress=False, log_level="warning")
    with (
        serve(db_url, log_level="warning", say=say) as (base, _pid),
        background_load(base, config) as figures,
    ):
        say(f"load: {matches} matches on {base}")
        yield figures


async def _matches(base: str, args: argparse.Namespace, rules: dict[str, Any]) -> list[Figures]:
    import httpx

    async with httpx.AsyncClient(base_url=base, timeout=30) as http:
        ids = [await _start(http, args.seats, rules) for _ in range(args.matches)]
        deadline = time.monotonic() + args.timeout
        return list(await asyncio.gather(*(_follow(http, base, m, deadline) for m in ids)))


async def _start(http: Any, levels: tuple[str, ...], rules: dict[str, Any]) -> str:
    """A guest hosts a table of CPUs, starts it and leaves (a CPU stands in)."""
    host = (await http.post("/api/players", json={"name": "bench"})).json()
    auth = {"Authorization": f"Bearer {host['token']}"}
    body = {"seats": len(levels) + 1, "rules": rules}
    party = (await http.post("/api/parties", json=body, headers=auth)).json()
    for level in levels:
        r = await http.post(f"/api/parties/{party['id']}/cpus", json={"level": level}, headers=auth)
        _check(r, "seat a CPU")
    r = await http.post(f"/api/parties/{party['id']}/start", headers=auth)
    _check(r, "start the match")
    match_id: str = r.json()["match_id"]
    _check(await http.post(f"/api/matches/{match_id}/leave", headers=auth), "leave the match")
    return match_id


def _check(r: Any, what: str) -> None:
    if r.status_code >= 300:
        raise BenchError(f"could not {what}: {r.status_code} {r.text[:200]}")


async def _follow(http: Any, base: str, match_id: str, deadline: float) -> Figures:
    """One match, on its socket, from its start to its analysis served (module docstring).
    A service that sends no `analysis` frame (an older code) is waited for `PUSH_GRACE`
    seconds after *served*, then measured without *push* and *card*. At `deadline` (the
    `--timeout`) what has not come is left out and the match counted as timed out."""
    from websockets.asyncio.client import connect

    url = "ws" + base.removeprefix("http") + f"/ws/matches/{match_id}?from=0"
    started = time.monotonic()
    end: float | None = None
    events = 0
    out: Figures = {"match_id": match_id}
    served: asyncio.Task[float] | None = None
    async with connect(url, max_size=None) as ws:
        while "card" not in out:
            wait = deadline - time.monotonic()
            if served is not None and served.done():
                wait = min(wait, served.result() + PUSH_GRACE - time.monotonic())
            try:
                raw = await asyncio.wait_for(ws.recv(), max(0.0, wait))
            except TimeoutError:
                break
            frame = msgspec.json.decode(raw)
            inner = frame["frames"] if frame.get("type") == "batch" else [frame]
            for f in inner:
                if f.get("type") == "event":
                    events = f["version"] + 1
                    if f.get("event_type") == "MatchFinished" and end is None:
                        end = time.monotonic()
                        served = asyncio.create_task(_served(http, match_id))
                elif f.get("type") == "analysis" and end is not None:
                    out["push"] = time.monotonic() - end
                    r = await http.get(f"/api/ratings/analysis/{match_id}")
                    _check(r, "read the analysis on the socket's word")
                    out["card"] = time.monotonic() - end
    out["events"] = events
    if end is None or served is None:
        out["timed_out"] = "the end"
        return out
    out["played_s"] = round(end - started, 1)
    try:
        out["served"] = await asyncio.wait_for(served, max(0.0, deadline - time.monotonic())) - end
    except TimeoutError:
        out["timed_out"] = "the analysis"
    return out


async def _served(http: Any, match_id: str) -> float:
    while True:
        r = await http.get(f"/api/ratings/analysis/{match_id}")
        if r.status_code == 200:
            return time.monotonic()
        await asyncio.sleep(POLL)  # asking again: the figure's resolution


def _summary(runs: list[Figures]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in FIGURES:
        values = sorted(r[name] for r in runs if name in r)
        out[name] = (
            {
                "p50": round(statistics.median(values), 3),
                "max": round(values[-1], 3),
                "all": [round(v, 3) for v in values],
            }
            if values
            else None
        )
    out["events"] = round(statistics.mean(r["events"] for r in runs))
    played = [r["played_s"] for r in runs if "played_s" in r]
    out["played_s"] = round(statistics.mean(played), 1) if played else None
    out["timed_out"] = [f"{r['match_id']}: {r['timed_out']}" for r in runs if "timed_out" in r]
    return out


def _figures(
    args: argparse.Namespace,
    runs: dict[str, dict[str, list[Figures]]],
    load: dict[str, Any],
    averages: dict[str, list[float] | None],
    baseline: str | None,
) -> Figures:
    codes: dict[str, Any] = {}
    for label, conditions in runs.items():
        a, b = _summary(conditions["idle"]), _summary(conditions["loaded"])

        def ratio(name: str, key: str, a: Any = a, b: Any = b) -> float | None:
            if a[name] is None or b[name] is None or not a[name][key]:
                return None
            return round(float(b[name][key]) / float(a[name][key]), 2)

        codes[label] = {
            "idle": a,
            "loaded": b,
            "ratio": {name: ratio(name, "p50") for name in FIGURES},
            "ratio_max": {name: ratio(name, "max") for name in FIGURES},
        }
    seconds = load.get("seconds") or 0
    return {
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "rules": args.rules,
        "seats": f"guest (left: a normal CPU stands in),{','.join(args.seats)}",
        "cpu_delay": args.cpu_delay,
        "matches": args.matches,
        "baseline_ref": baseline,
        "codes": codes,
        "loadavg": averages,
        "load": {
            "matches": args.load_matches,
            "commands_per_s": round(load.get("commands", 0) / seconds, 1) if seconds else None,
            "matches_finished": load.get("matches_finished"),
            "seconds": seconds,
        },
        "target": f"card under load p50 <= {TARGET_RATIO:g}x idle p50",
    }


def table(result: Figures) -> None:
    print(
        f"ludo bench analysis-served — Python {result['python']}, {result['cpus']} CPUs, "
        f"rules {result['rules']}, seats {result['seats']}, CPU delay {result['cpu_delay']} s, "
        f"{result['matches']} match(es) per condition"
    )
    load = result["load"]
    print(
        f"load: {load['matches']} matches of `ludo bench service`, "
        f"{load['commands_per_s']} commands/s for {load['seconds']} s; "
        f"load average idle {result['loadavg']['idle']}, loaded {result['loadavg']['loaded']}"
    )
    for label, code in result["codes"].items():
        name_of = "this tree" if label == "now" else f"baseline {result['baseline_ref'][:12]}"
        print(f"{name_of}: s after the end   idle p50  idle max  load p50  load max   ratio")
        for name in FIGURES:
            cells = [
                f"{run[k]:.3f}" if run else "-"
                for run in (code["idle"][name], code["loaded"][name])
                for k in ("p50", "max")
            ]
            r = code["ratio"][name]
            cells.append(f"{r}x" if r is not None else "-")
            print(f"  {name:<26}" + "".join(f"{c:>10}" for c in cells[:4]) + f"{cells[4]:>8}")
        for condition in ("idle", "loaded"):
            run = code[condition]
            print(f"  {condition}: {run['events']} events a match, played in {run['played_s']} s")
            for late in run["timed_out"]:
                print(f"  {condition}: not within --timeout: {late}")
    print(f"target: {result['target']}")


BENCH = Bench(
    name="analysis-served",
    help="seconds from a match's end to its analysis on the end card, idle and under load",
    options=_options,
    measure=measure,
    table=table,
    failed=lambda result: any(
        code[c]["timed_out"] for code in result["codes"].values() for c in ("idle", "loaded")
    ),
)
