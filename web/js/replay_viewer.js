// The replay viewer page's script (web/pages/replay_viewer.html).
import { $, el, message, keyboardScroll } from "./lib/page_common.js";
import * as site from "./lib/site.js";
import { t, errorText, api, siteHeader, boardLabels } from "./lib/site.js";
import { matchWords } from "./lib/replay_words.js";
import { pointsText, chanceSplit, chanceWords } from "./lib/analysis_words.js";
import { watchSeats } from "./lib/report_player.js";
import { LudoBoard } from "./lib/board.js";

const SVG = "http://www.w3.org/2000/svg";
const matchId = decodeURIComponent(location.pathname.split("/").filter(Boolean).pop() || "");
let model = null;        // the match: getReplaySteps' first answer (its steps in `steps`)
const steps = [];        // steps[v]: the step of event v, once its range is read
const RANGE = 100;       // steps read at a time
const ranges = new Map();  // a range's first step → its read (a promise)
let index = 0;

// --------------------------------------------------------------- SHA-256 and HMAC
// FIPS 180-4 SHA-256 and RFC 2104 HMAC on Uint8Arrays.
const K = new Uint32Array([
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4,
  0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,
  0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,
  0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
  0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
  0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
  0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116,
  0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
  0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
  0xc67178f2]);
const rotr = (x, n) => (x >>> n) | (x << (32 - n));

function sha256(data) {
  const length = data.length;
  const blocks = Math.ceil((length + 9) / 64);
  const m = new Uint8Array(blocks * 64);
  m.set(data);
  m[length] = 0x80;
  const view = new DataView(m.buffer);
  view.setUint32(m.length - 8, Math.floor(length / 0x20000000));
  view.setUint32(m.length - 4, (length * 8) >>> 0);
  const h = new Uint32Array([0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                             0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19]);
  const w = new Uint32Array(64);
  for (let off = 0; off < m.length; off += 64) {
    for (let t = 0; t < 16; t++) w[t] = view.getUint32(off + 4 * t);
    for (let t = 16; t < 64; t++) {
      const s0 = rotr(w[t - 15], 7) ^ rotr(w[t - 15], 18) ^ (w[t - 15] >>> 3);
      const s1 = rotr(w[t - 2], 17) ^ rotr(w[t - 2], 19) ^ (w[t - 2] >>> 10);
      w[t] = (w[t - 16] + s0 + w[t - 7] + s1) | 0;
    }
    let a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], hh = h[7];
    for (let t = 0; t < 64; t++) {
      const t1 = (hh + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g))
                  + K[t] + w[t]) | 0;
      const t2 = ((rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c))) | 0;
      hh = g; g = f; f = e; e = (d + t1) | 0; d = c; c = b; b = a; a = (t1 + t2) | 0;
    }
    h[0] += a; h[1] += b; h[2] += c; h[3] += d; h[4] += e; h[5] += f; h[6] += g; h[7] += hh;
  }
  const out = new Uint8Array(32);
  const outView = new DataView(out.buffer);
  for (let i = 0; i < 8; i++) outView.setUint32(4 * i, h[i]);
  return out;
}

function concat(a, b) {
  const out = new Uint8Array(a.length + b.length);
  out.set(a);
  out.set(b, a.length);
  return out;
}

function hmacSha256(key, message) {
  let k = key.length > 64 ? sha256(key) : key;
  const padded = new Uint8Array(64);
  padded.set(k);
  const inner = padded.map((x) => x ^ 0x36);
  const outer = padded.map((x) => x ^ 0x5c);
  return sha256(concat(outer, sha256(concat(inner, message))));
}

const utf8 = (text) => new TextEncoder().encode(text);
const hex = (bytes) => Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
function unhex(text) {
  if (!/^([0-9a-fA-F]{2})*$/.test(text)) return null;
  const out = new Uint8Array(text.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = parseInt(text.substr(2 * i, 2), 16);
  return out;
}

// docs/design.md#the-derivation: the first byte b < 252 of HMAC(seed, "client_seed:n:k"),
// k = 0, 1, ...
function dieFor(seed, clientSeed, n) {
  for (let k = 0; k < 1000; k++) {
    for (const b of hmacSha256(seed, utf8(`${clientSeed}:${n}:${k}`))) {
      if (b < 252) return (b % 6) + 1;
    }
  }
  return null;
}
window.ludoFair = { sha256, hmacSha256, dieFor, hex, unhex, utf8 };

// ------------------------------------------------------------------------ helpers
function svg(parent, tag, attrs, text) {
  const node = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
  if (text !== undefined) node.textContent = text;
  parent.appendChild(node);
  return node;
}
const { seatName, colourName, who, eventText: stepText, stampText, optionText } = matchWords(() => model, site);
function time(iso) {
  if (!iso) return "";
  const d = new Date(iso);
  return isNaN(d) ? iso : d.toISOString().replace("T", " ").replace(/\.\d+Z$/, " UTC");
}

// A place as the table says it, "1位" / "Place 1", shared when another seat has it too.
function placeText(seat) {
  const p = model.placements[seat];
  const shared = model.placements.filter((q) => q === p).length > 1;
  return t(shared ? "place_shared" : "place", { n: p });
}

// The #message box, kept as words so a language switch says it again.
let said = null;
function say(key, vars, kind) {
  said = { key, vars, kind };
  message(t(key, vars), kind);
}

// -------------------------------------------------------------------------- board
// web/js/lib/board.js draws it; at a roll its legal moves are marked as targets
// (display only: nothing to pick in a replay), the one played highlighted.
let board = null;

function drawBoardBase() {
  if (board) board.destroy();
  board = LudoBoard.create($("#board"), model.board, {
    bottom: 0,
    labels: boardLabels(model.board, who),
  });
}

function drawBoard(step) {
  board.setPieces(step.pieces || []);
  board.setLastMove(step.type === "PieceMoved" ? step.seat : null, step.chosen);
  if (step.type === "DieRolled" && step.options) {
    board.setMovable(step.seat, step.options, null, { chosen: step.chosen });
  } else {
    board.setMovable(null);
  }
  const die = step.die === null || step.die === undefined ? null : String(step.die);
  $("#die").hidden = die === null;
  $("#die-value").textContent = die || "";
}

// ------------------------------------------------------------------------ stepping
// A long match is read a range of RANGE steps at a time (getReplaySteps ?from&limit):
// the first answer brings the match (its seats, board, commitment, count of steps, the
// timeline's marks and the stamps) and the range of the step asked for, so the first
// drawing does not wait for every step. Other ranges are read when the viewer goes
// there (a step, the list's earlier or later events) and kept.
function readRange(i) {
  const from = Math.floor(i / RANGE) * RANGE;
  let read = ranges.get(from);
  if (!read) {
    read = fetchSteps(from).then((answer) => {
      answer.steps.forEach((step, k) => { steps[answer.start + k] = step; });
      return answer;
    });
    ranges.set(from, read);
    read.catch(() => ranges.delete(from));  // asked again next time
  }
  return read;
}

async function fetchSteps(from) {
  const res = await fetch(`/api/matches/${encodeURIComponent(matchId)}/steps?from=${from}&limit=${RANGE}`,
                          { headers: { Accept: "application/json" }, cache: "no-store" });
  if (!res.ok) {
    let detail = "";
    try { detail = (await res.json()).detail || ""; } catch (_) { /* not JSON */ }
    const err = new Error(`HTTP ${res.status} ${detail}`.trim());
    err.status = res.status;
    throw err;
  }
  return res.json();
}

// The reader goes to step i: drawn, and the address says it (`#i`, the current entry
// rewritten: stepping adds no entries to Back).
function show(i) {
  index = i;
  redraw();
  history.replaceState(null, "", `#${index}`);
}

// The current step drawn again (words, analysis, a range read, a resize), the address
// left alone: it may already name another step whose `hashchange` has not arrived yet
// (the reader edited it, or Back), and writing `#index` there would undo that.
function redraw() {
  const total = model.count;
  index = Math.max(0, Math.min(total - 1, index));
  $("#scrub").value = String(index);
  $("#counter").textContent = `${index + 1} / ${total}`;
  $("#first").disabled = $("#prev").disabled = index === 0;
  $("#next").disabled = $("#last").disabled = index === total - 1;
  const cursor = $("#timeline .cursor");
  if (cursor) cursor.setAttribute("x", String(position(index) - 1.5));
  const step = steps[index];
  if (!step) {  // its range is not read yet: said, read, then drawn if still wanted
    const wanted = index;
    $("#event-text").textContent = t("viewer.loading_step", { n: wanted });
    $("#event-meta").textContent = "";
    $("#options-box").hidden = true;
    $("#roll-luck").textContent = "";
    readRange(wanted).then(() => { if (index === wanted) redraw(); }, (err) => {
      if (index === wanted) $("#event-text").textContent = t("viewer.step_failed", { n: wanted, why: err.message });
    });
    return;
  }
  $("#event-text").textContent = stepText(step);
  const meta = [t("viewer.event_n", { n: step.version }), step.type];
  if (step.type === "DieRolled") meta.push(t("viewer.roll_n", { n: step.n }));
  meta.push(t("viewer.decided_by", { by: t(`viewer.by.${step.by}`) }));
  if (step.recorded_at) meta.push(time(step.recorded_at));
  $("#event-meta").textContent = meta.join(" · ");
  const list = $("#options");
  list.textContent = "";
  const options = step.options || [];
  $("#options-box").hidden = options.length === 0;
  $("#options-title").textContent = step.type === "DieRolled"
    ? t("viewer.options_roll", { who: who(step.seat), die: step.die })
    : t("viewer.options_move", { die: step.die });
  const decision = step.type === "PieceMoved" ? decisionAt(step.version) : null;
  for (const o of options) {
    const chosen = o.piece === step.chosen;
    const li = el("li", { class: chosen ? "option chosen" : "option", "data-piece": o.piece }, optionText(o));
    const valued = decision ? decision.options.findIndex((d) => d[0] === o.piece) : -1;
    if (valued >= 0) {  // the move's value: the mover's chance to finish first after it
      li.appendChild(el("span", { class: "value", "data-value": decision.options[valued][3] },
                        percent(decision.options[valued][3])));
    }
    if (chosen) li.appendChild(el("span", { class: "chosen-mark" }, t("viewer.chosen")));
    if (valued >= 0 && valued === decision.best) {
      li.classList.add("best");
      li.appendChild(el("span", { class: "best-mark" }, t("viewer.an.best")));
    }
    list.appendChild(li);
  }
  $("#options-verdict").textContent = decision ? verdictText(decision) : "";
  const roll = step.type === "DieRolled" ? rollAt(step.version) : null;
  $("#roll-luck").textContent = roll ? t("viewer.an.roll_luck", { who: who(roll.seat), luck: points(roll.luck) }) : "";
  drawBoard(step);
  drawNow(step);
  listAround(index);
  for (const li of document.querySelectorAll("#events li.current")) li.classList.remove("current");
  const current = $(`#events li[data-version="${step.version}"]`);
  if (current) {
    current.classList.add("current");
    // Measured against the list's own box: offsetTop counts from another ancestor.
    const box = $("#events");
    const outer = box.getBoundingClientRect();
    const row = current.getBoundingClientRect();
    if (row.top < outer.top || row.bottom > outer.bottom) {
      box.scrollTop += row.top - outer.top - (box.clientHeight - row.height) / 2;
    }
  }
}

const position = (i) => (model.count > 1 ? (i / (model.count - 1)) * 996 + 2 : 500);

// The timeline of the whole match: its marks and its quick-chat stamps (each after the
// step it follows), from the first answer.
function drawTimeline() {
  const line = $("#timeline");
  line.textContent = "";
  svg(line, "rect", { x: 0, y: 10, width: 1000, height: 8, class: "base" });
  for (const { version, mark } of model.marks) {
    svg(line, "line", { x1: position(version), x2: position(version), y1: 2, y2: 26,
                        class: `mark m-${mark}`, "data-version": version });
  }
  for (const stamp of model.stamps) {
    svg(line, "line", { x1: position(stamp.step), x2: position(stamp.step), y1: 0, y2: 9,
                        class: "mark m-stamp", "data-stamp-version": stamp.version });
  }
  svg(line, "rect", { x: 0, y: 0, width: 3, height: 28, class: "cursor" });
}

// The list of events: the ranges read around the current step, from `listFrom` to
// `listTo` (exclusive), with the stamps sent among them; earlier and later ones a press
// away (or a scroll of the list to its end by hand). Said again on a language switch,
// its scroll position kept.
let listFrom = 0;
let listTo = 0;
let extending = null;  // "earlier" or "later" while that range is read

function rows(from, to) {
  const out = document.createDocumentFragment();
  for (let v = from; v < to; v++) {
    const step = steps[v];
    const li = el("li", { "data-version": step.version });
    li.appendChild(el("span", { class: "v" }, String(step.version)));
    li.appendChild(document.createTextNode(" " + stepText(step)));
    for (const mark of step.marks) {
      li.appendChild(el("span", { class: `badge m-${mark}` }, t(`viewer.marks.${mark}`)));
    }
    li.addEventListener("click", () => show(step.version));
    out.appendChild(li);
    for (const stamp of model.stamps.filter((s) => s.step === step.version)) {
      const row = el("li", { class: "stamp", "data-stamp-version": stamp.version });
      row.appendChild(el("span", { class: "v" }, ""));
      row.appendChild(document.createTextNode(" " + stampText(stamp.seat, stamp.stamp)));
      row.appendChild(el("span", { class: "badge m-stamp" }, t("viewer.marks.stamp")));
      row.addEventListener("click", () => show(step.version));
      out.appendChild(row);
    }
  }
  return out;
}

function drawEvents() {
  const list = $("#events");
  const scroll = list.scrollTop;
  list.textContent = "";
  list.appendChild(rows(listFrom, listTo));
  list.scrollTop = scroll;
  drawListEnds();
}

// The list shows the range of step i (drawn anew) unless it shows i already; the range
// is read (show() draws only a step that is).
function listAround(i) {
  if (i >= listFrom && i < listTo) return;
  listFrom = Math.floor(i / RANGE) * RANGE;
  listTo = Math.min(model.count, listFrom + RANGE);
  extending = null;
  drawEvents();
}

function drawListEnds(note) {
  const earlier = $("#events-earlier");
  const later = $("#events-later");
  earlier.hidden = listFrom === 0;
  later.hidden = listTo >= model.count;
  earlier.textContent = extending === "earlier" ? t("viewer.events_loading") : t("viewer.events_earlier");
  later.textContent = extending === "later" ? t("viewer.events_loading") : t("viewer.events_later");
  $("#events-shown").textContent = note || t("viewer.events_shown",
                                              { from: listFrom, to: listTo - 1, count: model.count });
}

// One more range above (earlier) or below (later) the list; the rows in view stay put.
async function extendList(side) {
  if (extending) return;
  const earlier = side === "earlier";
  if (earlier ? listFrom === 0 : listTo >= model.count) return;
  const from = earlier ? listFrom - RANGE : listTo;
  const shown = [listFrom, listTo];
  extending = side;
  drawListEnds();
  try {
    await readRange(from);
  } catch (err) {
    extending = null;
    drawListEnds(t("viewer.events_failed", { why: err.message }));
    return;
  }
  // The list was drawn anew meanwhile (the viewer went elsewhere): nothing to add.
  if (extending !== side || shown[0] !== listFrom || shown[1] !== listTo) return;
  extending = null;
  const list = $("#events");
  const to = Math.min(model.count, from + RANGE);
  if (earlier) {
    const below = list.scrollHeight - list.scrollTop;
    list.prepend(rows(from, to));
    list.scrollTop = list.scrollHeight - below;
    listFrom = from;
  } else {
    list.appendChild(rows(from, to));
    listTo = to;
  }
  drawListEnds();
}

function drawSeats() {
  const list = $("#seats");
  list.textContent = "";
  for (const s of model.seats) {
    const li = el("li", { "data-seat": s.seat, class: `c-${s.colour}` });
    li.appendChild(el("span", { class: `swatch c-${s.colour}` }));
    li.appendChild(el("span", { class: "name" }, `${colourName(s.colour)}: ${seatName(s.seat)}`));
    if (model.placements) li.appendChild(el("span", { class: "place" }, placeText(s.seat)));
    list.appendChild(li);
  }
}

// ------------------------------------------------------------------------ analysis
// The match's analysis (docs/analysis.md), read from the ranking service through this
// origin (GET /api/ratings/analysis/{id}): each seat's chance to finish first after
// every turn (the chart, one line per seat in its colour and its own dash), the three
// turns that moved each seat's chance most (marked and numbered on the chart, listed
// as buttons that step the replay there), each seat's sums, each roll's luck and each
// decision's options valued. Without it (not written yet, no ranking service) the
// replay works as before and the section says why in words.
let analysis = null;
let analysisState = "loading";  // loading, ready, pending, playing, none, unavailable
const askedForAnalysis = location.hash === "#analysis";  // the end screen's link
const ANALYSIS_WAITS = [2000, 4000, 8000, 16000];
// The chart is drawn in the CSS pixels it has (again when its box changes width), so
// that its words and marks keep their size on a phone.
const CHART = { width: 1000, height: 300, left: 46, right: 984, top: 18, bottom: 270, r: 14 };
function sizeChart() {
  const width = Math.max(280, Math.round($("#chances").getBoundingClientRect().width || 1000));
  const height = width < 600 ? 230 : 300;
  Object.assign(CHART, { width, height, right: width - 18, bottom: height - 30, r: width < 600 ? 12 : 14 });
  $("#chances").setAttribute("viewBox", `0 0 ${width} ${height}`);
}

const percent = (x) => `${Math.round(x * 100)}%`;
// A change of chance, in points as every page says it: "+12 points", 「−4ポイント」.
const points = (x) => pointsText(Math.round(x * 100));
const decisionAt = (v) => (analysis ? analysis.decisions.find((d) => d.version === v) || null : null);
const rollAt = (v) => (analysis ? analysis.rolls.find((r) => r.version === v) || null : null);
const stepOfVersion = (v) => Math.max(0, Math.min(model.count - 1, v));  // step v is event v

function verdictText(d) {
  if (d.played === d.best || d.error === 0) return t("viewer.an.played_best");  // a tie is best too
  return t("viewer.an.played_error", { error: points(-d.error), piece: d.options[d.best][0] + 1 });
}

async function askAnalysis() {
  let res;
  try {
    res = await fetch(`/api/ratings/analysis/${encodeURIComponent(matchId)}`,
                      { headers: { Accept: "application/json" }, cache: "no-store" });
  } catch (_) {
    return "unavailable";
  }
  if (res.ok) {
    analysis = await res.json();
    return "ready";
  }
  let code = null;
  try { code = (await res.json()).error; } catch (_) { /* not JSON */ }
  if (res.status === 404 && code === "not_found") return "none";
  if (res.status === 404 && code === "not_analysed") return model.status === "finished" ? "pending" : "playing";
  return "unavailable";
}

// Asked once; a finished match whose analysis is not written yet, or a ranking service
// that does not answer, is asked again a few times, further and further apart.
async function loadAnalysis() {
  for (let tries = 0; ; tries++) {
    analysisState = await askAnalysis();
    document.body.dataset.analysis = analysisState;
    drawAnalysis();
    redraw();
    const again = analysisState === "pending" || analysisState === "unavailable";
    if (!again || tries >= ANALYSIS_WAITS.length) break;
    await new Promise((done) => setTimeout(done, ANALYSIS_WAITS[tries]));
  }
  if (analysisState === "ready" && askedForAnalysis) {
    $("#analysis").scrollIntoView();  // the end screen's link: the reader asked for it
  }
}

function chartX(v) {
  const p = analysis.points;
  const lo = p[0][0], hi = Math.max(analysis.until, p[p.length - 1][0], lo + 1);
  const at = Math.max(lo, Math.min(hi, v));
  return CHART.left + ((at - lo) / (hi - lo)) * (CHART.right - CHART.left);
}
const chartY = (c) => CHART.bottom - c * (CHART.bottom - CHART.top);
// Every seat's chances at event v: those after the last turn ended at or before it.
function chancesAt(v) {
  let found = analysis.points[0];
  for (const point of analysis.points) if (point[0] <= v) found = point;
  return found;
}
// The moments of the biggest swings, in the order of the match, numbered as the chart
// marks them: one per turn, however many seats count it among their own three (in a
// 2-player match every turn that lifts one seat sinks the other as much). Each with
// every seat's change over the turn (a seat's listed `change`, else the chart's points
// before and after it), those that listed it or moved, the biggest gain first: `seat`
// is who gained most (the line its mark sits on).
function swingMoments() {
  const byTurn = new Map();
  for (const seat of analysis.seats) {
    for (const swing of seat.swings) {
      const key = `${swing.version}:${swing.until}`;
      if (!byTurn.has(key)) byTurn.set(key, { swing, listed: new Map() });
      byTurn.get(key).listed.set(seat.seat, swing.change);
    }
  }
  const p = analysis.points;
  const moments = [...byTurn.values()].sort((a, b) => a.swing.until - b.swing.until || a.swing.version - b.swing.version);
  return moments.map(({ swing, listed }, i) => {
    const k = p.findIndex((point) => point[0] === swing.until);
    const changes = analysis.seats.map(({ seat }) => ({
      seat,
      change: listed.has(seat) ? listed.get(seat) : k > 0 ? p[k][1][seat] - p[k - 1][1][seat] : 0,
    })).filter((c) => listed.has(c.seat) || Math.round(c.change * 100) !== 0)
      .sort((a, b) => b.change - a.change || a.seat - b.seat);
    const top = changes.length ? changes[0].seat : [...listed.keys()][0];
    return { swing, changes, seat: top, n: i + 1 };
  });
}

function swingText(moment) {
  const { swing, changes } = moment;
  const dice = swing.dice.join(t("viewer.an.dice_join"));
  const caught = swing.captured.map((s) => t("viewer.an.captured", { who: who(s) })).join("");
  const turn = t("viewer.an.turn", { dice, captured: caught });
  const said = changes.map((c) => t("viewer.an.swing_change", { who: who(c.seat), change: points(c.change) }));
  return t("viewer.an.swing", { by: who(swing.by), turn, changes: said.join(t("viewer.an.swing_join")) });
}

function jumpTo(v) {
  show(stepOfVersion(v));
}

function drawAnalysis() {
  const state = $("#analysis-state");
  const ready = analysisState === "ready" && !!analysis;
  state.textContent = ready ? t("viewer.an.by", { evaluator: analysis.evaluator }) : t(`viewer.an.${analysisState}`);
  state.dataset.state = analysisState;
  $("#analysis-body").hidden = !ready;
  if (!ready) return;
  const chart = $("#chances");
  chart.textContent = "";
  sizeChart();
  for (const c of [0, 0.25, 0.5, 0.75, 1]) {
    svg(chart, "line", { x1: CHART.left, x2: CHART.right, y1: chartY(c), y2: chartY(c), class: "grid" });
    svg(chart, "text", { x: CHART.left - 6, y: chartY(c) + 5, class: "axis", "text-anchor": "end" }, percent(c));
  }
  const p = analysis.points;
  svg(chart, "text", { x: CHART.left, y: CHART.height - 8, class: "axis" }, t("viewer.event_n", { n: p[0][0] }));
  svg(chart, "text", { x: CHART.right, y: CHART.height - 8, class: "axis", "text-anchor": "end" },
      t("viewer.event_n", { n: analysis.until }));
  const legend = $("#chances-legend");
  legend.textContent = "";
  const summary = $("#chances-text");
  summary.textContent = "";
  analysis.seats.forEach((seat, i) => {
    const colour = model.seats[i].colour;
    const line = p.map(([v, c]) => `${chartX(v).toFixed(1)},${chartY(c[i]).toFixed(1)}`).join(" ");
    svg(chart, "polyline", { points: line, class: `line c-${colour} s${i}`, "data-seat": i });
    const key = el("li", { "data-seat": i });
    key.appendChild(el("span", { class: `key c-${colour} s${i}`, "aria-hidden": "true" }));
    key.appendChild(document.createTextNode(who(i)));
    legend.appendChild(key);
    // the chart in words: where each seat began, its highest, where it ended
    let top = p[0];
    for (const point of p) if (point[1][i] > top[1][i]) top = point;
    summary.appendChild(el("li", { "data-seat": i }, t("viewer.an.line_text", {
      who: who(i), start: percent(p[0][1][i]), top: percent(top[1][i]), at: top[0],
      end: percent(p[p.length - 1][1][i]) })));
  });
  const swings = $("#swings");
  swings.textContent = "";
  for (const moment of swingMoments()) {
    const { seat, swing, n } = moment;
    const colour = model.seats[seat].colour;
    const x = chartX(swing.until), y = chartY(chancesAt(swing.until)[1][seat]);
    const mark = svg(chart, "circle", { cx: x, cy: y, r: CHART.r, class: `swing c-${colour}`, "data-swing": n,
                                        "data-version": swing.version });
    mark.addEventListener("click", (e) => { e.stopPropagation(); jumpTo(swing.version); });
    svg(chart, "text", { x, y, class: `swing-n c-${colour}` }, String(n));
    const li = el("li");
    const button = el("button", { type: "button", class: "secondary", "data-swing": n,
                                  "data-version": swing.version, "data-until": swing.until,
                                  "data-seat": seat });
    button.appendChild(el("span", { class: `n c-${colour}`, "aria-hidden": "true" }, String(n)));
    button.appendChild(el("span", {}, swingText(moment)));
    button.addEventListener("click", () => jumpTo(swing.version));
    li.appendChild(button);
    swings.appendChild(li);
  }
  svg(chart, "line", { x1: 0, x2: 0, y1: CHART.top - 8, y2: CHART.bottom + 4, class: "now" });
  // Each seat's chance from the start to the end, and the parts that add up to its
  // change (analysis_words.js, as the end card says them).
  const rows = $("#analysis-seats tbody");
  rows.textContent = "";
  const notes = $("#analysis-seat-notes");
  notes.textContent = "";
  for (const seat of analysis.seats) {
    const split = chanceSplit(analysis, seat.seat);
    const words = chanceWords(split, false);
    const tr = el("tr", { "data-seat": seat.seat, "data-change": split.change });
    tr.appendChild(el("td", {}, who(seat.seat)));
    tr.appendChild(el("td", { class: "chance" }, `${split.start}% → ${split.end}%${words.change}`));
    for (const part of words.parts) {
      tr.appendChild(el("td", { class: part.key, "data-points": part.points }, part.figure));
    }
    tr.appendChild(el("td", {}, seat.choices ? t("viewer.an.best_of", { best: seat.best_choices, n: seat.choices }) : "—"));
    rows.appendChild(tr);
    for (const text of [words.why, words.cancelled]) {
      if (text) notes.appendChild(el("li", { "data-seat": seat.seat }, `${who(seat.seat)}: ${text}`));
    }
  }
}

// The replay's current step on the chart: a line where it is, and in words every
// seat's chance there; the swing being shown is marked in the list.
function drawNow(step) {
  if (analysisState !== "ready" || !analysis) return;
  const line = $("#chances .now");
  if (line) {
    const x = chartX(step.version);
    line.setAttribute("x1", x);
    line.setAttribute("x2", x);
  }
  const [, chances] = chancesAt(step.version);
  const said = chances.map((c, i) => `${who(i)} ${percent(c)}`).join(" · ");
  $("#chances-now").textContent = t("viewer.an.now", { n: step.version, chances: said });
  for (const b of document.querySelectorAll("#swings button")) {
    const from = Number(b.dataset.version), until = Number(b.dataset.until);
    if (step.version >= from && step.version <= until) b.setAttribute("aria-current", "step");
    else b.removeAttribute("aria-current");
  }
}

// A click or tap on the chart: the replay goes to the nearest turn's end drawn there.
function onChartClick(e) {
  if (!analysis) return;
  const box = $("#chances").getBoundingClientRect();
  const x = ((e.clientX - box.left) / box.width) * CHART.width;
  let best = analysis.points[0];
  for (const point of analysis.points) {
    if (Math.abs(chartX(point[0]) - x) < Math.abs(chartX(best[0]) - x)) best = point;
  }
  jumpTo(best[0]);
}

// ------------------------------------------------------------------------ fairness
// Every roll (getFairness: n, event, seat, die) is read after the first drawing, and
// each die is re-derived here from the revealed seed a slice at a time, the panel saying
// how far it has got: a long match's hundreds of HMACs never hold the page up. The
// results are kept (`derived[i]` for roll i); the words are drawn again on a language
// switch.
let rolls = null;          // null until read
let rollsError = null;     // why they could not be read
let derived = [];
const DICE_SLICE = 40;     // dice derived between two drawings

async function loadRolls() {
  try {
    rolls = (await api("GET", `/api/matches/${encodeURIComponent(matchId)}/fairness`)).rolls;
  } catch (err) {
    rollsError = errorText(err);
    drawFairness();
    return;
  }
  drawFairness();
  const seed = model.fairness.server_seed ? unhex(model.fairness.server_seed) : null;
  if (!seed) return;
  const client = model.fairness.client_seed || "";
  while (derived.length < rolls.length) {
    const from = derived.length;
    for (const roll of rolls.slice(from, from + DICE_SLICE)) derived.push(dieFor(seed, client, roll.n));
    appendDice(from, derived.length);
    drawDiceSummary();
    await new Promise((next) => setTimeout(next));  // the page answers between slices
  }
  document.body.dataset.dice = "checked";
}

function appendDice(from, to) {
  const body = $("#fair-dice tbody");
  for (let i = from; i < to; i++) {
    const roll = rolls[i];
    const ok = derived[i] === roll.value;
    const tr = el("tr", { class: ok ? "ok" : "bad", "data-n": roll.n });
    tr.appendChild(el("td", {}, String(roll.n)));
    tr.appendChild(el("td", {}, String(roll.version)));
    tr.appendChild(el("td", {}, who(roll.seat)));
    tr.appendChild(el("td", { class: "recorded" }, String(roll.value)));
    tr.appendChild(el("td", { class: "derived" }, String(derived[i])));
    tr.appendChild(el("td", {}, t(ok ? "viewer.die_ok" : "viewer.die_bad")));
    tr.addEventListener("click", () => show(roll.version));
    body.appendChild(tr);
  }
  $("#fair-dice-wrap").hidden = !body.childElementCount;
}

// The dice line: how far the check has got, then its verdict.
function drawDiceSummary() {
  const summary = $("#fair-summary");
  const seedOk = $("#fair-seed-status").className === "ok";
  if (derived.length < rolls.length) {
    summary.textContent = t("viewer.dice_checking", { done: derived.length, total: rolls.length });
    summary.className = "muted";
    return;
  }
  const good = derived.filter((die, i) => die === rolls[i].value).length;
  const allOk = good === rolls.length && seedOk;
  summary.textContent = t("viewer.dice_summary", { good, total: rolls.length }) + (allOk ? " ✓" : " ✗");
  summary.className = allOk ? "ok" : "bad";
}

function drawFairness() {
  const f = model.fairness;
  $("#fair-commitment").textContent = f.seed_hash;
  // The exact string the dice are derived from (not JSON-escaped: a `\` or `"` in a
  // seed is shown as itself, so it can be copied to recompute the dice). The quotes
  // around it are drawn by CSS, so they are not part of the text a copy takes, and
  // `white-space: pre-wrap` keeps every space; the length tells trailing ones apart.
  const clientSeed = $("#fair-client-seed");
  clientSeed.textContent = f.client_seed === null ? t("viewer.not_started") : f.client_seed;
  clientSeed.classList.toggle("seed", f.client_seed !== null);
  $("#fair-client-seed-length").textContent = f.client_seed === null ? ""
    : t("viewer.seed_length", { n: f.client_seed.length });
  const status = $("#fair-seed-status");
  const summary = $("#fair-summary");
  $("#fair-dice tbody").textContent = "";
  $("#fair-dice-wrap").hidden = true;
  if (!f.server_seed) {
    $("#fair-seed").textContent = t("viewer.not_revealed");
    status.textContent = "—";
    status.className = "muted";
  } else {
    $("#fair-seed").textContent = f.server_seed;
    const seed = unhex(f.server_seed);
    const hashed = seed === null ? null : hex(sha256(seed));
    const seedOk = hashed !== null && hashed === f.seed_hash.toLowerCase();
    status.textContent = t(seedOk ? "viewer.seed_ok" : "viewer.seed_bad",
                           { hash: hashed === null ? t("viewer.not_hex") : hashed });
    status.className = seedOk ? "ok" : "bad";
  }
  summary.className = "muted";
  if (rolls === null) {
    summary.textContent = rollsError === null ? t("viewer.dice_reading") : t("viewer.dice_failed", { why: rollsError });
  } else if (!f.server_seed) {
    summary.textContent = t("viewer.checkable_later", { n: rolls.length });
  } else {
    appendDice(0, derived.length);
    drawDiceSummary();
  }
}

// The server's verdict: {ok: …} once fetched, {error} when it could not be.
let verdict = null;
function drawAudit() {
  const box = $("#audit");
  if (verdict === null) {
    box.textContent = "…";
    box.className = "muted";
  } else if (verdict.error) {
    box.textContent = t("viewer.audit_none", { why: verdict.error });
    box.className = "muted";
  } else if (verdict.ok) {
    box.textContent = t("viewer.audit_ok", verdict);
    box.className = "ok";
  } else {
    const f = verdict.failure;
    box.textContent = t("viewer.audit_bad",
                        { check: f.check, version: f.version, type: f.event_type, message: f.message });
    box.className = "bad";
  }
}

async function loadAudit() {
  drawAudit();
  try {
    const res = await fetch(`/api/matches/${encodeURIComponent(matchId)}/audit`,
                            { headers: { Accept: "application/json" } });
    const body = await res.json();
    if (!res.ok) throw new Error(body.detail || res.status);
    verdict = body;
  } catch (err) {
    verdict = { error: err.message };
  }
  drawAudit();
}

// --------------------------------------------------------------------------- start
function drawWords() {
  document.title = t("viewer.page_title");
  if (said) message(t(said.key, said.vars), said.kind);
  if (!model) return;
  $("#status").textContent = t(model.status === "finished" ? "viewer.finished" : "viewer.playing");
  $("#board").setAttribute("aria-label", t("spot.board"));
  drawSeats();
  drawEvents();
  drawFairness();
  if (verdict !== null) drawAudit();
  drawAnalysis();
  redraw();
}

async function load() {
  siteHeader();
  keyboardScroll();
  document.title = t("viewer.page_title");
  document.addEventListener("languagechange", drawWords);
  $("#match-id").textContent = matchId;
  $("#download").href = `/api/matches/${encodeURIComponent(matchId)}/replay`;
  $("#audit-link").href = `/api/matches/${encodeURIComponent(matchId)}/audit`;
  // The first answer: the match and the range of the step the address names (the
  // first range when the match has no such step).
  index = fromHash();
  let first;
  try {
    try {
      first = await readRange(Math.max(0, index));
    } catch (err) {
      if (err.status !== 422 || index < RANGE) throw err;
      index = 0;
      first = await readRange(0);
    }
  } catch (err) {
    say("viewer.load_failed", { why: err.message });
    return;
  }
  const { steps: _, ...match } = first;
  model = match;
  if (model.status !== "finished") say("viewer.still_playing", {}, "info");
  $("#scrub").max = String(model.count - 1);
  drawBoardBase();
  drawTimeline();
  $("#viewer").hidden = false;
  drawWords();
  document.body.dataset.ready = "true";
  document.body.dataset.stamps = String(model.stamps.length);
  // After the first drawing: the server's audit, the dice checked here, the analysis.
  loadAudit();
  loadRolls();
  loadAnalysis();
  watchReports();
}

// Completion rates beside the seats, and the report button for a player who sat in
// this match (report_player.js); the seats' player ids come from the match's state.
async function watchReports() {
  let seats = [];
  try {
    seats = (await api("GET", `/api/matches/${encodeURIComponent(matchId)}`)).seats;
  } catch (_) {
    return;
  }
  watchSeats({ list: $("#seats"), seats: () => seats, matchId: () => matchId });
}

// `#N` in the address: step N (first on load, then whenever it is edited or Back is used).
const fromHash = () => {
  const n = parseInt(location.hash.slice(1), 10);
  return Number.isFinite(n) ? n : 0;
};
window.addEventListener("hashchange", () => { if (model) show(fromHash()); });
$("#chances").addEventListener("click", onChartClick);
// A phone turned, a window resized: the chart drawn again at its new width.
if (typeof ResizeObserver === "function") {
  let drawnWidth = 0;
  new ResizeObserver(() => {
    const width = Math.round($("#chances").getBoundingClientRect().width);
    if (!model || !analysis || analysisState !== "ready" || !width || Math.abs(width - drawnWidth) < 8) return;
    drawnWidth = width;
    drawAnalysis();
    redraw();
  }).observe($("#chances"));
}
$("#first").addEventListener("click", () => show(0));
$("#prev").addEventListener("click", () => show(index - 1));
$("#next").addEventListener("click", () => show(index + 1));
$("#last").addEventListener("click", () => show(model.count - 1));
$("#events-earlier").addEventListener("click", () => extendList("earlier"));
$("#events-later").addEventListener("click", () => extendList("later"));
// The list scrolled to its top or its end by the reader's hand: the next range comes by
// itself (not when it scrolls to show a focused button: that button is for it).
{
  const list = $("#events");
  let byHand = 0;
  for (const kind of ["wheel", "touchmove", "keydown"]) {
    list.addEventListener(kind, () => { byHand = Date.now(); }, { passive: true });
  }
  list.addEventListener("scroll", () => {
    if (!model || Date.now() - byHand > 1000) return;
    if (list.scrollTop < 40) extendList("earlier");
    else if (list.scrollHeight - list.scrollTop - list.clientHeight < 40) extendList("later");
  }, { passive: true });
}
$("#timeline").addEventListener("click", (e) => {
  if (!model) return;
  const box = $("#timeline").getBoundingClientRect();
  show(Math.round(((e.clientX - box.left) / box.width) * (model.count - 1)));
});
$("#scrub").addEventListener("input", (e) => show(parseInt(e.target.value, 10)));
document.addEventListener("keydown", (e) => {
  if (!model || e.target === $("#scrub") || e.altKey || e.ctrlKey || e.metaKey) return;
  const keys = { ArrowLeft: index - 1, ArrowRight: index + 1, Home: 0,
                 End: model.count - 1 };
  if (e.key in keys) {
    e.preventDefault();
    show(keys[e.key]);
  }
});
load();
