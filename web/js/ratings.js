// The ratings page's script (web/pages/ratings.html).
import { $, el, message, keyboardScroll } from "./lib/page_common.js";
import { t, passage, locale, guest, ApiError, errorText, api, siteHeader } from "./lib/site.js";
import { signedPoints, pointsText } from "./lib/analysis_words.js";

// The player's analysis section (/api/ratings/players/{id}/analysis, docs/analysis.md):
// its words are the catalogue's `ratings` section (web/i18n/<lang>.json).

const SVG = "http://www.w3.org/2000/svg";
const path = location.pathname.split("/").filter(Boolean);
const playerId = path[0] === "players" ? decodeURIComponent(path[1] || "") : null;
let data = null;

const signed = (n) => (n > 0 ? `+${n}` : String(n));
const when = (iso) => {
  const d = new Date(iso);
  return isNaN(d) ? iso : d.toLocaleString(locale(), { dateStyle: "medium", timeStyle: "short" });
};

function drawLeaderboard() {
  const body = $("#board-table tbody");
  body.textContent = "";
  const me = guest();
  $("#empty").hidden = data.entries.length > 0;
  for (const e of data.entries) {
    const tr = el("tr", { class: me && me.id === e.player_id ? "me" : "", "data-player": e.player_id });
    tr.appendChild(el("td", {}, String(e.rank)));
    const name = el("td", { class: "name" });
    const link = el("a", { href: `/players/${e.player_id}` });
    link.appendChild(el("span", {}, e.name || "?"));
    if (e.provisional) link.appendChild(el("span", { class: "tag" }, t("provisional")));
    name.appendChild(link);
    tr.appendChild(name);
    tr.appendChild(el("td", { class: "num rating" }, String(Math.round(e.rating))));
    tr.appendChild(el("td", { class: "num matches" }, String(e.matches)));
    body.appendChild(tr);
  }
}

function drawPlayer() {
  $("#player-name").textContent = data.name || "?";
  $("#player-rating").textContent = String(Math.round(data.rating));
  const tags = $("#player-tags");
  tags.textContent = "";
  tags.appendChild(el("span", { class: "tag" }, `${t("matches")}: ${data.matches}`));
  if (data.provisional) tags.appendChild(el("span", { class: "tag" }, t("provisional")));
  if (data.completion) {
    tags.appendChild(el("span", { class: "tag completion", id: "player-completion", title: t("completion_help") },
                        t("completion", { n: Math.round(data.completion.rate * 100) })));
  }
  const body = $("#history tbody");
  body.textContent = "";
  // The history comes newest first (getPublicPlayerRating), and so it is listed.
  for (const h of data.history) {
    const tr = el("tr", { "data-match": h.match_id });
    tr.appendChild(el("td", { class: "when" }, when(h.at)));
    // "Place 2 of 2 (left)": a place is always one of the match's (1 to its seats).
    tr.appendChild(el("td", { class: "place" }, t("place_of", { n: h.place, of: h.players }) +
                      (h.left_match ? t("left_mark") : "")));
    tr.appendChild(el("td", { class: "num", "data-label": t("rating") }, String(Math.round(h.rating_after))));
    const delta = Math.round(h.rating_after) - Math.round(h.rating_before);
    tr.appendChild(el("td", { class: `num ${delta > 0 ? "up" : delta < 0 ? "down" : ""}`, "data-label": t("change") },
                      signed(delta)));
    const link = el("td", { class: "replay" });
    link.appendChild(el("a", { href: `/replay/${h.match_id}` }, t("replay")));
    tr.appendChild(link);
    body.appendChild(tr);
  }
  drawChart();
}

// The rating over time, oldest to newest: the rating before the oldest match listed,
// then the rating after each match (the history comes newest first). Drawn at the
// SVG's own size in CSS pixels (`chartSize`), so the labels keep the page's small text.
function chartPoints() {
  const oldestFirst = [...data.history].reverse();
  if (!oldestFirst.length) return [{ rating: data.rating, at: null }];
  return [{ rating: oldestFirst[0].rating_before, at: null },
          ...oldestFirst.map((h) => ({ rating: h.rating_after, at: h.at }))];
}

let chartSize = null;  // [width, height] the chart was last drawn at
function drawChart() {
  const chart = $("#chart");
  const W = Math.max(200, Math.round(chart.clientWidth)), H = Math.round(chart.clientHeight) || 180;
  chartSize = [W, H];
  chart.setAttribute("viewBox", `0 0 ${W} ${H}`);
  chart.textContent = "";
  const points = chartPoints();
  const ratings = points.map((p) => Math.round(p.rating));
  const top = Math.max(...ratings), bottom = Math.min(...ratings);
  const lo = bottom - 10, hi = top + 10;
  // Room for the labels: the widest rating on the left, a line of dates below.
  const L = 48, R = 12, T = 12, B = 26;
  const x = (i) => L + (points.length > 1 ? (i / (points.length - 1)) * (W - L - R) : (W - L - R) / 2);
  const y = (r) => T + (1 - (r - lo) / (hi - lo)) * (H - T - B);
  const add = (tag, attrs, text) => {
    const node = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
    if (text !== undefined) node.textContent = text;
    chart.appendChild(node);
    return node;
  };
  add("line", { x1: L, x2: W - R, y1: H - B, y2: H - B, class: "axis" });
  add("text", { x: L - 6, y: y(top) + 4, "text-anchor": "end", class: "label", "data-axis": "top" }, String(top));
  if (bottom !== top) {
    add("text", { x: L - 6, y: y(bottom) + 4, "text-anchor": "end", class: "label", "data-axis": "bottom" },
        String(bottom));
  }
  const day = (iso) => new Date(iso).toLocaleDateString(locale(),
                                                        { month: "short", day: "numeric" });
  const first = points.find((p) => p.at), last = points[points.length - 1];
  if (first) {
    add("text", { x: L, y: H - 6, class: "label", "data-axis": "first" }, day(first.at));
    if (last !== first && day(last.at) !== day(first.at)) {
      add("text", { x: W - R, y: H - 6, "text-anchor": "end", class: "label", "data-axis": "last" }, day(last.at));
    }
  }
  add("polyline", { class: "line", points: points.map((p, i) => `${x(i)},${y(Math.round(p.rating))}`).join(" ") });
  points.forEach((p, i) => add("circle", { cx: x(i), cy: y(Math.round(p.rating)), r: 3.5, class: "dot",
                                            "data-rating": Math.round(p.rating) }));
  chart.setAttribute("aria-label", `${t("history")}: ${ratings.join(" → ")}`);
}

// Drawn again when its size changes (a rotated phone, a resized window).
new ResizeObserver(() => {
  const chart = $("#chart");
  if (!data || !playerId || !chartSize) return;
  if (Math.round(chart.clientWidth) !== chartSize[0] || Math.round(chart.clientHeight) !== chartSize[1]) drawChart();
}).observe($("#chart"));

// ---- the analysis: loading, none (no analysed match, or a player never seen),
// unavailable (the ranking service is away), ready; `#analysis[data-state]` says which.
let analysis = null;
let analysisState = "loading";
const pct = (x, digits = 1) => `${(x * 100).toFixed(digits)}%`;
const pValue = (p) => (p < 0.001 ? "< 0.001" : p.toFixed(3));

async function loadAnalysis() {
  $("#analysis").hidden = false;
  drawAnalysis();
  try {
    analysis = await api("GET", `/api/ratings/players/${encodeURIComponent(playerId)}/analysis`);
    analysisState = analysis.dice.matches > 0 ? "ready" : "none";
  } catch (err) {
    analysisState = err instanceof ApiError && err.status === 404 ? "none" : "unavailable";
  }
  drawAnalysis();
}

function drawAnalysis() {
  if (!playerId) return;
  $("#analysis").dataset.state = analysisState;
  const ready = analysisState === "ready";
  $("#analysis-state").textContent = ready ? "" : t(`analysis.${analysisState}`);
  $("#analysis-state").hidden = ready;
  $("#analysis-body").hidden = !ready;
  if (!ready) return;
  const a = analysis;
  const even = Math.abs(a.luck) < 0.0005;
  // "you" on the player's own page (this device's guest), "this player" on anyone else's.
  const me = guest();
  const them = me && me.id === playerId ? "" : "_them";
  const luckKey = (even ? "analysis.dice_even" : a.luck > 0 ? "analysis.dice_gave" : "analysis.dice_took") + them;
  // In points of the chance, as every page says it (analysis_words.js); which way the
  // dice went is in the words.
  const luck = pointsText(a.luck * 100, { digits: 1, signed: false });
  const cost = pointsText(a.error_rate * 100, { digits: 1, signed: false });
  const choices = a.choices
    ? t(`analysis.choices_cost${them}`, { error: cost, best: pct(a.best_share, 0) })
    : t(`analysis.choices_none${them}`);
  $("#analysis-summary").textContent = passage(t(luckKey, { n: a.matches, luck }), choices);
  $("#analysis-note").textContent = t("analysis.note");
  const figures = $("#analysis-figures");
  figures.textContent = "";
  const figure = (key, value, unit) => {
    const box = el("div", { "data-figure": key });
    const dd = el("dd", {}, value);
    if (unit) dd.appendChild(el("span", { class: "unit" }, t("chance.unit")));  // "points"
    box.append(el("dt", {}, t(`analysis.${key}`)), dd);
    figures.appendChild(box);
  };
  figure("matches", String(a.matches));
  figure("luck", signedPoints(even ? 0 : a.luck * 100, 1), true);
  figure("error_rate", a.choices ? (a.error_rate * 100).toFixed(1) : "–", !!a.choices);
  figure("best_share", a.choices ? pct(a.best_share, 0) : "–");
  drawDice(a.dice);
}

function drawDice(dice) {
  const rolled = dice.rolls > 0;
  $("#dice-figures").hidden = !rolled;
  $("#dice-note").hidden = !rolled;
  if (!rolled) {
    $("#dice-summary").textContent = t("analysis.dice_none");
    return;
  }
  const fit = dice.p_value === null || dice.p_value >= 0.01;
  $("#dice-summary").textContent = passage(t("analysis.sixes", { n: dice.sixes_per_100.toFixed(1) }),
    t(fit ? "analysis.fair_fit" : "analysis.fair_off", { p: pValue(dice.p_value === null ? 1 : dice.p_value) }));
  $("#dice-note").textContent = t("analysis.dice_note", { matches: dice.matches, rolls: dice.rolls });
  const body = $("#dice-table tbody");
  body.textContent = "";
  for (const f of dice.shares) {
    const outside = dice.expected < f.low || dice.expected > f.high;
    const tr = el("tr", { "data-face": String(f.face), class: outside ? "off" : "" });
    tr.append(el("td", {}, String(f.face)), el("td", { class: "num" }, String(f.count)),
              el("td", { class: "num" }, pct(f.share)),
              el("td", { class: "num" }, `${pct(f.low)} – ${pct(f.high)}`));
    body.appendChild(tr);
  }
  // The chart: a bar per face (its share), its 95% interval, and a fair die's 1/6.
  const chart = $("#dice-chart");
  chart.textContent = "";
  const W = 360, H = 210, L = 44, R = 34, T = 12, B = 30;
  // The scale: to a multiple of 5% (10% above 20%), a grid line at each such step.
  const highest = Math.max(dice.expected, ...dice.shares.map((f) => f.high));
  const step = highest > 0.2 ? 0.1 : 0.05;
  const top = Math.min(1, Math.ceil(highest / step - 1e-9) * step);
  const y = (v) => H - B - (v / top) * (H - T - B);
  const slot = (W - L - R) / 6;
  const add = (tag, attrs, text) => {
    const node = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
    if (text !== undefined) node.textContent = text;
    chart.appendChild(node);
    return node;
  };
  for (let k = 0; k * step <= top + 1e-9; k++) {
    const v = k * step;
    add("line", { x1: L, x2: W - R, y1: y(v), y2: y(v), class: "axis" });
    add("text", { x: L - 6, y: y(v) + 4, "text-anchor": "end" }, pct(v, 0));
  }
  dice.shares.forEach((f, i) => {
    const cx = L + slot * (i + 0.5);
    add("rect", { x: cx - slot * 0.3, y: y(f.share), width: slot * 0.6, height: y(0) - y(f.share), class: "bar" });
    add("line", { x1: cx, x2: cx, y1: y(f.low), y2: y(f.high), class: "interval" });
    add("line", { x1: cx - 6, x2: cx + 6, y1: y(f.low), y2: y(f.low), class: "interval" });
    add("line", { x1: cx - 6, x2: cx + 6, y1: y(f.high), y2: y(f.high), class: "interval" });
    add("text", { x: cx, y: H - B + 18, "text-anchor": "middle", class: "face" }, String(f.face));
  });
  add("line", { x1: L, x2: W - R, y1: y(dice.expected), y2: y(dice.expected), class: "fair" });
  add("text", { x: W - R + 4, y: y(dice.expected) + 4, class: "fair-label" }, "1/6");
  chart.setAttribute("aria-label", t("analysis.chart", {
    list: dice.shares.map((f) => `${f.face}: ${pct(f.share)} (${pct(f.low)}–${pct(f.high)})`).join(", "),
  }));
}

function draw() {
  if (!data) return;
  if (playerId) drawPlayer();
  else drawLeaderboard();
}

// The page's message, as a function that words it in the current language.
let said = null;
function say(words) {
  said = words;
  const [text, kind] = words();
  message(text, kind);
}
document.addEventListener("languagechange", () => { if (said) say(said); });

async function start() {
  siteHeader();
  keyboardScroll();
  document.addEventListener("languagechange", draw);
  document.addEventListener("languagechange", drawAnalysis);
  if (playerId) loadAnalysis();  // on its own: shown also before any rated match
  const section = playerId ? $("#player") : $("#leaderboard");
  try {
    data = playerId
      ? await api("GET", `/api/ratings/players/${encodeURIComponent(playerId)}`)
      : await api("GET", "/api/ratings/leaderboard?limit=100");
  } catch (err) {
    // The page is served only for a known player: a 404 here means no ranked match yet.
    // The message is worded again when the language is switched (`say`).
    say(() => [err instanceof ApiError && err.status === 404 ? t("no_ratings_yet") : errorText(err),
               err instanceof ApiError && err.status === 404 ? "info" : "error"]);
    if (playerId && err instanceof ApiError && err.status === 404) {
      // No ranked match yet, but casual ones count for the completion rate.
      try {
        const [p] = (await api("GET", `/api/players/reputation?ids=${encodeURIComponent(playerId)}`)).players;
        if (p.completion) {
          say(() => [`${t("no_ratings_yet")} ${t("completion", { n: Math.round(p.completion.rate * 100) })}`, "info"]);
        }
      } catch (_) { /* the ranking service is away: the message stays as it is */ }
    }
    document.body.dataset.ready = "true";
    return;
  }
  section.hidden = false;
  draw();
  document.body.dataset.ready = "true";
}
start();
