// The ratings page's script (web/pages/ratings.html).
import { $, el, message, keyboardScroll } from "./lib/page_common.js";
import { mergeWords, lang, t, guest, ApiError, errorText, api, siteHeader } from "./lib/site.js";
import { signedPoints, pointsText } from "./lib/analysis_words.js";

// The player's analysis section (/api/ratings/players/{id}/analysis, docs/analysis.md).
mergeWords({
  ja: { place_of: "{n}位（{of}人中）", left_mark: "・途中で抜けた" },
  en: { place_of: "Place {n} of {of}", left_mark: " (left)" },
});
mergeWords({
  ja: { analysis: {
    title: "運と判断",
    loading: "分析を読み込んでいます…",
    none: "まだ分析された対局がありません。対局が終わると、数秒で分析されます。",
    unavailable: "いまは分析を表示できません（ランキングのサービスに届きません）。しばらくしてから読み込み直してください。",
    dice_gave: "直近{n}局の平均では、サイコロの運で1局あたり{luck}得をしています。",
    dice_took: "直近{n}局の平均では、サイコロの運で1局あたり{luck}損をしています。",
    dice_even: "直近{n}局の平均では、サイコロの運は五分五分です。",
    choices_cost: "あなたの選択は、判断1回あたり{error}の損でした（最善手を選んだのは{best}）。",
    choices_none: "自分で選んだ手はまだありません。",
    // Someone else's page: the same in the third person.
    dice_gave_them: "直近{n}局の平均では、このプレイヤーはサイコロの運で1局あたり{luck}得をしています。",
    dice_took_them: "直近{n}局の平均では、このプレイヤーはサイコロの運で1局あたり{luck}損をしています。",
    dice_even_them: "直近{n}局の平均では、このプレイヤーのサイコロの運は五分五分です。",
    choices_cost_them: "選択は、判断1回あたり{error}の損でした（最善手を選んだのは{best}）。",
    choices_none_them: "自分で選んだ手はまだありません。",
    note: "数値は1位になる確率のポイントです。運は平均的な出目と、選択の損は最善手と比べています（代わりに打ったCPUの手は含みません）。",
    matches: "分析した対局", luck: "運（1局平均）", error_rate: "選択の損（1回平均）", best_share: "最善手の割合",
    dice_title: "サイコロの出目",
    dice_none: "まだ分析されたサイコロの目がありません。",
    sixes: "100回あたり6が{n}回出ています（公平なサイコロなら16.7回）。",
    dice_note: "分析した全{matches}局・{rolls}回の出目から。棒は各出目の割合、黒い縦線は95%区間、赤い破線は公平なサイコロの1/6です。",
    fair_fit: "出目の偏りは、公平なサイコロで起こる範囲内です（カイ二乗検定 p = {p}）。",
    fair_off: "出目は、公平なサイコロとしては珍しい偏りです（カイ二乗検定 p = {p}）。プレイヤーが多ければ、偶然そうなる人もいます。",
    face: "出目", count: "回数", share: "割合", interval: "95%区間",
    chart: "出目ごとの割合（95%区間）: {list}。公平なら各16.7%。",
  } },
  en: { analysis: {
    title: "Luck and decisions",
    loading: "Loading the analysis…",
    none: "No analysed match yet. A match is analysed within seconds of its end.",
    unavailable: "The analysis is unavailable right now (the ranking service cannot be reached). Try reloading in a while.",
    dice_gave: "On average over the last {n} matches, the dice gave you {luck} per match.",
    dice_took: "On average over the last {n} matches, the dice cost you {luck} per match.",
    dice_even: "On average over the last {n} matches, the dice were even for you.",
    choices_cost: "Your choices cost {error} per decision (the best move in {best} of them).",
    choices_none: "You have not made a choice of your own yet.",
    dice_gave_them: "On average over the last {n} matches, the dice gave this player {luck} per match.",
    dice_took_them: "On average over the last {n} matches, the dice cost this player {luck} per match.",
    dice_even_them: "On average over the last {n} matches, the dice were even for this player.",
    choices_cost_them: "Their choices cost {error} per decision (the best move in {best} of them).",
    choices_none_them: "They have not made a choice of their own yet.",
    note: "In percentage points of the chance to finish first: luck against an average roll, the cost of a choice against the best move (moves a CPU made in the player's place are left out).",
    matches: "Analysed matches", luck: "Luck per match", error_rate: "Cost per decision", best_share: "Best moves",
    dice_title: "Dice",
    dice_none: "No analysed roll yet.",
    sixes: "Sixes per 100 rolls: {n} (a fair die: 16.7).",
    dice_note: "From {rolls} rolls in all {matches} analysed matches. Bars: each face's share; black lines: its 95% interval; red dashes: a fair die's 1/6.",
    fair_fit: "These dice look like a fair die's (chi-square test, p = {p}).",
    fair_off: "These dice are unusually far from a fair die's (chi-square test, p = {p}); among many players, some always are, by chance.",
    face: "Face", count: "Rolls", share: "Share", interval: "95% interval",
    chart: "Share of each face (95% interval): {list}. A fair die: 16.7% each.",
  } },
});

const SVG = "http://www.w3.org/2000/svg";
const path = location.pathname.split("/").filter(Boolean);
const playerId = path[0] === "players" ? decodeURIComponent(path[1] || "") : null;
let data = null;

const signed = (n) => (n > 0 ? `+${n}` : String(n));
const when = (iso) => {
  const d = new Date(iso);
  return isNaN(d) ? iso : d.toLocaleString(lang === "ja" ? "ja-JP" : "en-GB",
                                           { dateStyle: "medium", timeStyle: "short" });
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
  const day = (iso) => new Date(iso).toLocaleDateString(lang === "ja" ? "ja-JP" : "en-GB",
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
  const gap = lang === "ja" ? "" : " ";  // Japanese sentences follow each other unspaced
  $("#analysis-summary").textContent = t(luckKey, { n: a.matches, luck }) + gap + choices;
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
  $("#dice-summary").textContent = t("analysis.sixes", { n: dice.sixes_per_100.toFixed(1) }) +
    (lang === "ja" ? "" : " ") + t(fit ? "analysis.fair_fit" : "analysis.fair_off", { p: pValue(dice.p_value === null ? 1 : dice.p_value) });
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
