// The dashboard page's script (web/pages/dashboard.html).
import { $, OPERATOR_KEY, AuthError, el, message, keyboardScroll, operatorJson, WORDS, t, tn, translate,
         languageMenu } from "./lib/page_common.js";
import { lookup } from "./lib/words.js";

const SVG = "http://www.w3.org/2000/svg";
const W = 560, H = 260, PAD = { l: 48, r: 12, t: 12, b: 34 };
let selected = null;

// ------------------------------------------------------------------ words
// The page's words are its catalogue section (web/i18n/<lang>.json `dashboard`), put in
// its #words block by the server in the reader's language (the `ludo_lang` cookie the
// match site's pages set too, else the browser's); page_common.js says them (`t`, `tn`)
// and its language menu, in the header, switches them in place.

// What each view shows, kept as the function that draws it from the data it holds:
// a language switch draws every view again in place, without asking the API again.
const drawn = new Map();
function show(view, draw) {
  drawn.set(view, draw);
  draw();
}
// The message box, worded at each drawing (null: none).
function say(words, kind) {
  show("#message", () => message(words ? words() : "", kind));
}
// page_common.js has said every data-t in the new language: the views follow.
document.addEventListener("languagechange", () => {
  for (const draw of drawn.values()) draw();
});
// The language menu ends the header (page_common.js: every language by its own name).
$("header").append(languageMenu());

// A path under /api/ranking, or a whole /api/... path (the report queue).
const api = (path) => operatorJson(path.startsWith("/api/") ? path : "/api/ranking" + path);

// Every view shows only the answer to its latest request. Requests overlap (a click on
// a player while the previous player's history is on its way, a model switch or a
// refresh while the last load runs), and answers arrive in any order: each view numbers
// its requests, and an answer (or error) that is not the view's latest is dropped.
// `data-pending` on the view's element counts its requests still on their way.
const STALE = Symbol("stale");
const latest = new Map();
async function viewJson(view, path) {
  const n = (latest.get(view) || 0) + 1;
  latest.set(view, n);
  const node = $(view);
  node.dataset.pending = String(Number(node.dataset.pending || 0) + 1);
  try {
    const data = await api(path);
    return latest.get(view) === n ? data : STALE;
  } catch (err) {
    if (latest.get(view) !== n) return STALE;
    throw err;
  } finally {
    // Counted down in a later task, so after the caller (whose continuation is a
    // microtask) has rendered or dropped this answer.
    setTimeout(() => { node.dataset.pending = String(Number(node.dataset.pending) - 1); }, 0);
  }
}

// ------------------------------------------------------------------ helpers
function svgEl(tag, attrs, text) {
  const node = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, String(v));
  if (text !== undefined) node.textContent = text;
  return node;
}
function clear(node) { while (node.firstChild) node.removeChild(node.firstChild); }
const fmt = (x, d = 1) => Number(x).toFixed(d);
const signed = (x) => (x > 0 ? "+" : "") + fmt(x);
const when = (iso) => iso ? new Date(iso).toISOString().replace("T", " ").slice(0, 16) : "";
const who = (id, name) => name ? `${name} (${id})` : id;
const seconds = (x, d = 1) => t("seconds", { s: fmt(x, d) });
// Sentences one after another: a space between them, but none after a full-width stop
// (Japanese writes 。 with no space; English's "." and Hindi's "।" take one).
const sentences = (parts) => parts.reduce((text, part) => (text ? text + (/[。！？]$/.test(text) ? "" : " ") + part : part), "");
function emptySvg(svg, text) {
  clear(svg);
  svg.appendChild(svgEl("text", { x: W / 2, y: H / 2, "text-anchor": "middle",
                                  class: "empty-note" }, text));
}
// A table body holding one cell that says why it has no rows.
function emptyRow(body, span, text) {
  const row = el("tr");
  const cell = el("td", { colspan: span, class: "empty" });
  cell.appendChild(el("span", {}, text));
  row.appendChild(cell);
  body.appendChild(row);
}
// "Nice" axis ticks between lo and hi.
function ticks(lo, hi, whole = false, n = 5) {
  if (hi <= lo) hi = lo + 1;
  const raw = (hi - lo) / n, mag = Math.pow(10, Math.floor(Math.log10(raw)));
  let step = [1, 2, 5, 10].map((m) => m * mag).find((s) => raw <= s);
  if (whole) step = Math.max(1, Math.round(step));
  const out = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi + 1e-9; v += step) out.push(+v.toFixed(10));
  return out;
}
function yAxis(svg, lo, hi, y, whole = false) {
  for (const v of ticks(lo, hi, whole)) {
    svg.appendChild(svgEl("line", { x1: PAD.l, x2: W - PAD.r, y1: y(v), y2: y(v), class: "grid" }));
    svg.appendChild(svgEl("text", { x: PAD.l - 6, y: y(v) + 4, "text-anchor": "end" },
                          Number.isInteger(v) ? v : fmt(v)));
  }
  svg.appendChild(svgEl("line", { x1: PAD.l, x2: PAD.l, y1: PAD.t, y2: H - PAD.b, class: "axis" }));
  svg.appendChild(svgEl("line", { x1: PAD.l, x2: W - PAD.r, y1: H - PAD.b, y2: H - PAD.b,
                                  class: "axis" }));
}
// Bars: items [{label, value, title}]; every k-th label is drawn so they do not overlap.
function bars(svg, items, emptyText) {
  clear(svg);
  if (!items.length) return emptySvg(svg, emptyText);
  const max = Math.max(1, ...items.map((d) => d.value));
  const top = Math.max(max, ticks(0, max, true).slice(-1)[0]);
  const y = (v) => H - PAD.b - (v / top) * (H - PAD.t - PAD.b);
  yAxis(svg, 0, top, y, true);
  const slot = (W - PAD.l - PAD.r) / items.length, gap = Math.min(4, slot * 0.15);
  const every = Math.max(1, Math.ceil(items.length / 10));
  items.forEach((d, i) => {
    const x = PAD.l + i * slot + gap / 2;
    const rect = svgEl("rect", { x, y: y(d.value), width: Math.max(1, slot - gap),
                                 height: H - PAD.b - y(d.value), class: "bar" });
    rect.appendChild(svgEl("title", {}, d.title));
    svg.appendChild(rect);
    if (i % every === 0) {
      svg.appendChild(svgEl("text", { x: x + (slot - gap) / 2, y: H - PAD.b + 14,
                                      "text-anchor": "middle" }, d.label));
    }
  });
}

// ------------------------------------------------------------------ panels
function model() { return $("#model").value; }

async function loadLeaderboard() {
  const board = await viewJson("#leaderboard",
                               `/leaderboard?model=${encodeURIComponent(model())}&limit=100`);
  if (board === STALE) return STALE;
  show("#leaderboard", () => drawLeaderboard(board));
  return board;
}

function drawLeaderboard(board) {
  const body = $("#leaderboard tbody");
  clear(body);
  if (!board.entries.length) emptyRow(body, 6, t("board.none"));
  for (const e of board.entries) {
    // A row is a button: focusable, Enter or Space opens the history like a click.
    const row = el("tr", { "data-player": e.player_id, tabindex: "0", role: "button" });
    if (e.player_id === selected) row.classList.add("selected");
    row.appendChild(el("td", { class: "num" }, e.rank));
    const name = el("td", {}, who(e.player_id, e.name));
    if (e.provisional) name.appendChild(el("span", { class: "tag" }, t("board.provisional")));
    row.appendChild(name);
    // The figure players see on the site (rounded, on mu), then the operator's (the order).
    row.appendChild(el("td", { class: "num" }, e.player_rating));
    row.appendChild(el("td", { class: "num" }, fmt(e.rating)));
    row.appendChild(el("td", { class: "num" }, e.matches));
    row.appendChild(el("td", {}, when(e.last_match_at)));
    row.addEventListener("click", () => loadHistory(e.player_id).catch(failed));
    row.addEventListener("keydown", (ev) => {
      if (ev.key === "Enter" || ev.key === " ") {
        ev.preventDefault();
        loadHistory(e.player_id).catch(failed);
      }
    });
    body.appendChild(row);
  }
}

async function loadDistribution() {
  const bucket = 50;
  const dist = await viewJson("#distribution",
                              `/distribution?model=${encodeURIComponent(model())}&bucket=${bucket}`);
  if (dist === STALE) return;
  // Fill the empty buckets between the lowest and the highest.
  const counts = [];
  if (dist.buckets.length) {
    const byLow = new Map(dist.buckets.map((b) => [Math.round(b.low / dist.bucket), b.players]));
    const first = Math.round(dist.buckets[0].low / dist.bucket);
    const last = Math.round(dist.buckets[dist.buckets.length - 1].low / dist.bucket);
    for (let k = first; k <= last; k++) counts.push([k * dist.bucket, byLow.get(k) || 0]);
  }
  show("#distribution", () => bars($("#distribution"), counts.map(([low, n]) => ({
    label: fmt(low, 0), value: n,
    title: tn("dist.bar", n, { low: fmt(low, 0), high: fmt(low + dist.bucket, 0) }) })),
    t("dist.none")));
}

async function loadPerDay() {
  const days = 30;
  const rows = await viewJson("#per-day", `/matches-per-day?days=${days}`);
  if (rows === STALE) return;
  const byDay = new Map(rows.map((r) => [r.day, r.matches]));
  const today = new Date();
  const counts = [];
  for (let i = days - 1; i >= 0; i--) {
    const d = new Date(Date.UTC(today.getUTCFullYear(), today.getUTCMonth(),
                                today.getUTCDate() - i));
    const key = d.toISOString().slice(0, 10);
    counts.push([key, byDay.get(key) || 0]);
  }
  show("#per-day", () => bars($("#per-day"), rows.length ? counts.map(([day, n]) => ({
    label: day.slice(5), value: n, title: tn("per_day.bar", n, { day }) })) : [],
    t("per_day.none")));
}

async function loadSwings() {
  const rows = await viewJson("#swings", `/swings?model=${encodeURIComponent(model())}&limit=20`);
  if (rows === STALE) return;
  show("#swings", () => {
    const body = $("#swings tbody");
    clear(body);
    if (!rows.length) emptyRow(body, 6, t("swings.none"));
    for (const s of rows) {
      const row = el("tr");
      row.appendChild(el("td", {}, who(s.player_id, s.name)));
      row.appendChild(el("td", { class: "num" }, fmt(s.rating_before)));
      row.appendChild(el("td", { class: "num" }, fmt(s.rating_after)));
      row.appendChild(el("td", { class: "num " + (s.delta >= 0 ? "pos" : "neg") }, signed(s.delta)));
      row.appendChild(el("td", { title: s.match_id }, s.match_id.slice(0, 8)));
      row.appendChild(el("td", {}, when(s.finished_at)));
      body.appendChild(row);
    }
  });
}

async function loadLag() {
  const lag = await viewJson("#lag", "/lag");
  if (lag === STALE) return;
  show("#lag", () => {
    const dl = $("#lag");
    clear(dl);
    const items = [
      ["events_behind", lag.events_behind],
      ["seconds_behind", fmt(lag.seconds_behind)],
      ["checkpoint_position", lag.checkpoint_position],
      ["head_position", lag.head_position],
      ["checkpoint_tx", lag.checkpoint_tx],
      ["consuming_here", t(lag.consuming_here ? "lag.yes" : "lag.no")],
    ];
    for (const [k, v] of items) { dl.appendChild(el("dt", {}, t(`lag.${k}`))); dl.appendChild(el("dd", {}, v)); }
  });
}

// ------------------------------------------------------------------ the live view
const ago = (s) => s < 1 ? t("inst.just_now") : t("inst.ago", { s: fmt(s, 0) });
const bytes = (b) => b == null ? "" : b < 1024 ? `${b} B` : b < 1048576 ? `${fmt(b / 1024)} KiB`
                                                : `${fmt(b / 1048576)} MiB`;
function tile(key, value, warn = false, word = false) {
  const node = el("div", { class: warn ? "tile warn" : "tile" });
  node.appendChild(el("div", { class: "k" }, t(`live.${key}`)));
  node.appendChild(el("div", { class: word ? "v word" : "v" }, value));
  return node;
}
function rows(body, list, cells, emptyText, span) {
  clear(body);
  if (!list.length) emptyRow(body, span, emptyText);
  for (const item of list) {
    const row = el("tr");
    for (const [text, num] of cells(item)) row.appendChild(el("td", num ? { class: "num" } : {}, text));
    body.appendChild(row);
  }
}
function renderDatabase(db) {
  const words = $("#live-database");
  const body = $("#live-standbys tbody");
  if (db.unavailable) {
    words.textContent = t("db.unavailable", { why: db.unavailable });
    return rows(body, [], () => [], t("db.no_figures"), 4);
  }
  const role = db.in_recovery ? "db.standby" : "db.primary";
  const parts = [db.timeline != null ? t(`${role}_timeline`, { timeline: db.timeline }) : t(role)];
  const m = db.manager;
  if (m && m.unavailable) parts.push(t("db.patroni_unavailable", { why: m.unavailable }));
  else if (m && m.last_failover) {
    const f = m.last_failover;
    // The timeline that ended → the one the new leader is on; the ended one alone
    // while no leader reports a later one.
    parts.push(t(f.new_timeline != null ? "db.failover_timelines" : "db.failover", {
      when: f.at ? t("db.failover_at", { at: when(f.at) }) : t("db.time_unknown"),
      to: f.new_leader ? t("db.failover_to", { leader: f.new_leader }) : "",
      timeline: f.timeline, new_timeline: f.new_timeline,
      reason: f.reason ? t("db.failover_reason", { reason: f.reason }) : "" }));
  } else if (m) parts.push(t("db.no_failover"));
  else parts.push(t("db.no_manager"));
  words.textContent = sentences(parts);
  if (m && m.members) {
    return rows(body, m.members, (n) => [[n.name], [n.role], [n.state],
      [n.lag_bytes == null ? "" : bytes(n.lag_bytes), true]], t("db.no_member"), 4);
  }
  rows(body, db.standbys, (n) => [[n.name || t("db.unnamed")], [t("db.standby_sync", { sync: n.sync_state })],
    [n.state], [n.replay_lag_seconds == null ? bytes(n.lag_bytes)
                : seconds(n.replay_lag_seconds, 2), true]], t("db.no_standby"), 4);
}
async function loadLive() {
  const live = await viewJson("#live", "/live");
  if (live === STALE) return;
  show("#live", () => drawLive(live));
}
function drawLive(live) {
  const state = $("#live-state");
  const tiles = $("#live-tiles");
  clear(tiles);
  const play = live.play;
  if (play.unavailable) {
    tiles.appendChild(tile("matches_now", "?", true));
  } else {
    tiles.appendChild(tile("matches_now", play.matches_now));
    tiles.appendChild(tile("matches_cpu_only", play.matches_cpu_only));
    tiles.appendChild(tile("players_at_tables", play.players_at_tables));
    tiles.appendChild(tile("players_in_lobby", play.players_in_lobby));
    tiles.appendChild(tile("arenas_running", play.arenas.length));
  }
  const waits = live.instances.reduce((n, i) => n + ((i.figures.pool || {}).waits || 0), 0);
  const matchInstances = live.instances.filter((i) => i.service === "match").length;
  tiles.appendChild(tile("instances",
    `${matchInstances}, ${live.instances.length - matchInstances}`, matchInstances === 0));
  tiles.appendChild(tile("pool_waits", waits));
  tiles.appendChild(tile("ranking_lag", seconds(live.lag.ranking.seconds_behind),
                         live.lag.ranking.seconds_behind > 60));
  tiles.appendChild(tile("analysis_lag", seconds(live.lag.analysis.seconds_behind),
                         live.lag.analysis.seconds_behind > 600));
  const standbys = live.database.standbys || [];
  const lags = standbys.map((n) => n.replay_lag_seconds).filter((x) => x != null);
  tiles.appendChild(tile("replica_lag", standbys.length
    ? (lags.length ? seconds(Math.max(...lags), 2) : bytes(Math.max(...standbys.map((n) => n.lag_bytes || 0))))
    : t("live.no_standby"), false, !standbys.length));
  const time = live.at.slice(11, 19);
  state.textContent = play.unavailable ? t("live.updated_unknown", { time, why: play.unavailable })
                                       : t("live.updated", { time });
  renderDatabase(live.database);
  rows($("#live-instances tbody"), live.instances, (i) => {
    const pool = i.figures.pool || {};
    return [[i.name], [i.service], [when(i.started_at)], [ago(i.seen_seconds_ago), true],
            [t("inst.pool_of", { used: pool.in_use ?? "?", size: pool.size ?? "?" }), true],
            [pool.waits ?? 0, true], [i.figures.sockets ?? "", true]];
  }, t("inst.none"), 7);
  const arenas = $("#live-arenas");
  clear(arenas);
  const running = play.unavailable ? [] : play.arenas;
  if (!running.length) arenas.appendChild(el("li", { class: "muted" }, t("arenas.none")));
  for (const a of running) {
    arenas.appendChild(el("li", {}, t("arenas.arena", {
      name: a.name, seats: a.seats, private: a.private ? t("arenas.private") : "",
      players: a.players, ends: when(a.ends_at).slice(11) })));
  }
  const hours = live.abandonment;
  const last = hours[hours.length - 1];
  const [seats, left] = hours.reduce((sum, h) => [sum[0] + h.seats, sum[1] + h.left], [0, 0]);
  const rate = (share) => t("abandon.rate", { pct: pct(share) });
  $("#live-abandon-words").textContent = t("abandon.words", {
    left: last.left, seats: tn("abandon.seats", last.seats), rate: last.seats ? rate(last.rate) : "",
    day_left: left, day_seats: tn("abandon.seats", seats), day_rate: seats ? rate(left / seats) : "" });
  bars($("#live-abandonment"), seats === 0 ? [] : hours.map((h) => ({
    label: h.hour.slice(11, 13), value: Math.round(1000 * h.rate) / 10,
    title: tn("abandon.bar", h.seats, { hour: h.hour.slice(11, 16), left: h.left, pct: pct(h.rate) }) })),
    t("abandon.none"));
}

async function loadHistory(playerId) {
  selected = playerId;
  for (const row of document.querySelectorAll("#leaderboard tbody tr")) {
    row.classList.toggle("selected", row.dataset.player === playerId);
  }
  const chosen = model();
  const data = await viewJson("#history",
    `/players/${encodeURIComponent(playerId)}?model=${encodeURIComponent(chosen)}`);
  if (data === STALE) return;
  show("#history", () => drawHistory(data, chosen));
}
function noHistory() {
  $("#history-title").textContent = t("history.title");
  emptySvg($("#history"), t("history.pick"));
}
function drawHistory(data, chosen) {
  $("#history-title").textContent = t("history.of", { who: who(data.player_id, data.name), model: chosen });
  const svg = $("#history");
  clear(svg);
  const h = data.history;
  if (!h.length) return emptySvg(svg, t("history.none"));
  // Point 0 is the rating before the first match; point i the rating after match i.
  const pts = [{ v: h[0].rating_before, t: t("history.start") }].concat(
    h.map((c, i) => ({ v: c.rating_after,
                       t: t("history.point", { i: i + 1, when: when(c.finished_at), place: c.place,
                                               players: c.players, delta: signed(c.delta),
                                               after: fmt(c.rating_after) }) })));
  let lo = Math.min(...pts.map((p) => p.v)), hi = Math.max(...pts.map((p) => p.v));
  const margin = Math.max(5, (hi - lo) * 0.1);
  lo -= margin; hi += margin;
  const x = (i) => PAD.l + (pts.length === 1 ? 0 : (i / (pts.length - 1)) * (W - PAD.l - PAD.r));
  const y = (v) => H - PAD.b - ((v - lo) / (hi - lo)) * (H - PAD.t - PAD.b);
  yAxis(svg, lo, hi, y);
  const d = pts.map((p, i) => `${i ? "L" : "M"}${x(i).toFixed(1)},${y(p.v).toFixed(1)}`).join(" ");
  svg.appendChild(svgEl("path", { d, class: "line" }));
  pts.forEach((p, i) => {
    const dot = svgEl("circle", { cx: x(i), cy: y(p.v), r: pts.length > 60 ? 1.5 : 3, class: "dot" });
    dot.appendChild(svgEl("title", {}, p.t));
    svg.appendChild(dot);
  });
  svg.appendChild(svgEl("text", { x: PAD.l, y: H - PAD.b + 14 }, t("history.start")));
  svg.appendChild(svgEl("text", { x: W - PAD.r, y: H - PAD.b + 14, "text-anchor": "end" },
                        tn("history.count", h.length)));
}

// ------------------------------------------------------------------ analyses
// The site's dice (`getSiteDice`): today's and the window's share of each face against
// a fair die's 1/6, and a row per day with its chi-square and p-value. The largest luck
// gaps (`getLuckGaps`), each linked to its replay on the match site. A failure other
// than the token is said in the panel itself; the rest of the dashboard stays.
const DICE_DAYS = 14, GAP_DAYS = 7;
const pct = (x, d = 1) => `${(x * 100).toFixed(d)}%`;
const pValue = (p) => (p === null ? "–" : p < 0.001 ? "< 0.001" : p.toFixed(3));
const pIs = (p) => (p === null ? t("dice.no_test") : p < 0.001 ? "p < 0.001" : `p = ${p.toFixed(3)}`);
const placeText = (n) => n === null ? t("gaps.no_place") : tn("gaps.place", n, {}, "ordinal");

// A histogram of the six faces' shares with a fair die's 1/6 (its own size: 360×200,
// so that its words stay legible on a phone, where it is drawn at about 300 px).
function diceChart(svg, faces, emptyText) {
  clear(svg);
  const DW = 360, DH = 200, L = 40, R = 34, T = 16, B = 26;
  const rolls = faces.reduce((a, b) => a + b, 0);
  if (!rolls) {
    svg.appendChild(svgEl("text", { x: DW / 2, y: DH / 2, "text-anchor": "middle" }, emptyText));
    svg.setAttribute("aria-label", emptyText);
    return;
  }
  const shares = faces.map((f) => f / rolls);
  const top = Math.min(1, Math.ceil(Math.max(1 / 6, ...shares) * 1.15 * 20) / 20);
  const y = (v) => DH - B - (v / top) * (DH - T - B);
  for (const v of ticks(0, top, false, 3)) {
    svg.appendChild(svgEl("line", { x1: L, x2: DW - R, y1: y(v), y2: y(v), class: "grid" }));
    svg.appendChild(svgEl("text", { x: L - 5, y: y(v) + 4, "text-anchor": "end" }, pct(v, 0)));
  }
  const slot = (DW - L - R) / 6;
  faces.forEach((n, i) => {
    const cx = L + (i + 0.5) * slot;
    const rect = svgEl("rect", { x: cx - slot * 0.3, y: y(shares[i]), width: slot * 0.6,
                                 height: DH - B - y(shares[i]), class: "bar" });
    rect.appendChild(svgEl("title", {}, tn("dice.bar", n, { face: i + 1, pct: pct(shares[i]) })));
    svg.appendChild(rect);
    svg.appendChild(svgEl("text", { x: cx, y: y(shares[i]) - 4, "text-anchor": "middle", class: "count" },
                          String(n)));
    svg.appendChild(svgEl("text", { x: cx, y: DH - B + 17, "text-anchor": "middle", class: "count" },
                          String(i + 1)));
  });
  svg.appendChild(svgEl("line", { x1: L, x2: DW - R, y1: y(1 / 6), y2: y(1 / 6), class: "fair" }));
  svg.appendChild(svgEl("text", { x: DW - R + 4, y: y(1 / 6) + 4, class: "fair-label" }, "1/6"));
  svg.setAttribute("aria-label", tn("dice.chart", rolls, {
    faces: faces.map((n, i) => `${i + 1}: ${n} (${pct(shares[i])})`).join(", ") }));
}

function diceRow(cells, cls) {
  const row = el("tr", cls ? { class: cls } : {});
  cells.forEach(([text, num]) => row.appendChild(el("td", num ? { class: "num" } : {}, text)));
  return row;
}

function diceCells(label, d) {
  return [[label], [String(d.rolls), true], ...d.faces.map((n) => [String(n), true]),
          [d.chi_square === null ? "–" : fmt(d.chi_square, 2), true], [pValue(d.p_value), true]];
}

// Before the first answer: the panel says it is on its way.
function diceLoading() {
  $("#dice-state").textContent = t("dice.loading");
  clear($("#dice-days tbody"));
  emptyRow($("#dice-days tbody"), 10, t("loading"));
}

async function loadDice() {
  let data;
  try {
    data = await viewJson("#dice-days", `/dice?days=${DICE_DAYS}`);
  } catch (err) {
    if (err instanceof AuthError) throw err;
    show("#dice-days", () => {
      $("#dice-state").textContent = t("dice.unavailable", { why: err.message });
      $("#dice-charts").hidden = true;
      clear($("#dice-days tbody"));
      clear($("#dice-days tfoot"));
    });
    return;
  }
  if (data === STALE) return;
  show("#dice-days", () => drawDice(data));
}

function drawDice(data) {
  const body = $("#dice-days tbody"), foot = $("#dice-days tfoot"), state = $("#dice-state");
  clear(body);
  clear(foot);
  const any = data.total.rolls > 0;
  const none = tn("dice.none", DICE_DAYS);
  state.textContent = any ? tn("dice.summary", data.total.rolls, { since: data.since, until: data.until })
                          : none;
  $("#dice-charts").hidden = !any;
  const today = data.per_day.find((d) => d.day === data.until);
  $("#dice-today-title").textContent = today ? t("dice.today_p", { day: data.until, p: pIs(today.p_value) })
                                             : t("dice.today", { day: data.until });
  $("#dice-window-title").textContent = tn("dice.window", data.days, { p: pIs(data.total.p_value) });
  diceChart($("#dice-today"), today ? today.faces : [0, 0, 0, 0, 0, 0], t("dice.none_today"));
  diceChart($("#dice-window"), data.total.faces, none);
  if (!any) return emptyRow(body, 10, none);
  for (const d of [...data.per_day].reverse()) {  // newest first
    const row = diceRow(diceCells(d.day === data.until ? t("dice.today_row", { day: d.day }) : d.day, d),
                        d.day === data.until ? "today" : "");
    row.dataset.day = d.day;
    if (d.p_value !== null && d.p_value < 0.01) row.lastChild.classList.add("neg");
    body.appendChild(row);
  }
  foot.appendChild(diceRow(diceCells(tn("dice.all_days", data.days), data.total)));
}

async function loadLuckGaps() {
  let rows;
  try {
    rows = await viewJson("#luck-gaps", `/luck-gaps?days=${GAP_DAYS}&limit=20`);
  } catch (err) {
    if (err instanceof AuthError) throw err;
    show("#luck-gaps", () => {
      clear($("#luck-gaps tbody"));
      emptyRow($("#luck-gaps tbody"), 4, t("gaps.unavailable", { why: err.message }));
    });
    return;
  }
  if (rows === STALE) return;
  show("#luck-gaps", () => drawLuckGaps(rows));
}

function drawLuckGaps(rows) {
  const body = $("#luck-gaps tbody");
  clear(body);
  if (!rows.length) emptyRow(body, 4, tn("gaps.none", GAP_DAYS));
  const site = $("#match-site").value.trim().replace(/\/$/, "");
  for (const g of rows) {
    const row = el("tr", { "data-match": g.match_id });
    // On a phone the cell is a block of its own: its label comes before it (CSS).
    row.appendChild(el("td", { class: "num gap", "data-label": t("gaps.gap") }, pct(g.luck_gap)));
    const seats = el("td", { class: "seats" });
    for (const s of g.seats) {
      const line = el("div", { class: "seat" });
      const luck = el("span", { class: "luck " + (s.luck >= 0 ? "pos" : "neg") },
                      (s.luck > 0 ? "+" : s.luck < 0 ? "−" : "") + pct(Math.abs(s.luck)));
      const name = el("span", {}, s.player_id ? who(s.player_id, s.name) : s.name);
      if (!s.player_id) name.appendChild(el("span", { class: "tag" }, t("gaps.cpu")));
      line.append(luck, name, el("span", { class: "muted" }, placeText(s.place)));
      seats.appendChild(line);
    }
    row.appendChild(seats);
    row.appendChild(el("td", {}, when(g.ended_at)));
    const cell = el("td", { class: "replay" });
    cell.appendChild(el("a", { href: site + g.replay, target: "_blank", rel: "noopener",
                               class: "target", title: g.match_id },
                        t("gaps.replay_link", { id: g.match_id.slice(0, 8) })));
    row.appendChild(cell);
    body.appendChild(row);
  }
}

// ------------------------------------------------------------------ reports
// The queue (`GET /api/operator/reports`): open reports first, each with dismiss, warn
// and suspend (hours); decided ones below with their decision. A decision is
// `POST /api/operator/reports/{id}/decision`; the queue is read again after it.
const SITE_KEY = "ludo.matchSite";
function matchSite() {
  const saved = localStorage.getItem(SITE_KEY);
  if (saved) return saved;
  // `ludo up` serves the ranking service on the match site's port + 1.
  const port = Number(location.port || (location.protocol === "https:" ? 443 : 80)) - 1;
  return `${location.protocol}//${location.hostname}:${port}`;
}
$("#match-site").value = matchSite();
$("#match-site").addEventListener("change", () => {
  localStorage.setItem(SITE_KEY, $("#match-site").value.trim());
  loadReports().catch(failed);
  loadLuckGaps().catch(failed);
});

async function decide(reportId, decision, hours) {
  const token = sessionStorage.getItem(OPERATOR_KEY) || "";
  const body = { decision };
  if (decision === "suspend") body.hours = hours;
  const res = await fetch(`/api/operator/reports/${encodeURIComponent(reportId)}/decision`, {
    method: "POST",
    headers: { Authorization: "Bearer " + token, "Content-Type": "application/json",
               Accept: "application/json" },
    body: JSON.stringify(body),
  });
  if (res.status === 401) throw new AuthError();
  if (!res.ok) {
    let detail = "";
    try { detail = (await res.json()).detail || ""; } catch (_) { /* not JSON */ }
    // The API's detail as it comes (English); the frame around it in the page's language.
    const why = detail || "HTTP " + res.status;
    say(() => t("reports.refused", { why }), "error");
    return;
  }
  const done = await res.json();
  say(() => done.decision === "suspend" ? t("reports.suspended_until", { until: when(done.until) })
    : t(done.decision === "warn" ? "reports.warned_done" : "reports.dismissed_done"), "info");
  await loadReports();
}

async function loadReports() {
  const data = await viewJson("#reports", "/api/operator/reports");
  if (data === STALE) return;
  show("#reports", () => drawReports(data));
}

// A player of a report: the name they sat under in its match, a link to their page on
// the match site, which carries their id (shown on hover, read out, and in the link's
// address); their id alone when the match names no one.
function playerCell(key, id, name, site) {
  const td = el("td", { class: "who", "data-label": t(key) });
  td.appendChild(el("a", { href: `${site}/players/${encodeURIComponent(id)}`, target: "_blank",
                           rel: "noopener", class: "target", title: id,
                           "aria-label": t("reports.player", { name: name ?? id, id }) },
                    name ?? id));
  return td;
}

function drawReports(data) {
  $("#reports-open").textContent = t("reports.open", { n: data.open });
  const body = $("#reports tbody");
  // The hours typed into an open report stay across a redraw (a language switch).
  const typed = new Map(Array.from(body.querySelectorAll("tr[data-report] input"),
                                   (input) => [input.closest("tr").dataset.report, input.value]));
  clear(body);
  if (!data.reports.length) emptyRow(body, 6, t("reports.none"));
  const site = $("#match-site").value.trim().replace(/\/$/, "");
  for (const r of data.reports) {
    const row = el("tr", { "data-report": r.report_id });
    if (r.decision) row.className = "decided";
    // Each cell says what it is on a phone, where the table's head is not shown (CSS).
    const cell = (key, text) => el("td", { "data-label": t(key) }, text);
    row.appendChild(cell("reports.filed", when(r.filed_at)));
    row.appendChild(playerCell("reports.reported", r.reported_id, r.reported_name, site));
    row.appendChild(playerCell("reports.by", r.reporter_id, r.reporter_name, site));
    const reason = lookup(WORDS, `reports.reasons.${r.reason}`);
    row.appendChild(cell("reports.reason", typeof reason === "string" ? reason : r.reason));
    const match = cell("reports.match");
    const link = el("a", { href: site + r.dispute_report, target: "_blank", rel: "noopener",
                           class: "target", title: r.match_id },
                    t("reports.dispute_report", { id: r.match_id.slice(0, 8) }));
    match.appendChild(link);
    row.appendChild(match);
    const decision = cell("reports.decision");
    if (r.decision) {
      decision.append(r.decision === "suspend"
        ? t("reports.suspended", { hours: r.hours, until: when(r.until) })
        : t(r.decision === "warn" ? "reports.warned" : "reports.dismissed"));
    } else {
      const actions = el("div", { class: "actions" });
      const dismiss = el("button", { type: "button", class: "secondary", "data-decision": "dismiss" },
                         t("reports.dismiss"));
      const warn = el("button", { type: "button", "data-decision": "warn" }, t("reports.warn"));
      const hours = el("input", { type: "number", min: "1", max: "8760",
                                  value: typed.get(r.report_id) ?? "24", "aria-label": t("reports.hours") });
      const suspend = el("button", { type: "button", class: "danger", "data-decision": "suspend" },
                         t("reports.suspend"));
      dismiss.addEventListener("click", () => decide(r.report_id, "dismiss").catch(failed));
      warn.addEventListener("click", () => decide(r.report_id, "warn").catch(failed));
      suspend.addEventListener("click", () =>
        decide(r.report_id, "suspend", Number(hours.value)).catch(failed));
      actions.append(dismiss, warn, hours, el("span", { class: "muted" }, t("reports.h")), suspend);
      decision.appendChild(actions);
    }
    row.appendChild(decision);
    body.appendChild(row);
  }
}

// ------------------------------------------------------------------ flow
function failed(err) {
  if (err instanceof AuthError) {
    sessionStorage.removeItem(OPERATOR_KEY);
    showLogin();
    say(() => t("msg.wrong_token"), "error");
  } else {
    say(() => t("msg.load_failed", { why: err.message }), "error");
  }
}

function showLogin() {
  $("#login").hidden = false;
  $("#controls").hidden = true;
  $("#dashboard").hidden = true;
  $("#token").value = "";
  $("#token").focus();
}

let loads = 0;  // a newer loadAll (model switch, refresh) supersedes an older one
async function loadAll() {
  const load = ++loads;
  say(null);
  const board = await loadLeaderboard();   // first: a wrong token stops here
  if (board === STALE || load !== loads) return;
  $("#login").hidden = true;
  $("#controls").hidden = false;
  $("#dashboard").hidden = false;
  await Promise.all([loadLive(), loadReports(), loadDistribution(), loadPerDay(), loadSwings(),
                     loadLag(), loadDice(), loadLuckGaps()]);
  if (load !== loads) return;
  const keep = board.entries.some((e) => e.player_id === selected);
  if (!keep) selected = board.entries.length ? board.entries[0].player_id : null;
  if (selected) await loadHistory(selected);
  else show("#history", noHistory);
}

$("#login").addEventListener("submit", (event) => {
  event.preventDefault();
  const token = $("#token").value.trim();
  if (!token) return say(() => t("msg.enter_token"), "error");
  sessionStorage.setItem(OPERATOR_KEY, token);
  loadAll().catch(failed);
});
$("#logout").addEventListener("click", () => {
  sessionStorage.removeItem(OPERATOR_KEY);
  showLogin();
  say(() => t("msg.signed_out"), "info");
});
$("#refresh").addEventListener("click", () => loadAll().catch(failed));
$("#model").addEventListener("change", () => loadAll().catch(failed));
// Live: every 5 s while the page is shown (a hidden tab asks nothing); the lag with it.
setInterval(() => {
  if (document.hidden || !sessionStorage.getItem(OPERATOR_KEY) || $("#dashboard").hidden) return;
  Promise.all([loadLive(), loadLag()]).catch(failed);
}, 5000);

// The words of the page before any answer: the static ones, and the views' first states.
drawn.set("#live", () => { $("#live-state").textContent = t("live.loading"); });
drawn.set("#history", () => { $("#history-title").textContent = t("history.title"); });
drawn.set("#dice-days", diceLoading);
drawn.set("#luck-gaps", () => {
  clear($("#luck-gaps tbody"));
  emptyRow($("#luck-gaps tbody"), 4, t("loading"));
});
translate();
for (const draw of drawn.values()) draw();
keyboardScroll();
if (sessionStorage.getItem(OPERATOR_KEY)) loadAll().catch(failed);
else showLogin();
