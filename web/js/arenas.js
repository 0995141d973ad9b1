// The arenas page's script (web/pages/arenas.html).
import { $, el, message, keyboardScroll } from "./lib/page_common.js";
import { WORDS, lang, t, guest, ApiError, serverNow, errorText, newKey, api, ensureGuest, liveSocket, siteHeader, connectionStatus } from "./lib/site.js";
import { SETTINGS } from "./lib/settings.js";

// The arena pages' own words are the catalogue's `arenas` section (web/i18n/<lang>.json;
// the table's few arena words and the header's link are in `common`).

const path = location.pathname.split("/").filter(Boolean);
const arenaId = path[0] === "tournament" ? decodeURIComponent(path[1] || "") : null;

// ------------------------------------------------------------------ shared
const twoDigits = (n) => String(n).padStart(2, "0");
// "12:34", or "1:02:03" past an hour.
function clockText(seconds) {
  const s = Math.max(0, Math.ceil(seconds));
  const h = Math.floor(s / 3600), m = Math.floor((s % 3600) / 60);
  return h ? `${h}:${twoDigits(m)}:${twoDigits(s % 60)}` : `${m}:${twoDigits(s % 60)}`;
}
// A moment in the page's language: "20:00", or with the day when not today.
function whenText(iso) {
  const when = new Date(iso);
  if (Number.isNaN(when.getTime())) return iso || "?";
  const today = new Date().toDateString() === when.toDateString();
  const fmt = today ? { hour: "numeric", minute: "2-digit" }
    : { month: "numeric", day: "numeric", hour: "numeric", minute: "2-digit" };
  return new Intl.DateTimeFormat(lang, fmt).format(when);
}
const scoreText = (n) => (Number.isInteger(n) ? String(n) : (Math.round(n * 10) / 10).toString());
// The server's clock (`now` of a view, or the Date header of the last answer) minus ours.
let skew = 0;
const now = () => Date.now() + skew;
const secondsTo = (iso) => (Date.parse(iso) - now()) / 1000;
// The settings of an arena as tags: 4 players · BGA · 30 s a turn · 20 min.
function arenaTags(a) {
  return [t("seats_n", { n: a.seats }), t(`preset_${a.rules}`), t("limit_turn", { n: a.turn_limit }),
          t("minutes_n", { n: a.minutes })];
}
function errorWords(err) {
  if (!(err instanceof ApiError)) return errorText(err);
  const body = err.body || {};
  if (err.code === "ranked_paused") {
    const suspended = body.reason === "suspended" || /suspend|operator/i.test(err.message || "");
    return t(suspended ? "arena_errors.ranked_suspended" : "arena_errors.ranked_paused",
             { until: whenText(body.until) });
  }
  if (err.status === 404) return t("arena_errors.not_found");
  if (err.field === "name" && err.message && /arena|tournament/i.test(err.message)) return t("arena_errors.bad_name");
  return WORDS.arena_errors[err.code] || errorText(err);
}
const clientSeed = () => newKey().slice(0, 16);
// The message box goes where the press it answers was (the arena's buttons, the form's),
// so that an answer never pushes the page down above the player; a page that could not
// be read at all says so at the top.
function messageAt(slot) {
  if ($("#message").parentElement !== slot) slot.appendChild($("#message"));
}
// An arena's name in the page's language: a schedule's arena may carry its title in
// each language (`title`: {"en", "ja"}; a language it lacks reads the English); else the
// one name it was created with.
const arenaName = (a) => (a.title && (a.title[lang] || a.title.en)) || a.name;

// Draw `box` again with `draw` only when `content` (its data, in the page's language)
// changed, so that a list read again every few seconds (or a frame a second) leaves the
// page alone; the element that had the keyboard focus in it has it again afterwards (the
// same row's same control), so Tab goes on from where it was.
const drawn = new Map();
function redraw(box, content, draw) {
  const key = lang + JSON.stringify(content);
  if (drawn.get(box) === key) return;
  drawn.set(box, key);
  const focused = document.activeElement;
  let row = null, which = null;
  if (focused && box.contains(focused) && focused !== box) {
    const holder = focused.closest("[data-row]");
    if (holder) {
      row = holder.dataset.row;
      which = Array.from(holder.querySelectorAll("a, button")).indexOf(focused);
    }
  }
  draw();
  if (row !== null) {
    const holder = box.querySelector(`[data-row="${CSS.escape(row)}"]`);
    const again = holder && holder.querySelectorAll("a, button")[which];
    if (again) again.focus({ preventScroll: true });
  }
}

// --------------------------------------------------------------- the list
let listing = null;      // GET /api/tournaments

async function readList() {
  try {
    listing = await api("GET", "/api/tournaments");
    if ($("#message").parentElement === $("#message-top")) message("");  // read again: gone
    skew = serverNow() - Date.now();
    document.body.dataset.listed = String(listing.upcoming.length + listing.live.length + listing.finished.length);
    drawList();
  } catch (err) {
    if (!listing) { messageAt($("#message-top")); message(errorText(err)); }
  }
}

function arenaRow(a, kind) {
  const li = el("li", { "data-arena": a.tournament_id, "data-status": a.status, "data-row": a.tournament_id });
  li.appendChild(el("span", { class: "who" }, arenaName(a)));
  const when = el("span", { class: "when" });
  if (kind === "live") when.dataset.ends = a.ends_at;
  if (kind === "upcoming") when.dataset.starts = a.starts_at;
  li.appendChild(when);
  const what = [...arenaTags(a)];
  if (kind === "upcoming") what.push(t("starts_at", { when: whenText(a.starts_at) }));
  if (kind === "live") {
    what.push(t("players_n", { n: a.players }));
    if (a.leader) what.push(t("leader", { name: a.leader }));
  }
  if (kind === "finished") {
    if (a.status === "cancelled") when.textContent = t("cancelled_tag");
    else when.textContent = a.leader ? t("winner", { name: a.leader }) : t(a.players ? "no_winner" : "nobody");
  }
  // Each fact whole on its line ("20分" never split), the line breaking between them.
  const facts = el("span", { class: "what" });
  what.forEach((word, i) => {
    if (i) facts.appendChild(document.createTextNode(" · "));
    facts.appendChild(el("span", { class: "fact" }, word));
  });
  li.appendChild(facts);
  li.appendChild(el("a", { class: `button act${kind === "live" ? "" : " secondary"}`,
                           href: `/tournament/${a.tournament_id}`,
                           "aria-label": t("open_named", { name: arenaName(a) }) }, t("open_arena")));
  return li;
}

function drawList() {
  if (!listing) return;
  for (const kind of ["live", "upcoming", "finished"]) {
    const box = $(`#${kind}`);
    redraw(box, listing[kind], () => {
      const list = box.querySelector("ul");
      list.textContent = "";
      for (const a of listing[kind] || []) list.appendChild(arenaRow(a, kind));
      box.querySelector(".empty").hidden = (listing[kind] || []).length > 0;
    });
  }
  tickList();
}

// The countdowns and times left, once a second (not read out: the list is not live).
function tickList() {
  for (const when of document.querySelectorAll("#arena-list [data-starts]")) {
    when.textContent = t("starts_in", { time: clockText(secondsTo(when.dataset.starts)) });
  }
  for (const when of document.querySelectorAll("#arena-list [data-ends]")) {
    when.textContent = t("time_left", { time: clockText(secondsTo(when.dataset.ends)) });
  }
}

function segmented(box, name, choices, checked) {
  const before = document.querySelector(`input[name="${name}"]:checked`);
  const value = before ? before.value : String(checked);
  box.textContent = "";
  for (const [v, label] of choices) {
    const lab = el("label");
    const input = el("input", { type: "radio", name, value: String(v) });
    input.checked = String(v) === value;
    lab.append(input, document.createTextNode(label));
    box.appendChild(lab);
  }
}
const chosen = (name) => document.querySelector(`input[name="${name}"]:checked`).value;

function drawCreateForm() {
  // The values are the API's own (SETTINGS: domain/settings.py, served with the page).
  const arenaSettings = SETTINGS.arena, first = arenaSettings.defaults;
  segmented($("#c-seats"), "c_seats", arenaSettings.seats.map((n) => [n, t("seats_n", { n })]), first.seats);
  segmented($("#c-rules"), "c_rules", arenaSettings.rules.map((r) => [r, t(`preset_${r}`)]), first.rules);
  segmented($("#c-limit"), "c_limit", arenaSettings.turn_limit.map((n) => [n, t("limit_s", { n })]), first.turn_limit);
  segmented($("#c-minutes"), "c_minutes", arenaSettings.minutes.map((n) => [n, t("minutes_n", { n })]), first.minutes);
  segmented($("#c-starts"), "c_starts", [[0, t("start_now")], [300, t("start_in_min", { n: 5 })],
                                        [900, t("start_in_min", { n: 15 })]], 300);
  $("#create-name-field").hidden = !!guest();
  suggestArenaName();
}
// The arena's name is filled in for everyone, in the page's language: "<name>'s arena"
// from the saved guest's name or the one being typed, else "Private arena"; a name the
// visitor typed themselves is theirs and stays.
function suggestArenaName() {
  const g = guest();
  const who = g ? g.name : $("#create-me").value.trim();
  const name = $("#arena-name");
  if (!name.value || name.dataset.auto === name.value) {
    name.value = who ? t("arena_name_default", { name: who }) : t("arena_name_plain");
    name.dataset.auto = name.value;
  }
}

async function createArena(event) {
  event.preventDefault();
  messageAt($("#create-note"));
  message("");
  const button = $("#create-button");
  const nameField = $("#arena-name");
  const name = nameField.value.trim();
  if (!guest() && !$("#create-me").value.trim()) {
    const field = $("#create-me");
    field.focus();
    message(t("name_needed"), "error", { field, valid: () => !!field.value.trim() });
    return;
  }
  if (!name) {
    nameField.focus();
    message(t("arena_errors.bad_name"), "error", { field: nameField, valid: () => !!nameField.value.trim() });
    return;
  }
  button.disabled = true;
  button.textContent = t("creating");
  try {
    await ensureGuest($("#create-me").value);
    const made = await api("POST", "/api/tournaments", {
      name, seats: Number(chosen("c_seats")), rules: chosen("c_rules"), turn_limit: Number(chosen("c_limit")),
      minutes: Number(chosen("c_minutes")), starts_in: Number(chosen("c_starts")),
    }, newKey());
    location.href = `/tournament/${made.tournament_id}`;
  } catch (err) {
    message(errorWords(err), "error", err.field === "name" ? { field: nameField } : undefined);
    button.disabled = false;
    button.textContent = t("create");
  }
}

function startList() {
  $("#arena-list").hidden = false;
  document.title = `${t("arenas")} — ${t("site")}`;
  drawCreateForm();
  $("#create-form").addEventListener("submit", createArena);
  $("#create-me").addEventListener("input", suggestArenaName);
  document.addEventListener("languagechange", () => {
    document.title = `${t("arenas")} — ${t("site")}`;
    drawCreateForm();
    drawList();
  });
  readList().then(() => { document.body.dataset.ready = "true"; });
  // The list is read again every few seconds while the page is shown; the clocks tick.
  setInterval(() => { if (document.visibilityState === "visible") readList(); }, 5000);
  setInterval(tickList, 1000);
}

// -------------------------------------------------------------- one arena
let arena = null;        // the latest ArenaView
let socket = null;
let busy = false;        // a join / pause / continue on its way
let lastSaid = "";       // the last state said to a screen reader
// The table this page must not send the player back to: the one they came from (the
// table's "back to the arena"), else the one they were playing at when the page opened.
// A later view that seats them at another table takes them there (a `paired` frame
// missed while they were away).
const cameFrom = sessionStorage.getItem("ludo.arenaFrom") || null;
sessionStorage.removeItem("ludo.arenaFrom");
let baseline = cameFrom;
let baselineSet = cameFrom !== null;
let leaving = false;

const over = () => arena && ["ended", "finished", "cancelled"].includes(arena.status);
const you = () => (arena && arena.you && arena.you.state !== "out" ? arena.you : null);

function say(text) {
  if (text && text !== lastSaid) {
    lastSaid = text;
    $("#said").textContent = text;
  }
}

function goToTable(partyId) {
  if (leaving) return;
  leaving = true;
  const words = t("paired");
  $("#you-state").textContent = words;
  say(words);
  clearInterval(arenaTimer);
  // A moment for the words to be read, then the table.
  setTimeout(() => { location.href = `/party/${partyId}`; }, 600);
}

function heardArena(view) {
  // A socket frame folded before the answer to the player's last command can arrive after
  // it (the socket's frames are throttled): the older view is dropped, or a pause would
  // look undone and its buttons offer the wrong command.
  if (arena && arena.tournament_id === view.tournament_id && view.version < arena.version) return;
  arena = view;
  if (typeof view.now === "string") skew = Date.parse(view.now) - Date.now();
  document.body.dataset.status = view.status;
  document.body.dataset.you = you() ? you().state : "out";
  const mine = you();
  if (mine && mine.state === "playing" && mine.party_id) {
    if (!baselineSet) { baseline = mine.party_id; baselineSet = true; }
    else if (mine.party_id !== baseline) { drawArena(); goToTable(mine.party_id); return; }
  } else if (view.you) {
    baselineSet = true;  // known not to be playing: any table from now on is new
  }
  drawArena();
}

function drawClock() {
  if (!arena) return;
  const box = $("#clock");
  box.dataset.status = arena.status;
  let text;
  if (arena.status === "upcoming") text = t("status.upcoming", { time: clockText(secondsTo(arena.starts_at)) });
  else if (arena.status === "running") text = t("status.running", { time: clockText(secondsTo(arena.ends_at)) });
  else if (arena.status === "cancelled") text = t("status.cancelled", { reason: (arena.cancelled && arena.cancelled.reason) || "" });
  else text = t(`status.${arena.status}`);
  box.textContent = text;
  $("#clock-detail").textContent = arena.status === "upcoming"
    ? `${t("starts_at", { when: whenText(arena.starts_at) })} · ${t("ends_at", { when: whenText(arena.ends_at) })}`
    : arena.status === "running" ? t("ends_at", { when: whenText(arena.ends_at) }) : "";
}

// Over for good: finished or cancelled (an ended arena still has matches running).
const closed = () => arena && ["finished", "cancelled"].includes(arena.status);

function youWords() {
  const mine = you();
  if (!mine) return over() ? t("you_out_over") : t("you_out");
  if (closed()) return t("you_over");
  if (mine.state === "playing") return t("you_playing");
  if (over()) return t("you_ended");
  if (mine.state === "paused") return t("you_paused");
  if (arena.status === "upcoming") return t("you_upcoming");
  return t("you_waiting");
}
// "You: rank 2, 4 points", once the player is in the standings.
function youScore() {
  const mine = you();
  return mine && typeof mine.rank === "number"
    ? t("you_score", { rank: mine.rank, score: scoreText(mine.score || 0) }) : "";
}

function drawYou() {
  const mine = you();
  const state = $("#you-state");
  state.dataset.you = mine ? mine.state : "out";
  if (!leaving) state.textContent = youWords();
  $("#you-score").textContent = youScore();
  $("#you-score").hidden = !youScore();
  const open = arena.status === "upcoming" || arena.status === "running";
  $("#join").hidden = !open || !!mine;
  $("#join-form").hidden = $("#join").hidden || !!guest();
  $("#pause").hidden = !open || !mine || mine.state !== "waiting";
  $("#continue").hidden = !open || !mine || mine.state !== "paused";
  const table = $("#to-table");
  table.hidden = !mine || mine.state !== "playing" || !mine.party_id;
  if (mine && mine.party_id) table.href = `/party/${mine.party_id}`;
  for (const id of ["#join", "#pause", "#continue"]) $(id).disabled = busy;
  $("#join").textContent = t(busy && !mine ? "joining" : "join_arena");
  if (!leaving) say(state.textContent);  // each change of state heard once, not the clock
  $("#share").hidden = !arena.private || over();
  $("#share-link").value = location.origin + `/tournament/${arena.tournament_id}`;
  // The creator of a private arena may cancel it, saying why (the others read it).
  $("#cancel-form").hidden = !(arena.you && arena.you.creator) || over();
  $("#cancel").disabled = busy;
}

function drawStandings() {
  redraw($("#standings-card"), [arena.standings, arena.status, (guest() || {}).id], drawStandingsNow);
}
function drawStandingsNow() {
  const body = $("#standings tbody");
  body.textContent = "";
  const g = guest();
  for (const s of arena.standings) {
    const tr = el("tr", { "data-player": s.player_id, "data-state": s.state, "data-score": String(s.score) });
    if (g && s.player_id === g.id) tr.classList.add("me");
    tr.appendChild(el("td", { class: "rank" }, t("rank_n", { n: s.rank })));
    const name = el("td");
    name.appendChild(el("span", { class: "name" }, s.name + (g && s.player_id === g.id ? t("you_mark") : "")));
    if (!closed()) name.appendChild(el("span", { class: `sub st-${s.state}` }, t(`st.${s.state}`)));
    tr.appendChild(name);
    const score = el("td", { class: "score" }, scoreText(s.score));
    if (s.on_fire) {
      score.appendChild(el("span", { class: "fire", "data-streak": s.streak },
                           t(over() ? "fire_n" : "on_fire", { n: s.streak })));
    }
    else if (s.streak > 0) score.appendChild(el("span", { class: "sub", "data-streak": s.streak }, t("streak_n", { n: s.streak })));
    tr.appendChild(score);
    const rating = el("td", { class: "num" }, typeof s.rating === "number" ? String(Math.round(s.rating)) : "–");
    if (s.completion && typeof s.completion.rate === "number") {
      rating.appendChild(el("span", { class: "sub", title: t("completion_help") },
                            t("completion", { n: Math.round(s.completion.rate * 100) })));
    }
    tr.appendChild(rating);
    body.appendChild(tr);
  }
  $("#no-standings").hidden = arena.standings.length > 0;
  $("#standings").hidden = arena.standings.length === 0;
}

const names = (players) => players.map((p) => p.name).join(t("and"));

function drawRunning() {
  redraw($("#running"), [arena.running, over()], drawRunningNow);
}
function drawRunningNow() {
  const box = $("#running");
  const list = box.querySelector("ul");
  list.textContent = "";
  for (const m of arena.running) {
    const li = el("li", { "data-match": m.match_id, "data-row": m.match_id });
    li.appendChild(el("span", { class: "who" }, names(m.players)));
    li.appendChild(el("a", { class: "button secondary", href: `/match/${m.match_id}`,
                             "aria-label": t("watch_named", { who: names(m.players) }) }, t("watch")));
    list.appendChild(li);
  }
  box.querySelector(".empty").hidden = arena.running.length > 0;
  box.hidden = over() && arena.running.length === 0;
}

function drawResults() {
  redraw($("#results"), arena.matches, drawResultsNow);
}
function drawResultsNow() {
  const box = $("#results");
  const list = box.querySelector("ul");
  list.textContent = "";
  for (const m of arena.matches) {
    const li = el("li", { "data-match": m.match_id, "data-row": m.match_id });
    const who = el("span", { class: "who" });
    const sorted = [...m.results].sort((a, b) => a.place - b.place);
    for (const r of sorted) {
      const seat = el("span", { class: "seat" }, `${t("place", { n: r.place })} ${r.name} `);
      const pts = el("span", { class: r.doubled ? "doubled" : "" },
                     t("points_n", { n: scoreText(r.points) }) + (r.doubled ? t("doubled") : ""));
      seat.appendChild(pts);
      if (r.left) seat.appendChild(document.createTextNode(t("left_note")));
      who.appendChild(seat);
    }
    li.appendChild(who);
    li.appendChild(el("a", { class: "button secondary", href: `/replay/${m.match_id}`,
                             "aria-label": t("replay_named", { who: names(sorted) }) }, t("replay_short")));
    list.appendChild(li);
  }
  box.querySelector(".empty").hidden = arena.matches.length > 0;
}

function drawPodium() {
  redraw($("#podium"), [arena.status, arena.podium], drawPodiumNow);
}
function drawPodiumNow() {
  const box = $("#podium");
  const list = box.querySelector("ol");
  list.textContent = "";
  box.hidden = !(arena.status === "finished" && arena.podium.length > 0);
  for (const s of arena.podium) {
    const li = el("li", { "data-rank": s.rank, "data-player": s.player_id });
    li.appendChild(el("span", { class: "place" }, ["🥇", "🥈", "🥉"][s.rank - 1] ? `${["🥇", "🥈", "🥉"][s.rank - 1]} ${t("place", { n: s.rank })}` : t("place", { n: s.rank })));
    li.appendChild(el("span", { class: "who" }, s.name));
    li.appendChild(el("span", { class: "muted" }, ` ${t("points_n", { n: scoreText(s.score) })}`));
    list.appendChild(li);
  }
}

function drawArena() {
  if (!arena) return;
  $("#arena-view").hidden = false;
  $("#arena-name-title").textContent = arenaName(arena);
  document.title = `${arenaName(arena)} — ${t("arenas")}`;
  const tags = $("#arena-tags");
  tags.textContent = "";
  for (const word of arenaTags(arena)) tags.appendChild(el("span", { class: "tag" }, word));
  tags.appendChild(el("span", { class: "tag ranked" }, t("ranked")));
  if (arena.private) tags.appendChild(el("span", { class: "tag" }, t("private_tag")));
  drawClock();
  drawYou();
  drawPodium();
  drawStandings();
  drawRunning();
  drawResults();
}

async function arenaCommand(what, button) {
  messageAt(what === "cancel" ? $("#cancel-note") : $("#you-note"));
  message("");
  if (busy) return;
  if (what === "cancel" && !$("#cancel-reason").value.trim()) {
    const field = $("#cancel-reason");
    field.focus();
    message(t("arena_errors.bad_reason"), "error", { field, valid: () => !!field.value.trim() });
    return;
  }
  busy = true;
  drawYou();
  try {
    if (what === "join") {
      const name = $("#join-name");
      if (!guest() && !name.value.trim()) {
        name.focus();
        throw new ApiError(422, "invalid", t("name_needed"), "name");
      }
      const known = guest();
      await ensureGuest(name.value);
      $("#me").textContent = guest().name;
      if (!known) hello();  // a new guest: the socket says who it is now
    }
    const body = what === "join" ? { client_seed: clientSeed() }
      : what === "cancel" ? { reason: $("#cancel-reason").value.trim() } : {};
    const view = await api("POST", `/api/tournaments/${encodeURIComponent(arenaId)}/${what}`, body, newKey());
    busy = false;
    heardArena(view);
  } catch (err) {
    busy = false;
    const field = err.field === "name" ? $("#join-name") : err.field === "reason" ? $("#cancel-reason") : null;
    message(errorWords(err), "error", field ? { field, valid: () => !!field.value.trim() } : undefined);
    drawYou();
    if (button && !button.hidden) button.focus({ preventScroll: true });
  }
}

function hello(send) {
  const g = guest();
  const to = send || (socket && socket.send);
  if (g && to) to({ type: "hello", token: g.token });
}

let arenaTimer = null;
async function startArena() {
  $("#join").addEventListener("click", () => arenaCommand("join", $("#join")));
  $("#join-form").addEventListener("submit", (e) => { e.preventDefault(); arenaCommand("join", $("#join")); });
  $("#pause").addEventListener("click", () => arenaCommand("pause", $("#pause")));
  $("#continue").addEventListener("click", () => arenaCommand("continue", $("#continue")));
  $("#cancel-form").addEventListener("submit", (e) => { e.preventDefault(); arenaCommand("cancel", $("#cancel")); });
  $("#copy").addEventListener("click", async () => {
    const input = $("#share-link");
    input.select();
    try { await navigator.clipboard.writeText(input.value); } catch (_) { document.execCommand("copy"); }
    $("#copied").textContent = t("copied");
  });
  document.addEventListener("languagechange", () => { lastSaid = ""; drawArena(); });
  try {
    heardArena(await api("GET", `/api/tournaments/${encodeURIComponent(arenaId)}`));
  } catch (err) {
    message(errorWords(err));
    document.body.dataset.ready = "true";
    return;
  }
  arenaTimer = setInterval(drawClock, 1000);
  socket = liveSocket({
    url: () => `/ws/tournament/${encodeURIComponent(arenaId)}`,
    onStatus: (state, seconds) => {
      connectionStatus(state, seconds);
      if (state === "gone") message(t("arena_errors.not_found"));
    },
    onOpen: hello,
    onFrame: (frame) => {
      if (frame.type === "arena") heardArena(frame.arena);
      // (A socket opened just after a pairing is told it too: not the table just left.)
      else if (frame.type === "paired" && frame.party_id && frame.party_id !== cameFrom) goToTable(frame.party_id);
    },
  });
  keyboardScroll();
  document.body.dataset.ready = "true";
}

// ------------------------------------------------------------------- start
siteHeader();
if (arenaId) startArena();
else startList();
