// The lobby page's script (web/pages/lobby.html).
import { $, el, message } from "./lib/page_common.js";
import { WORDS, lang, t, guest, ApiError, serverNow, errorText, newKey, api, ensureGuest, liveSocket, siteHeader, connectionStatus, optionValueText, rulesSummary, seatLabel, seatWho, onCompletionRates, completionTag, loadCompletionRates } from "./lib/site.js";
import { SETTINGS } from "./lib/settings.js";

// The lobby's own words are its catalogue section (web/i18n/<lang>.json `lobby`).
let options = null;  // GET /api/rules/options
let parties = [];

// -------------------------------------------------------------------- the name
function showMe() {
  const g = guest();
  $("#me").textContent = g ? g.name : "";
  if (g && !$("#name").value) $("#name").value = g.name;
}

// One note under the name at a time (`#name-notes`: each in the same cell, so saying
// another moves nothing): "hint", "change", "made", "saved" or "error" (with its text).
function nameNote(which, text) {
  for (const note of document.querySelectorAll("#name-notes .note")) {
    note.classList.toggle("on", note.dataset.note === which);
  }
  $("#name-error").textContent = which === "error" ? text : "";
  if (which === "error") $("#name").setAttribute("aria-invalid", "true");
  else $("#name").removeAttribute("aria-invalid");
}

// This device's guest for a command: the name typed, or with none the guest there is,
// or a new guest whose name the server makes up in the page's language.
async function withGuest() {
  const known = guest();
  const typed = $("#name").value.trim();
  const g = await ensureGuest(typed);
  showMe();
  if (!known || known.id !== g.id) {
    hello(); refreshTables();  // a new guest: say so
    $("#name").value = g.name;
    if (!typed) nameNote("made");  // the server made the name up: say it can change
  }
  return g;
}

// ------------------------------------------------------------ the party form
function segmented(box, name, choices, checked) {
  box.textContent = "";
  for (const [value, label] of choices) {
    const lab = el("label");
    const input = el("input", { type: "radio", name, value: String(value) });
    input.checked = String(value) === String(checked);
    lab.appendChild(input);
    lab.appendChild(document.createTextNode(label));
    box.appendChild(lab);
  }
}
const chosen = (name) => document.querySelector(`input[name="${name}"]:checked`).value;

function drawForm() {
  const keep = (name, fallback) => {
    const input = document.querySelector(`input[name="${name}"]:checked`);
    return input ? input.value : fallback;
  };
  // The values are the API's own (SETTINGS: domain/settings.py, served with the page).
  const party = SETTINGS.party;
  segmented($("#seats"), "seats", party.seats.map((n) => [n, t("seats_n", { n })]),
            keep("seats", String(party.defaults.seats)));
  segmented($("#preset"), "preset", Object.keys(options.presets).map((p) => [p, t(`preset_${p}`)]),
            keep("preset", options.default));
  segmented($("#limit"), "limit",
            party.turn_limit.map((n) => (n === null ? ["", t("limit_none")] : [n, t("limit_s", { n })])),
            keep("limit", String(party.defaults.turn_limit ?? "")));
  segmented($("#mode"), "mode", [["casual", t("casual")], ["ranked", t("ranked")]], keep("mode", "casual"));
  const current = $("#rules-table tbody").children.length ? formRules() : options.presets[chosen("preset")];
  drawRules(current);
}

function drawRules(values) {
  const body = $("#rules-table tbody");
  body.textContent = "";
  const base = options.presets[options.default];
  for (const key of Object.keys(options.values)) {
    const tr = el("tr", { "data-option": key, "data-changed": t("changed") });
    tr.appendChild(el("td", { class: "name" }, t(`opt.${key}.name`)));
    tr.appendChild(el("td", { class: "text" }, t(`opt.${key}.text`)));
    tr.appendChild(el("td", { class: "default", "data-label": t("rule_default") },
                      optionValueText(key, base[key])));
    const cell = el("td", { class: "setting" });
    const id = `opt-${key}`;
    if (key === "enter_on") {
      const faces = el("span", { class: "faces", role: "group", "aria-label": t(`opt.${key}.name`) });
      for (const face of options.values[key]) {
        const lab = el("label");
        const box = el("input", { type: "checkbox", value: String(face), "data-face": face });
        box.checked = values[key].includes(face);
        lab.appendChild(box);
        lab.appendChild(document.createTextNode(String(face)));
        faces.appendChild(lab);
      }
      cell.appendChild(faces);
    } else {
      const select = el("select", { id, "aria-label": t(`opt.${key}.name`) });
      for (const value of options.values[key]) {
        const option = el("option", { value: JSON.stringify(value) }, optionValueText(key, value));
        option.selected = value === values[key];
        select.appendChild(option);
      }
      cell.appendChild(select);
    }
    tr.appendChild(cell);
    body.appendChild(tr);
  }
  markChanged();
}

// The options as the form holds them (every option spelled out).
function formRules() {
  const rules = {};
  for (const tr of $("#rules-table tbody").children) {
    const key = tr.dataset.option;
    if (key === "enter_on") {
      rules[key] = Array.from(tr.querySelectorAll("input:checked"), (b) => Number(b.value));
    } else {
      rules[key] = JSON.parse(tr.querySelector("select").value);
    }
  }
  return rules;
}

function markChanged() {
  const base = options.presets[options.default];
  const rules = formRules();
  for (const tr of $("#rules-table tbody").children) {
    const key = tr.dataset.option;
    tr.classList.toggle("is-changed", JSON.stringify(rules[key]) !== JSON.stringify(base[key]));
  }
  summarizeRules(rules);
}

// The fold's one line: the preset the options match ("このサイトの初期値（12項目）"),
// else how many differ from the chosen preset ("このサイトの初期値から3項目を変更").
function summarizeRules(rules) {
  const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);
  const keys = Object.keys(options.values);
  const matching = Object.keys(options.presets).find(
    (name) => keys.every((k) => same(options.presets[name][k], rules[k])));
  const summary = $("#rules-summary");
  if (matching) {
    summary.textContent = t("rules_fold", { what: t(`preset_${matching}`), n: keys.length });
    summary.dataset.changed = "0";
  } else {
    const preset = chosen("preset");
    const changed = keys.filter((k) => !same(options.presets[preset][k], rules[k])).length;
    summary.textContent = t("rules_fold_changed", { preset: t(`preset_${preset}`), k: changed });
    summary.dataset.changed = String(changed);
  }
}

const clientSeed = () => newKey().slice(0, 16);

// The form's fields an error can be about (the API's `field`, or the page's own checks),
// and when each is valid again: page_common.js `message` clears the message then.
const FIELDS = {
  enter_on: { field: () => $("#rules-table tr[data-option=enter_on] .faces"),
              valid: () => formRules().enter_on.length > 0 },
};
// An error in the message box, tied to its field when it names one of ours.
function fail(text, field) {
  if (field === "name") { nameNote("error", text); return; }  // said under the name
  const about = FIELDS[field];
  if (field === "enter_on") $("#rules-fold").open = true;  // the field is inside the fold
  message(text, "error", about && { field: about.field(), valid: about.valid });
}

async function createParty(event) {
  event.preventDefault();
  message("");
  const rules = formRules();
  if (!rules.enter_on.length) {
    fail(t("opt.enter_on.name") + ": 1–6", "enter_on");
    return;
  }
  const button = $("#create-button");
  button.disabled = true;
  try {
    await withGuest();
    const limit = chosen("limit");
    const party = await api("POST", "/api/parties", {
      seats: Number(chosen("seats")),
      rules: { preset: chosen("preset"), ...rules },
      turn_limit: limit ? Number(limit) : null,
      ranked: chosen("mode") === "ranked",
      client_seed: clientSeed(),
    }, newKey());
    location.href = `/party/${party.id}`;
  } catch (err) {
    fail(errorText(err), err.field);
    button.disabled = false;
  }
}

// One click: a 4-seat table of our rules, three CPUs, started.
async function playNow() {
  message("");
  const button = $("#play-now");
  button.disabled = true;
  try {
    await withGuest();
    const party = await api("POST", "/api/parties",
                            { seats: 4, rules: { preset: options.default }, client_seed: clientSeed() },
                            newKey());
    for (let i = 0; i < 3; i++) {
      await api("POST", `/api/parties/${party.id}/cpus`, { level: "normal" }, newKey());
    }
    await api("POST", `/api/parties/${party.id}/start`, undefined, newKey());
    location.href = `/party/${party.id}`;
  } catch (err) {
    fail(errorText(err), err.field);
    button.disabled = false;
  }
}

// ------------------------------------------------------------ open parties
function drawParties() {
  const list = $("#parties");
  list.textContent = "";
  $("#no-parties").hidden = parties.length > 0;
  const me = guest();
  for (const p of parties) {
    const hostSeat = p.seats.find((s) => s.player_id === p.host_id);
    const taken = p.seats.filter((s) => s.name !== null).length;
    const li = el("li", { "data-party": p.id });
    li.appendChild(el("span", { class: "who" }, t("host_of", { name: hostSeat ? hostSeat.name : "?" })));
    const rate = completionTag(p.host_id);
    if (rate) li.appendChild(rate);
    li.appendChild(el("span", { class: "tag" }, t("seats_free", { taken, n: p.seats.length })));
    if (p.ranked) li.appendChild(el("span", { class: "tag ranked" }, t("ranked")));
    if (p.turn_limit) li.appendChild(el("span", { class: "tag" }, t("limit_s", { n: p.turn_limit })));
    li.appendChild(el("span", { class: "rules" }, options ? rulesSummary(p.rules, options) : ""));
    const mine = me && p.seats.some((s) => s.player_id === me.id);
    const act = mine
      ? el("a", { class: "button secondary act", href: `/party/${p.id}` }, t("open_table"))
      : el("button", { type: "button", class: "act", "data-join": p.id }, t("join"));
    if (!mine && taken === p.seats.length) act.disabled = true;  // full: the host starts soon
    if (!mine) act.addEventListener("click", () => join(p.id, act));
    li.appendChild(act);
    list.appendChild(li);
  }
}

async function join(partyId, button) {
  message("");
  button.disabled = true;
  try {
    await withGuest();
    await api("POST", `/api/parties/${partyId}/join`, { client_seed: clientSeed() }, newKey());
    location.href = `/party/${partyId}`;
  } catch (err) {
    fail(errorText(err), err.field);
    button.disabled = false;
  }
}

// ------------------------------------------------------------ quick play
// The pools of docs/pools.md: one press enters (`enterPool`), a second leaves
// (`leavePool`); the lobby socket says hello with the guest's token (the entry lives
// while a lobby socket of the guest is open), then sends the guest's `pool` frames
// (waiting or not), the `pools` counts, and `seated` when the table formed.
let lobby = null;         // the lobby socket (liveSocket)
let entry = null;         // the guest's pool entry: {pool, entered_at, waiting, window, cpu_after, rating}
let clockSkew = 0;        // server seconds minus ours, from the last `pool` frame's `now`
let clockTimer = null;    // redraws the waiting time once a second while waiting
let poolBusy = false;     // a press is on its way
let counts = null;        // the last `pools` frame: {online, pools: [...]}

const poolName = (pool) => {
  const [n, mode] = pool.split("-");
  return t("pool_name", { n, mode: t(`pool_mode.${mode}`) });
};
const chosenPool = () => `${chosen("q_seats")}-${chosen("q_mode")}`;

function drawQuickChoices() {
  const keep = (name, fallback) => {
    const input = document.querySelector(`input[name="${name}"]:checked`);
    return input ? input.value : fallback;
  };
  const pool = SETTINGS.pool;  // the API's values (domain/settings.py)
  segmented($("#q-seats"), "q_seats", pool.seats.map((n) => [n, t("seats_n", { n })]),
            keep("q_seats", String(pool.defaults.seats)));
  segmented($("#q-mode"), "q_mode", [["casual", t("casual")], ["ranked", t("ranked")]], keep("q_mode", "casual"));
  segmented($("#q-wait"), "q_wait",
            pool.cpu_after.map((s) => (s === null ? ["people", t("people_only")] : [s, t("limit_s", { n: s })])),
            keep("q_wait", String(pool.defaults.cpu_after ?? "people")));
  showQuickChoices();
}

// Ranked pools take no CPU wait: the choice goes, the note on pairing by rating comes.
function showQuickChoices() {
  const ranked = chosen("q_mode") === "ranked";
  $("#q-wait-field").hidden = ranked;
  $("#q-ranked-note").hidden = !ranked;
}

const twoDigits = (n) => String(n).padStart(2, "0");
function waited() {
  const seconds = Math.max(0, Math.floor(Date.now() / 1000 + clockSkew - entry.entered_at));
  return `${Math.floor(seconds / 60)}:${twoDigits(seconds % 60)}`;
}

// The quick-play card as `entry` says: the button's word, the time waited, how many
// wait, the rating range or the CPU wait; the choices locked while waiting.
function drawQuick() {
  const button = $("#quick-button");
  const waiting = entry !== null;
  button.textContent = t(poolBusy ? (waiting ? "quick_leaving" : "quick_entering")
                                  : (waiting ? "quick_leave" : "quick_enter"));
  button.classList.toggle("waiting", waiting);
  button.disabled = poolBusy;
  $("#quick-choices").disabled = waiting || poolBusy;
  $("#quick-wait").hidden = !waiting;
  document.body.dataset.pool = waiting ? entry.pool : "";
  drawCountsText();
  clearInterval(clockTimer);
  clockTimer = null;
  if (!waiting) return;
  // Said from the reader's side: the others waiting, not a count that holds the reader.
  const others = Math.max(0, (entry.waiting ?? 1) - 1);
  const othersText = others === 0 ? t("quick_others_none")
    : others === 1 ? t("quick_others_one") : t("quick_others", { n: others });
  const tick = () => {
    $("#quick-clock").textContent = t("quick_waiting", { time: waited(), others: othersText });
  };
  tick();
  clockTimer = setInterval(tick, 1000);
  let detail;
  if (entry.pool.endsWith("ranked")) {
    const w = Math.round(entry.window ?? 0);
    detail = typeof entry.rating === "number"
      ? t("quick_window", { low: Math.round(entry.rating - w), high: Math.round(entry.rating + w) })
      : t("quick_window_pm", { w });
  } else {
    detail = entry.cpu_after ? t("quick_cpu_after", { s: entry.cpu_after }) : t("quick_people_only");
  }
  $("#quick-detail").textContent = detail;
}

// A change of state said once to a screen reader (the clock itself is not read out).
function sayQuick(text) { $("#quick-said").textContent = text; }

function quickError(text) {
  const box = $("#quick-error");
  box.textContent = text || "";
  box.hidden = !text;
}

// When ranked play reopens, in the page's language: "18:05", or with the day if not today.
function untilText(iso) {
  const when = new Date(iso);
  if (Number.isNaN(when.getTime())) return iso || "?";
  const today = new Date().toDateString() === when.toDateString();
  const fmt = today ? { hour: "numeric", minute: "2-digit" }
    : { month: "numeric", day: "numeric", hour: "numeric", minute: "2-digit" };
  return new Intl.DateTimeFormat(lang, fmt).format(when);
}

// An error of enterPool or leavePool in words (docs/pools.md lists them).
function poolErrorText(err) {
  if (!(err instanceof ApiError)) return errorText(err);
  const body = err.body || {};
  if (err.code === "ranked_paused") {
    const suspended = body.reason === "suspended" || /suspend|operator/i.test(err.message || "");
    return t(suspended ? "pool_errors.ranked_suspended" : "pool_errors.ranked_paused",
             { until: untilText(body.until) });
  }
  const known = WORDS.pool_errors[err.code];
  return known || errorText(err);
}

// This guest is online and holds their pool entry while this socket is open.
function hello(send) {
  const g = guest();
  const to = send || (lobby && lobby.send);
  if (g && to) to({ type: "hello", token: g.token });
}

async function pressQuick() {
  message("");
  quickError("");
  if (poolBusy) return;
  poolBusy = true;
  const leaving = entry !== null;
  drawQuick();
  try {
    if (leaving) {
      const pool = entry.pool;
      try {
        await api("DELETE", `/api/pools/${pool}/entry`);
      } catch (err) {
        if (!(err instanceof ApiError) || err.code !== "not_waiting") throw err;
      }
      entry = null;
      sayQuick(t("quick_left"));
    } else {
      await withGuest();
      const pool = chosenPool();
      const wait = chosen("q_wait");
      const body = { client_seed: clientSeed() };
      if (pool.endsWith("casual")) body.cpu_after = wait === "people" ? null : Number(wait);
      const made = await api("POST", `/api/pools/${pool}/entry`, body);
      clockSkew = (serverNow() - Date.now()) / 1000;  // the Date header's clock, till a frame's `now`
      entry = { ...made, pool: made.pool || pool };
      sayQuick(t("quick_waiting_in", { pool: poolName(entry.pool) }));
    }
  } catch (err) {
    if (err.field === "name") fail(errorText(err), err.field);
    else quickError(poolErrorText(err));
    if (err instanceof ApiError && err.code === "seated_elsewhere") refreshTables();
  } finally {
    poolBusy = false;
    drawQuick();
  }
}

// The guest's pool, as the server holds it (`pool` frame; `pool: null`: not waiting).
function heardPool(frame) {
  if (typeof frame.now === "number") clockSkew = frame.now - Date.now() / 1000;
  const before = entry;
  if (!frame.pool) {
    entry = null;
  } else {
    const rating = before && before.pool === frame.pool ? before.rating : frame.rating;
    entry = { pool: frame.pool, entered_at: frame.entered_at, waiting: frame.waiting,
              window: frame.window, cpu_after: frame.cpu_after, rating };
    if (!before) sayQuick(t("quick_waiting_in", { pool: poolName(entry.pool) }));
    // The choices show the pool waited in (a reload, another tab).
    const [seats, mode] = entry.pool.split("-");
    for (const [name, value] of [["q_seats", seats], ["q_mode", mode]]) {
      const input = document.querySelector(`input[name="${name}"][value="${value}"]`);
      if (input) input.checked = true;
    }
    showQuickChoices();
  }
  if (!poolBusy) drawQuick();
}

// How many are online and wait in each pool (`pools` frame).
function drawCounts() {
  drawCountsText();
  if (entry && counts && Array.isArray(counts.pools)) {
    const mine = counts.pools.find((p) => p.pool === entry.pool);
    if (mine && mine.waiting !== entry.waiting) { entry.waiting = mine.waiting; drawQuick(); }
  }
}

// The counts' line as `counts` and `entry` say it now: drawn again when either changes
// (a `pools` frame may come before the answer that says the reader waits, or after).
function drawCountsText() {
  const box = $("#pool-counts");
  if (!counts || !Array.isArray(counts.pools)) { box.hidden = true; return; }
  // `online` counts the reader (the lobby socket adds them when not counted yet); a
  // pool the reader waits in says the reader is among its count.
  const parts = [t("online_n", { n: counts.online ?? 1 })];
  for (const p of counts.pools) {
    const mine = entry && entry.pool === p.pool && p.waiting > 0;
    parts.push(t(mine ? "pool_waiting_you" : "pool_waiting", { pool: poolName(p.pool), n: p.waiting }));
  }
  box.textContent = parts.join(" ・ ");
  box.hidden = false;
}

function seated(frame) {
  clearInterval(clockTimer);
  sayQuick(t("quick_seated"));
  $("#quick-clock").textContent = t("quick_seated");
  location.href = frame.match_id ? `/match/${frame.match_id}` : `/party/${frame.party_id}`;
}

// ------------------------------------------------------------ your tables
// The parties and matches this device's guest sits at (`myTables`), each one press
// away. Read at the start, when a lobby frame touches one of them, after a refusal
// that names one (seated_elsewhere), and when the page is shown again.
let myTables = [];
let tablesAsked = 0;  // the answer to the latest request wins

async function refreshTables() {
  const g = guest();
  if (!g) { myTables = []; drawTables(); return; }
  const asked = ++tablesAsked;
  try {
    const answer = await api("GET", "/api/players/me/tables");
    if (asked !== tablesAsked) return;
    myTables = answer.tables;
  } catch (_) {
    if (asked !== tablesAsked) return;
    myTables = [];  // an unknown guest (401) or no answer: nothing to return to
  }
  drawTables();
}

function tableState(table) {
  if (table.status === "open") {
    const taken = table.seats.filter((s) => s.name !== null).length;
    return t("table_open", { taken, n: table.seats.length });
  }
  return t(table.status === "playing" ? "table_playing" : "table_finished");
}

const tableName = (table) => {
  const host = table.seats.find((s) => s.player_id === table.host_id);
  return t("host_of", { name: host ? host.name : "?" });
};
const seatedNames = (table) => table.seats.filter((s) => s.name !== null).map(seatLabel).join("・");

// A match of the guest's in play goes first on the page, one big press away ("Return to
// your match"); the other tables (open parties, matches just over) under quick play.
function drawReturn(playing) {
  const list = $("#return-list");
  list.textContent = "";
  $("#return").hidden = playing.length === 0;
  for (const table of playing) {
    const name = tableName(table);
    const li = el("li", { "data-table": table.party_id, "data-status": table.status });
    const me = guest();
    const against = table.seats.filter((s) => s.name !== null && !(me && s.player_id === me.id));
    li.appendChild(el("span", { class: "who" }, t("return_vs", { names: against.map(seatLabel).join("・") })));
    if (table.ranked) li.appendChild(el("span", { class: "tag ranked" }, t("ranked")));
    li.appendChild(el("a", { class: "button", href: table.href, "aria-label": t("return_match_to", { table: name }) },
                      t("return_match")));
    list.appendChild(li);
  }
}

function drawTables() {
  const playing = myTables.filter((table) => table.status === "playing");
  const others = myTables.filter((table) => table.status !== "playing");
  drawReturn(playing);
  const list = $("#my-tables");
  list.textContent = "";
  $("#mine").hidden = others.length === 0;
  document.body.dataset.tables = String(myTables.length);
  document.body.dataset.drawn = "true";
  for (const table of others) {
    const name = tableName(table);
    const li = el("li", { "data-table": table.party_id, "data-status": table.status });
    li.appendChild(el("span", { class: "who" }, name));
    if (table.ranked) li.appendChild(el("span", { class: "tag ranked" }, t("ranked")));
    li.appendChild(el("span", { class: "state" }, tableState(table)));
    li.appendChild(el("span", { class: "muted small" }, seatedNames(table)));
    const go = el("a", { class: "button act", href: table.href, "aria-label": t("return_to", { table: name }) },
                  t("return"));
    li.appendChild(go);
    list.appendChild(li);
  }
}

// Whether a `parties` frame may change the guest's tables: a party of theirs in it that
// changed, or one of their open parties gone from it (started or closed).
function touchesMine(list) {
  const g = guest();
  if (!g) return false;
  const listed = new Map(list.map((p) => [p.id, p]));
  for (const p of list) {
    if (!p.seats.some((s) => s.player_id === g.id)) continue;
    const known = myTables.find((m) => m.party_id === p.id);
    if (!known || known.status !== "open") return true;
    const before = parties.find((q) => q.id === p.id);
    if (!before || before.version !== p.version) return true;
  }
  return myTables.some((m) => m.status === "open" && !listed.has(m.party_id));
}

// ------------------------------------------------------------ live matches
// The matches being played now, from the lobby socket's `matches` frames (as
// `GET /api/matches/live`): who plays (each seat named as the table names it, site.js
// `seatWho`) and how many of its pieces are home, ranked or not, how long ago it began,
// and a Watch link. A row is kept while its match is listed and only its words change,
// so a Watch link that has the keyboard's focus keeps it through the updates.
let live = [];
let liveTimer = null;

function liveInfo(m) {
  const info = el("span", { class: "info" });
  const seats = el("ul", { class: "seats" });
  for (const s of m.seats) {
    const item = el("li", { "data-seat": s.seat });
    item.appendChild(el("span", { class: "name" }, seatWho(s)));
    item.appendChild(el("span", { class: "goal" }, t("live_goal", { n: s.goal })));
    seats.appendChild(item);
  }
  info.appendChild(seats);
  if (m.ranked) info.appendChild(el("span", { class: "tag ranked" }, t("ranked")));
  if (m.arena_id) info.appendChild(el("span", { class: "tag" }, t("arena_match")));
  const minutes = Math.floor((serverNow() - Date.parse(m.started_at)) / 60000);
  info.appendChild(el("span", { class: "when" },
                      minutes < 1 ? t("live_started_now") : t("live_started", { m: minutes })));
  return info;
}

function drawLive() {
  const list = $("#live-list");
  const rows = new Map([...list.children].map((li) => [li.dataset.match, li]));
  let before = list.firstElementChild;
  for (const m of live) {
    let li = rows.get(m.match_id);
    rows.delete(m.match_id);
    if (!li) {
      li = el("li", { "data-match": m.match_id });
      li.appendChild(el("span", { class: "info" }));
      li.appendChild(el("a", { class: "button secondary act", href: m.href }));
    }
    li.dataset.ranked = String(m.ranked);
    li.replaceChild(liveInfo(m), li.querySelector(".info"));
    const watch = li.querySelector("a");
    watch.textContent = t("watch");
    watch.setAttribute("aria-label", t("live_watch_label", { who: m.seats.map(seatLabel).join(t("live_sep")) }));
    if (li !== before) list.insertBefore(li, before);
    before = li.nextElementSibling;
  }
  for (const gone of rows.values()) gone.remove();
  $("#no-live").hidden = live.length > 0;
  document.body.dataset.live = String(live.length);
  // "started 3 min ago" moves on by itself while matches are listed.
  if (live.length && !liveTimer) liveTimer = setInterval(drawLive, 30000);
  if (!live.length && liveTimer) { clearInterval(liveTimer); liveTimer = null; }
}

// ------------------------------------------------------------------- start
async function start() {
  siteHeader();
  showMe();
  $("#name-form").addEventListener("submit", async (e) => {
    e.preventDefault();
    message("");
    const typed = $("#name").value.trim();
    if (!typed && guest()) { nameNote("error", t("name_needed")); return; }
    try {
      const before = guest();
      await withGuest();
      if (typed || before) nameNote("saved");
    } catch (err) {
      fail(errorText(err), err.field);
    }
  });
  $("#party-form").addEventListener("submit", createParty);
  $("#party-form").addEventListener("change", (e) => {
    if (e.target.name === "preset") drawRules(options.presets[e.target.value]);
    else markChanged();
  });
  $("#play-now").addEventListener("click", playNow);
  $("#quick-button").addEventListener("click", pressQuick);
  $("#quick-choices").addEventListener("change", () => { quickError(""); showQuickChoices(); });
  document.addEventListener("visibilitychange", () => {
    if (document.visibilityState === "visible") refreshTables();
  });
  onCompletionRates(() => { drawParties(); });
  $("#name").addEventListener("input", () => {
    // "Enter a name" stays until a name is typed (spaces are none).
    const typed = $("#name").value.trim();
    const said = document.querySelector("#name-notes .note.on");
    if (!typed && said && said.dataset.note === "error") return;
    const g = guest();
    nameNote(g && typed && typed !== g.name ? "change" : "hint");
  });
  document.addEventListener("languagechange", () => {
    drawForm(); drawParties(); drawQuickChoices(); drawQuick(); drawCounts(); drawTables(); drawLive();
  });
  drawQuickChoices();
  drawQuick();
  drawLive();
  refreshTables();
  // The page is drawn once "your tables" are known; if that read hangs, drawn anyway.
  setTimeout(() => { document.body.dataset.drawn = "true"; }, 2500);
  try {
    options = await api("GET", "/api/rules/options");
  } catch (err) {
    message(errorText(err));
    return;
  }
  drawForm();
  lobby = liveSocket({
    url: () => "/ws/lobby",
    onStatus: connectionStatus,
    onOpen: hello,
    onFrame: (frame) => {
      if (frame.type === "parties") {
        const refresh = touchesMine(frame.parties);
        parties = frame.parties;
        loadCompletionRates(parties.map((p) => p.host_id));
        drawParties();
        document.body.dataset.parties = String(parties.length);
        if (refresh) refreshTables();
      } else if (frame.type === "pools") {
        counts = frame;
        drawCounts();
      } else if (frame.type === "pool") {
        heardPool(frame);
      } else if (frame.type === "seated") {
        seated(frame);
      } else if (frame.type === "matches") {
        // A match of the guest's that was listed and is gone has ended: "your tables"
        // are read again, so "Return to your match" does not outlive it.
        const now = new Set(frame.matches.map((m) => m.match_id));
        const ended = live.some((m) => !now.has(m.match_id)
          && myTables.some((table) => table.status === "playing" && table.match_id === m.match_id));
        live = frame.matches;
        drawLive();
        if (ended) refreshTables();
      }
    },
  });
  document.body.dataset.ready = "true";
}
start();
