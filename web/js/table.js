// The table page's script (web/pages/table.html).
import { $, el, message } from "./lib/page_common.js";
import { SYMBOL, WORDS, lang, t, guest, ApiError, serverNow, errorText, newKey, api, ensureGuest, liveSocket, siteHeader, connectionStatus, eventWords, boardLabels, rulesSummary, cpuName, seatLabel, colourLabel } from "./lib/site.js";
import { chanceSplit, chanceBlock } from "./lib/analysis_words.js";
import { watchSeats } from "./lib/report_player.js";
import { LudoBoard } from "./lib/board.js";
import { SETTINGS } from "./lib/settings.js";

// ---- table.js: the table page's module (web/pages/table.html; it imports
// page_common.js, site.js and board.js). A party's seats before the start, then its
// match live over /ws/matches/{id} (roll and move are sent there too), then the result,
// the rating change and もう一度. /match/{id} shows one match to anyone, read-only
// unless this device's guest holds a seat. An arena's table (the party's arena_id) says
// so, has no もう一度 and goes back to the arena at the end (the "arena" part below).
//
// The page draws only what the server says: the rules are never computed here. Frames
// are drawn one after the other (a move's animation ends before the next event's
// begins); while any is waiting, or a command is on its way, the controls are off and
// the turn line says what is happening instead.
const path = location.pathname.split("/").filter(Boolean);
const partyId = path[0] === "party" ? decodeURIComponent(path[1] || "") : null;
const pinnedMatch = path[0] === "match" ? decodeURIComponent(path[1] || "") : null;

let options = null;        // /api/rules/options
let party = null;          // the latest party frame
let matchId = null;        // the match on the board
let matchSocket = null;
let lastVersion = -1;      // the newest event this page has seen
let drawnVersion = -1;     // the latest state frame drawn: its version (events so far)
let seatNames = [];        // from MatchCreated
let firstSeat = 0;
let match = null;          // the latest state frame's match
let moves = [];
let mySeat = null;         // from the socket's hello (null: watching)
let helloSeen = false;     // the hello answered: mySeat is the server's word
let board = null;
let loaded = false;        // the first state frame of this match arrived
// A command sent and not yet settled: {id, message, tries, probe, die, until}. It is
// settled by an error, or once the state frame after its events is drawn (`until`, the
// version after them).
let pending = null;
let showing = null;        // the words of the event being drawn now
let queue = Promise.resolve();
const early = [];          // events seen before the first state (logged, not animated)
const logged = [];         // {facts, li}: every line of the log, said again on a change
// The log holds the match's latest lines (the socket's catch-up is its last LOG_TAIL
// events); earlier ones come a page at a time when the reader asks (GET /log).
const LOG_TAIL = 50;
let older = null;          // the `before` of the earlier lines not loaded (null: none)
let loadingOlder = false;
let catchingUp = false;    // the frames of a (re)connect's catch-up: logged, not animated
let stampsNext = null;     // the next stamp's version (null: only those sent from now)
let connected = null;      // the seats with a live connection (the socket's presence frame)
let stampSent = null;      // the id of the stamp message on its way
let stampRest = false;     // a stamp went out: the palette rests for 3 s

// ------------------------------------------------------------------- sound
// Short tones made here (no audio files); off when the player says so.
const SOUND_KEY = "ludo.sound";
let soundOn = localStorage.getItem(SOUND_KEY) !== "off";
let audio = null;
function tone(freq, ms, type) {
  if (!soundOn) return;
  try {
    audio = audio || new AudioContext();
    const osc = audio.createOscillator();
    const gain = audio.createGain();
    osc.type = type || "sine";
    osc.frequency.value = freq;
    gain.gain.setValueAtTime(0.08, audio.currentTime);
    gain.gain.exponentialRampToValueAtTime(0.0001, audio.currentTime + ms / 1000);
    osc.connect(gain).connect(audio.destination);
    osc.start();
    osc.stop(audio.currentTime + ms / 1000);
  } catch (_) { /* no audio here */ }
}
const SOUNDS = {
  roll: () => { tone(520, 60, "square"); setTimeout(() => tone(660, 60, "square"), 70); },
  move: () => tone(440, 70, "triangle"),
  capture: () => { tone(300, 160, "sawtooth"); setTimeout(() => tone(200, 200, "sawtooth"), 150); },
  turn: () => { tone(660, 120); setTimeout(() => tone(880, 160), 130); },
  goal: () => { tone(660, 90); setTimeout(() => tone(880, 90), 100); setTimeout(() => tone(1100, 160), 200); },
};
function drawSound() {
  $("#sound").textContent = t(soundOn ? "sound_on" : "sound_off");
  $("#sound").setAttribute("aria-pressed", String(soundOn));
}

// ------------------------------------------------- the table's own settings
// The only move played for the player (this device's choice, on unless they switch it
// off), the CPUs' speed (the host's, for the table: docs/site.md), conceding a casual
// match against CPUs, a ranked table's badge and ratings.
// Their words are the catalogue's `table` section (web/i18n/<lang>.json).
const AUTO_KEY = "ludo.autoMove";
let autoMoveOn = localStorage.getItem(AUTO_KEY) !== "off";

// The moves of a roll that differ in what they do: pieces on the same square going to
// the same square (four in the nest entering on a 6) are one move.
function distinctMoves(list) {
  const seen = new Map();
  for (const m of list) {
    const key = `${m.from}>${m.to}`;
    if (!seen.has(key)) seen.set(key, m);
  }
  return [...seen.values()];
}

// After the player's roll, a single move is sent for them as their own press would send
// it (the server's `decide` judges it like any move); rolling stays theirs.
function autoMove() {
  if (!autoMoveOn || !myTurn() || match.phase !== "move" || pending || busy > 0 || showing) return;
  const only = distinctMoves(moves);
  if (only.length === 1) command({ type: "move", piece: only[0].piece }, { auto: true });
}

// The versions of the moves this tab played for the player in the match on the board.
const autoKey = () => `ludo.autoMoved.${matchId}`;
function autoMoved() {
  try {
    const versions = JSON.parse(sessionStorage.getItem(autoKey()) || "[]");
    return Array.isArray(versions) ? versions : [];
  } catch (_) {
    return [];
  }
}
function rememberAuto(version) {
  sessionStorage.setItem(autoKey(), JSON.stringify([...autoMoved(), version]));
}

const cpuSpeed = () => (party && party.cpu_speed) || "normal";
let speedAsked = null;  // the speed the host just picked, until the server answers
const hasCpus = () => !!match && match.seats.some((s) => s.cpu || s.stood_in);

// The host's CPU speed: two radio buttons (in words), in the party and during the match.
function drawSpeed(box, shown) {
  box.hidden = !shown;
  if (!shown) return;
  const group = box.querySelector(".segmented");
  if (group.dataset.lang !== lang) {  // made once per language
    group.dataset.lang = lang;
    group.textContent = "";
    for (const speed of SETTINGS.party.cpu_speed) {  // the API's (domain/settings.py)
      const input = el("input", { type: "radio", name: box.id, value: speed, "data-speed": speed });
      input.addEventListener("change", async () => {
        if (!input.checked) return;
        speedAsked = speed;  // shown as chosen while the request is on its way
        await partyCommand("/settings", { cpu_speed: speed }, null);
        speedAsked = null;  // then the party's word (its frame, or unchanged if refused)
        if (match && !$("#match-view").hidden) drawControls();
        else if (party) drawParty();
      });
      const label = el("label", {}, "");
      label.append(input, document.createTextNode(t(`cpu_speeds.${speed}`)));
      group.appendChild(label);
    }
  }
  for (const input of group.querySelectorAll("input")) input.checked = input.value === (speedAsked || cpuSpeed());
  box.dataset.speed = cpuSpeed();  // the party's word (the last party frame)
}

// Conceding: the seat's player, in a casual match whose other seats still playing are
// CPUs (the rule is the server's, docs/rules-decisions.md; this only offers it then).
function canConcede() {
  if (!playing() || mySeat === null || match.ranked) return false;
  const done = (i) => match.pieces[match.seats[i].colour].every((p) => p >= match.board.goal);
  if (done(mySeat)) return false;
  return match.seats.every((s, i) => i === mySeat || s.cpu || done(i));
}

// A ranked table's players' ratings (GET /api/players/reputation: the match service's
// own read), asked once per match.
const ratings = new Map();
let ratingsFor = null;
async function loadSeatRatings() {
  if (!match || !match.ranked || ratingsFor === matchId) return;
  ratingsFor = matchId;
  const ids = match.seats.filter((s) => s.player_id && !s.cpu).map((s) => s.player_id);
  if (!ids.length) return;
  try {
    const r = await fetch(`/api/players/reputation?ids=${ids.map(encodeURIComponent).join(",")}`,
                          { keepalive: true, headers: { Accept: "application/json" } });
    if (!r.ok) throw new Error(String(r.status));
    for (const p of (await r.json()).players) ratings.set(p.player_id, p.rating);
    if (match) drawPlayers();
  } catch (_) {
    ratingsFor = null;  // asked again on the next state
  }
}

// ------------------------------------------------------------------ helpers
const colourOf = (seat) => (match ? match.seats[seat].colour : null);
// A seat's name as shown (site.js `seatLabel`, the one naming of the site's pages): the
// guest's own as the match recorded it, or "CPU (normal)" in the page's language.
function seatName(seat) {
  const s = match ? match.seats[seat] : null;
  if (s && s.cpu) return seatLabel(s);
  return seatNames[seat] || (s ? s.name : `#${seat + 1}`);
}
const colourName = (seat) => colourLabel(colourOf(seat));
function who(seat) {
  return colourOf(seat) ? `${colourName(seat)} ${seatName(seat)}` : seatName(seat);
}
// This device's player's seat: the hello's answer once it came, before it the seat the
// guest holds (so that the first lines of a reload already speak to the player).
function me() {
  if (helloSeen) return mySeat;
  const g = guest();
  if (!g || !match) return null;
  const i = match.seats.findIndex((s) => s.player_id === g.id);
  return i < 0 ? null : i;
}
const isMe = (seat) => seat !== null && seat !== undefined && seat === me();
function piecesBySeat(m) {
  return m.seats.map((s) => m.pieces[s.colour]);
}
function controlled(m, seat) {
  const s = m.seats[seat];
  return !!(s.cpu || s.stood_in);
}
const playing = () => match && match.status === "playing";
const cpuDeadline = () => !!(match.deadline && match.deadline.kind === "cpu");
// My turn to act: not when a CPU stands in for me, nor when my turn timed out (the
// deadline is then the CPU's: it plays the rest of the turn).
const myTurn = () => playing() && mySeat !== null && match.turn === mySeat
  && !match.seats[mySeat].stood_in && !cpuDeadline();

// ------------------------------------------------------------------ stamps
// Quick-chat stamps (domain/stamps.py: the same ids in the same order): each shown as a
// bubble by the sender's nest on the board for a few seconds, in this viewer's language,
// and said in the log. Muting a player is this device's choice (localStorage).
const PHRASE_IDS = ["good_luck", "nice", "thanks", "sorry", "good_game", "wow", "so_close", "one_more"];
const STICKER_IDS = ["six", "star", "laugh", "tears"];
const STAMP_EVERY_MS = 3000;
const BUBBLE_MS = 4000;
const MUTE_KEY = "ludo.muted";
function mutedIds() {
  try {
    const ids = JSON.parse(localStorage.getItem(MUTE_KEY) || "[]");
    return Array.isArray(ids) ? ids : [];
  } catch (_) {
    return [];
  }
}
const playerOf = (seat) => (match && match.seats[seat] ? match.seats[seat].player_id : null);
const isMuted = (seat) => { const id = playerOf(seat); return !!id && mutedIds().includes(id); };
function setMuted(seat, muted) {
  const id = playerOf(seat);
  if (!id) return;
  const ids = mutedIds().filter((x) => x !== id);
  if (muted) ids.push(id);
  localStorage.setItem(MUTE_KEY, JSON.stringify(ids));
  if (muted) removeBubble(seat);
  drawPlayers();
  // The list is drawn anew: the pressed button keeps the focus (the keyboard stays put).
  const again = document.querySelector(`#players [data-mute="${seat}"]`);
  if (again) again.focus({ preventScroll: true });
}
const stampsOn = () => !party || party.stamps !== false;
const iAmHost = () => { const g = guest(); return !!(g && party && g.id === party.host_id); };
const stampWord = (id) => t(`stamp.${id}`);

function stampText(facts) {
  const sticker = STICKER_IDS.includes(facts.stamp);
  const word = sticker ? t(`sticker.${facts.stamp}`) : stampWord(facts.stamp);
  const key = (sticker ? "sticker_said" : "stamp_said") + (isMe(facts.seat) ? "_you" : "");
  return t(key, { who: who(facts.seat), stamp: word });
}

function drawStampPalette() {
  const box = $("#stamps-box");
  const seated = mySeat !== null && !!match;
  box.hidden = !seated;
  if (!seated) return;
  const palette = $("#stamp-palette");
  if (palette.dataset.lang !== lang) {  // made once per language
    palette.dataset.lang = lang;
    palette.textContent = "";
    for (const id of [...PHRASE_IDS, ...STICKER_IDS]) {
      const sticker = STICKER_IDS.includes(id);
      const attrs = { type: "button", class: `secondary${sticker ? " sticker" : ""}`, "data-stamp": id };
      if (sticker) attrs["aria-label"] = t(`sticker.${id}`);
      const button = el("button", attrs, stampWord(id));
      button.addEventListener("click", () => sendStamp(id));
      palette.appendChild(button);
    }
  }
  const off = !stampsOn();
  for (const button of palette.querySelectorAll("button")) button.disabled = off || stampRest || !!stampSent;
  const note = $("#stamps-note");
  if (off) note.textContent = t("stamps_off_note");
  else if (note.dataset.kind === "off") note.textContent = "";
  note.dataset.kind = off ? "off" : note.textContent ? "error" : "";
}

function drawStampsSwitch() {
  for (const button of document.querySelectorAll(".stamps-switch")) {
    button.hidden = !iAmHost() || party.status === "closed";
    button.textContent = t(stampsOn() ? "stamps_switch_on" : "stamps_switch_off");
    button.setAttribute("aria-pressed", String(stampsOn()));
  }
}

function sendStamp(id) {
  if (!matchSocket || stampSent || stampRest || !stampsOn()) return;
  $("#stamps-note").textContent = "";
  stampSent = newKey();
  if (!matchSocket.send({ type: "stamp", stamp: id, id: stampSent })) {
    stampSent = null;
    connectionStatus("connecting");
  }
  drawStampPalette();
}

function onStamped(frame) {
  stampSent = null;
  if (frame.type === "error") {  // our words for a stamp's refusals, else the usual
    const known = WORDS.stamp_errors[frame.error];
    $("#stamps-note").textContent = known || errorText(new ApiError(frame.status, frame.error, frame.detail));
  } else {
    stampRest = true;
    setTimeout(() => { stampRest = false; drawStampPalette(); }, STAMP_EVERY_MS);
  }
  drawStampPalette();
}

function removeBubble(seat) {
  const old = document.querySelector(`#bubbles .bubble[data-seat="${seat}"]`);
  if (old) old.remove();
}

// The bubble sits over the sender's nest, where the board draws it for this viewer.
function showBubble(seat, id) {
  removeBubble(seat);
  if (!board || !match) return;
  const svg = $("#board");
  const vb = svg.viewBox.baseVal;
  const r = svg.getBoundingClientRect();
  const box = $("#board-box").getBoundingClientRect();
  if (!vb || !vb.width || !r.width) return;
  const scale = Math.min(r.width / vb.width, r.height / vb.height);
  const spot = board.cellOf(seat, -1);
  const x = r.left - box.left + (r.width - vb.width * scale) / 2 + (spot.x - vb.x) * scale;
  const y = r.top - box.top + (r.height - vb.height * scale) / 2 + (spot.y - vb.y) * scale;
  const bubble = el("div", { class: `bubble c-${match.seats[seat].colour}`, "data-seat": seat, "data-stamp": id },
                    stampWord(id));
  bubble.style.left = `${x}px`;
  bubble.style.top = `${y}px`;
  $("#bubbles").appendChild(bubble);
  setTimeout(() => bubble.remove(), BUBBLE_MS);  // how long a bubble shows, not a wait
}

function onStamp(frame) {
  if (stampsNext !== null && frame.version < stampsNext) return;  // already had it
  stampsNext = frame.version + 1;
  if (!match || isMuted(frame.seat)) return;
  showBubble(frame.seat, frame.stamp);
  const entry = { stamp: { seat: frame.seat, stamp: frame.stamp }, li: el("li", { "data-stamp-version": frame.version }) };
  sayLine(entry);
  logged.push(entry);
  $("#log-lines").appendChild(entry.li);
  followLog();
}


// ------------------------------------------------------------------- arena
// An arena's table (docs/arenas.md): the party's arena_id (on /match/{id}, the party of
// the match) says so. One line names the arena (its link inline), there is no もう一度,
// and at the end "Back to the arena": a seated player who saw the match end goes there
// by themself after ARENA_BACK_S seconds, said once in words, unless they press "Stay
// here". The arena page is told which table they came from (sessionStorage), so that it
// takes them to their next table, not back to this one.
const ARENA_BACK_S = 5;
let arenaId = null;
let arenaName = null;      // the arena's name, once read
let arenaAsked = null;     // the party asked about on a /match page
let sawPlaying = null;     // the match this page saw in play
let backTimer = null;      // the countdown to the arena
let backLeft = 0;
let backFor = null;        // the match the countdown ran for
let stayed = false;

function setArena(id) {
  if (!id || id === arenaId) return;
  arenaId = id;
  readArenaName(id);
  drawArena();
}

// keepalive: a page left while the answer is on its way does not abort it.
async function readJson(url) {
  const r = await fetch(url, { keepalive: true, headers: { Accept: "application/json" } });
  if (!r.ok) throw new ApiError(r.status, "read", String(r.status));
  return r.json();
}

async function readArenaName(id) {
  try {
    arenaName = (await readJson(`/api/tournaments/${encodeURIComponent(id)}`)).name;
    if (arenaId === id) drawArena();
  } catch (_) { /* the line says "the arena" */ }
}

// A /match/{id} page: whether the match's party is an arena's.
async function askArenaOf(partyOfMatch) {
  if (!partyOfMatch || arenaAsked === partyOfMatch) return;
  arenaAsked = partyOfMatch;
  try {
    setArena((await readJson(`/api/parties/${encodeURIComponent(partyOfMatch)}`)).arena_id);
  } catch (_) { /* an ordinary match */ }
}

const matchParty = () => partyId || (match && match.party_id) || null;

function goToArena() {
  const from = matchParty();
  if (from) sessionStorage.setItem("ludo.arenaFrom", from);
  location.href = `/tournament/${encodeURIComponent(arenaId)}`;
}

function tickBack() {
  backLeft -= 1;
  if (backLeft > 0) {
    $("#arena-count").textContent = t("arena_back_in", { s: backLeft });
    return;
  }
  clearInterval(backTimer);
  backTimer = null;
  $("#arena-count").textContent = t("arena_going");
  $("#stay-here").hidden = true;
  goToArena();
}

// Staying, the player still counts as present for the arena's pairing (their table is
// open, docs/arenas.md): the arena's socket tells this page when their next match is
// ready, and the page says so with a link to it (it does not move them: they chose to
// stay).
let arenaSocket = null;
let nextParty = null;
function stayHere() {
  clearInterval(backTimer);
  backTimer = null;
  stayed = true;
  $("#arena-said").textContent = t("arena_stayed");
  drawArena();
  $("#back-to-arena").focus({ preventScroll: true });
  watchNext();
}

// The arena's socket, for a seated player on a finished arena table who is not being
// taken back (they stayed, or opened the result after the end): it says when their
// next match is ready, and the page offers a link to it.
function watchNext() {
  if (arenaSocket) return;
  const here = matchParty();
  arenaSocket = liveSocket({
    url: () => `/ws/tournament/${encodeURIComponent(arenaId)}`,
    onOpen: (send) => { const g = guest(); if (g) send({ type: "hello", token: g.token }); },
    onFrame: (frame) => {
      if (frame.type !== "paired" || !frame.party_id || frame.party_id === here || nextParty) return;
      nextParty = frame.party_id;
      $("#arena-said").textContent = t("arena_next");
      drawArena();
    },
  });
}

function drawArena() {
  const line = $("#arena-line");
  line.hidden = !arenaId;
  if (!arenaId) return;
  line.textContent = `${t("arena_match")} — `;
  line.appendChild(el("a", { href: `/tournament/${encodeURIComponent(arenaId)}` }, arenaName || t("arenas")));
  $("#rematch").hidden = true;
  const over = !!match && match.status === "finished" && !$("#match-view").hidden;
  $("#arena-back").hidden = !over;
  const back = $("#back-to-arena");
  back.hidden = !over;
  back.href = `/tournament/${encodeURIComponent(arenaId)}`;
  if (over && me() !== null && sawPlaying === matchId && !stayed && backFor !== matchId) {
    backFor = matchId;
    backLeft = ARENA_BACK_S;
    $("#arena-said").textContent = t("arena_back_in", { s: ARENA_BACK_S });  // said once
    backTimer = setInterval(tickBack, 1000);
  }
  if (over && me() !== null && !backTimer) watchNext();
  $("#stay-here").hidden = !(over && backTimer);
  $("#arena-count").textContent = backTimer ? t("arena_back_in", { s: backLeft })
    : nextParty ? t("arena_next") : stayed ? t("arena_stayed") : "";
  const next = $("#next-table");
  next.hidden = !(over && nextParty);
  if (nextParty) next.href = `/party/${encodeURIComponent(nextParty)}`;
}

// ------------------------------------------------------------------- party
// The table's name ("Alice's table"), the page's heading for screen readers too.
function tableTitle() {
  if (!party) return t("site");
  const host = party.seats.find((s) => s.player_id === party.host_id);
  return t("host_of", { name: host ? host.name : "?" });
}

function drawParty() {
  const p = party;
  $("#party-title").textContent = $("#page-title").textContent = tableTitle();
  const bits = [options ? rulesSummary(p.rules, options) : "", p.turn_limit ? `${t("turn_limit")}: ${t("limit_s", { n: p.turn_limit })}` : "",
                p.ranked ? t("ranked") : t("casual"),
                t("cpu_speed_note", { speed: t(`cpu_speeds.${p.cpu_speed || "normal"}`) })].filter(Boolean);
  $("#party-rules").textContent = bits.join(" · ");
  $("#share-link").value = location.origin + `/party/${p.id}`;
  const me = guest();
  const iAmHost = me && me.id === p.host_id;
  const mine = me ? p.seats.findIndex((s) => s.player_id === me.id) : -1;
  const list = $("#seats-list");
  list.textContent = "";
  p.seats.forEach((s, i) => {
    const li = el("li", { "data-seat": i });
    li.appendChild(el("span", { class: "muted" }, t("seat", { n: i + 1 })));
    if (s.name === null) {
      li.appendChild(el("span", { class: "name muted" }, t("empty_seat")));
      if (iAmHost) {
        const select = el("select", { "aria-label": t("level"), "data-level": i });
        for (const level of SETTINGS.party.cpu_level) {  // the API's (domain/settings.py)
          const o = el("option", { value: level }, cpuName(level));
          o.selected = level === SETTINGS.party.defaults.cpu_level;
          select.appendChild(o);
        }
        const add = el("button", { type: "button", class: "secondary", "data-add-cpu": i }, t("add_cpu"));
        add.addEventListener("click", () => partyCommand(`/cpus`, { level: select.value, seat: i }, add));
        li.appendChild(select);
        li.appendChild(add);
      } else if (mine < 0 && p.status === "open" && me) {
        const sit = el("button", { type: "button", "data-sit": i }, t("sit_here"));
        sit.addEventListener("click", () => sitDown(i, sit));
        li.appendChild(sit);
      }
    } else {
      const shown = seatLabel(s);
      li.appendChild(el("span", { class: "name" }, shown + (me && s.player_id === me.id ? t("you_mark") : "")));
      if (s.cpu) li.appendChild(el("span", { class: "tag cpu" }, t("cpu")));
      if (s.player_id === p.host_id) li.appendChild(el("span", { class: "tag" }, t("host")));
      if (s.cpu && iAmHost) {
        const rm = el("button", { type: "button", class: "secondary", "data-remove-cpu": i }, t("remove"));
        rm.addEventListener("click", () => partyCommand(`/cpus/${i}/remove`, undefined, rm));
        li.appendChild(rm);
      }
    }
    list.appendChild(li);
  });
  const full = p.seats.every((s) => s.name !== null);
  // A visitor with no name on this device yet sits down with one (the lobby's name).
  $("#join-form").hidden = !(p.status === "open" && !full && mine < 0 && !guest());
  $("#start").hidden = !iAmHost;
  $("#start").disabled = !full;
  drawStampsSwitch();
  drawSpeed($("#party-speed"), !!iAmHost && p.status === "open");
  $("#leave-party").hidden = mine < 0;
  $("#party-hint").textContent = p.status === "closed" ? t("party_closed")
    : !$("#join-form").hidden ? t("join_hint")
    : mine < 0 ? t("spectating") : iAmHost ? t("waiting_players") : t("waiting_host");
}

async function partyCommand(suffix, body, button) {
  message("");
  if (button) button.disabled = true;
  try {
    await api("POST", `/api/parties/${party.id}${suffix}`, body, newKey());
  } catch (err) {
    message(errorText(err));
  } finally {
    if (button) button.disabled = false;
  }
}

async function sitDown(seat, button) {
  await partyCommand("/join", { seat, client_seed: newKey().slice(0, 16) }, button);
}

async function joinWithName(event) {
  event.preventDefault();
  message("");
  const field = $("#join-name");
  try {
    const g = await ensureGuest(field.value);
    $("#me").textContent = g.name;
  } catch (err) {
    // "Enter a name" holds until one is typed (page_common.js's message about a field).
    message(errorText(err), "error", err.field === "name" ? { field, valid: () => !!field.value.trim() } : undefined);
    return;
  }
  await sitDown(null, $("#join-form button"));
}

function showParty(frame) {
  // "Copied" answered one press, beside its button; the table has changed since.
  $("#copied").textContent = "";
  party = frame;
  setArena(party.arena_id);
  if (party.match_id && party.match_id !== matchId) openMatch(party.match_id);
  if (!party.match_id) {
    $("#party-view").hidden = false;
    $("#match-view").hidden = true;
    placeMessage();
    drawParty();
  }
  drawRematch();
  drawStampsSwitch();
  if (match) {
    drawStampPalette();
    drawControls();  // the CPU speed the host set
  }
}

// ------------------------------------------------------------------- match
function openMatch(id) {
  if (matchSocket) matchSocket.close();
  matchId = id;
  lastVersion = -1;
  drawnVersion = -1;
  seatNames = [];
  match = null;
  moves = [];
  loaded = false;
  pending = null;
  showing = null;
  early.length = 0;
  clearLog();
  stampsNext = null;
  connected = null;
  stampSent = null;
  $("#bubbles").textContent = "";
  following = true;
  queue = Promise.resolve();
  if (board) board.destroy();
  board = null;
  $("#result").hidden = true;
  $("#party-view").hidden = true;
  $("#match-view").hidden = false;
  $("#replay-link").href = `/replay/${id}`;
  if (!pinnedMatch) history.replaceState(null, "", `/party/${partyId}`);
  const socketFor = id;
  matchSocket = liveSocket({
    // At most the last LOG_TAIL events missed: a long match's first drawing (or a
    // reconnect after many events) does not wait for all of them (`skipped` frame).
    url: () => `/ws/matches/${encodeURIComponent(id)}?from=${lastVersion + 1}&tail=${LOG_TAIL}`
      + (stampsNext === null ? "" : `&stamps=${stampsNext}`),
    onStatus: (state, seconds) => {
      connectionStatus(state, seconds);
      document.body.dataset.socket = state;
      if (state === "gone") message(t("not_found"));
    },
    onOpen: (send) => {
      catchingUp = true;
      const g = guest();
      if (g) send({ type: "hello", token: g.token });
      else mySeat = null;
      // A command sent before the drop and never answered: the same id again, so the
      // server answers with its first outcome if it was carried out (nothing twice).
      if (pending && pending.until === undefined) send(pending.message);
      if (stampSent) { stampSent = null; drawStampPalette(); }  // lost with the socket
      analysisWritten();  // the socket's word may have come while there was none
    },
    onFrame: (frame) => { if (matchId === socketFor) onMatchFrame(frame); },
  });
}

function onMatchFrame(frame) {
  if (frame.type === "stamp") {
    onStamp(frame);
  } else if (frame.type === "presence") {
    connected = frame.connected;
    if (match) drawPlayers();
  } else if (frame.type === "analysis") {
    analysisWritten();
  } else if (frame.type === "stamped" || (frame.type === "error" && stampSent && frame.id === stampSent)) {
    onStamped(frame);
  } else if (frame.type === "batch") {  // the events of one read, then the state after them
    frame.frames.forEach(onMatchFrame);
  } else if (frame.type === "skipped") {
    enqueue(() => onSkipped(frame));
  } else if (frame.type === "event") {
    if (frame.version <= lastVersion) return;  // already seen (never drawn twice)
    lastVersion = frame.version;
    const animate = !catchingUp;  // what was missed is written down, not played again
    enqueue(() => onEvent(frame, animate));
  } else if (frame.type === "state") {
    catchingUp = false;
    enqueue(() => onState(frame));
  } else if (frame.type === "hello") {
    mySeat = frame.seat;
    helloSeen = true;
    if (match) drawAll();
  } else if (frame.type === "result") {
    if (pending && frame.id === pending.id) {
      // Carried out: the turn line keeps saying so until the state after its events (the
      // stream's next version, as a state frame counts it) is drawn.
      pending.until = frame.version;
      settle();
    }
    if (match) drawControls();
  } else if (frame.type === "error") {
    if (pending && frame.id === pending.id && frame.error === "conflict" && pending.tries < 5) {
      // Another command (a CPU's, a timer's) got there first and nothing was written:
      // the same command again, decided on the new state.
      pending.tries++;
      matchSocket.send(pending.message);
    } else if (pending && frame.id === pending.id) {
      const refused = pending;
      pending = null;
      message(refusalText(new ApiError(frame.status, frame.error, frame.detail, frame.field, frame.why), refused));
      drawControls();
    } else if (frame.error === "unauthorized") {
      mySeat = null;
    }
  }
}

// The pending command is settled once the state after its events is drawn.
function settle() {
  if (pending && pending.until !== undefined && drawnVersion >= pending.until) pending = null;
}

// Frames are drawn one after the other (a move's animation ends before the next event's
// begins). While any is waiting, the controls stay off: what they show may be stale.
let busy = 0;
const enqueue = (job) => {
  busy++;
  if (busy === 1 && match) drawControls();
  queue = queue.then(job).catch((err) => console.error(err)).then(() => {
    busy--;
    if (busy === 0 && match) drawControls();
  });
};

// Send a command; `extra` is kept beside it ({probe, die}: see tryPiece).
function command(msg, extra) {
  if (pending) return;
  message("");  // a new press: the answer to the last one no longer holds
  const id = newKey();
  pending = { id, message: { ...msg, id }, tries: 0, ...extra };
  if (!matchSocket.send(pending.message)) connectionStatus("connecting");
  drawControls();
}
const ready = () => myTurn() && !pending && busy === 0;
const roll = () => { if (ready() && match.phase === "roll") command({ type: "roll" }); };
const pick = (piece) => { if (ready() && match.phase === "move") command({ type: "move", piece }); };

// A piece pressed (click, tap, or its digit) that is not one of the moves offered now:
// the server is asked to move it, and its refusal says why not in words (it needs a 6,
// a pair blocks it, it would overshoot the goal; not your turn; roll first).
function tryPiece(piece) {
  if (!playing() || mySeat === null || pending || busy > 0) return;
  if (myTurn() && match.phase === "move" && moves.some((m) => m.piece === piece)) {
    pick(piece);
    return;
  }
  command({ type: "move", piece }, { probe: true, die: match.die });
}
function onPiece(seat, piece) {
  if (!playing()) return;
  if (mySeat === null) message(t("watching_piece"), "info");
  else if (seat !== mySeat) message(t("not_your_piece", { who: who(seat), mine: colourName(mySeat) }), "info");
  else tryPiece(piece);
}

// A refused command in words: why a piece cannot move from the server's facts (`why`),
// else our words for the error's code.
function refusalText(err, sent) {
  const why = err.why;
  if (!why || !WORDS.why[why.rule]) return errorText(err);
  const values = why.values || [];
  const vars = {
    piece: sent.message.piece + 1, die: sent.die, needs: why.needs,
    values: values.length > 1 ? `${values.slice(0, -1).join(", ")}${t("why.or")}${values[values.length - 1]}` : values.join(""),
  };
  if (why.seat !== undefined && why.seat !== null) vars.who = who(why.seat);
  const own = why.rule === "no_overtaking" && why.seat === mySeat;
  return t(own ? "why.no_overtaking_own" : `why.${why.rule}`, vars);
}

// ------------------------------------------------------------------- the log
// The event's facts as site.js's `eventWords` reads them (the stored event spells a
// move's origin `frm` and a die `value`).
function eventFacts(type, d) {
  if (type === "MatchCreated") {
    seatNames = d.seats.map((s) => s.name);
    firstSeat = d.first_seat || 0;
  }
  return { ...d, type, from: d.frm, die: type === "DieRolled" ? d.value : d.die, first_seat: firstSeat };
}
const boardWords = () => (match ? match.board : { home: 51, goal: 56 });
let saidAs = null;  // the player and language the log was said for

// One line of the log, (re)said in the page's language, to this device's player.
function sayLine(entry) {
  if (entry.stamp) {
    entry.li.textContent = stampText(entry.stamp);
    entry.li.className = "stamp";
    return true;
  }
  const said = eventWords(entry.facts, who, boardWords(), isMe);
  if (!said) return false;
  entry.li.textContent = entry.auto ? `${said.text} ${t("auto_moved")}` : said.text;
  if (entry.auto) entry.li.dataset.auto = "true";
  entry.li.className = said.kind || "";
  return true;
}

// Lines change in place: the log is a live region announcing additions only, so a
// screen reader hears each event once, not again when it is said anew.
function sayLog() {
  const now = `${me()}|${lang}`;
  if (saidAs === now) return;
  saidAs = now;
  for (const entry of logged) sayLine(entry);
  followLog();  // lines of another length: the newest one stays in view
}

// The log box follows its newest line while the reader is at its end (a reader who
// scrolled up to read is left there). Only the box scrolls, never the page:
// scrollIntoView would move the window under the player.
// Once a frame, not once a line: reading scrollHeight lays the page out, and a burst of
// events (a catch-up, fast CPUs) would lay it out once for each of its lines.
let following = true;
let followedTo = -1;  // where followLog last put the box (its own scroll events change nothing)
let followAsked = false;
function followLog() {
  if (!following || followAsked) return;
  followAsked = true;
  requestAnimationFrame(() => {
    followAsked = false;
    if (!following) return;  // the reader scrolled up meanwhile: the box stays where they are
    const box = $("#log");
    box.scrollTop = box.scrollHeight;
    followedTo = box.scrollTop;
  });
}

function logEvent(frame) {
  const entry = { facts: eventFacts(frame.event_type, frame.data), li: el("li", { "data-version": frame.version }) };
  // The move this page sent for the player (`autoMove`) is said to be theirs, played for them;
  // the tab remembers which (sessionStorage), so that a reload says the same log.
  const d = frame.data;
  const sent = !!(pending && pending.auto && frame.event_type === "PieceMoved" && d.seat === mySeat
                  && d.piece === pending.message.piece);
  if (sent) rememberAuto(frame.version);
  entry.auto = sent || autoMoved().includes(frame.version);
  if (!sayLine(entry)) return null;
  logged.push(entry);
  $("#log-lines").appendChild(entry.li);
  followLog();
  return entry;
}

function clearLog() {
  logged.length = 0;
  $("#log-lines").textContent = "";
  $("#log-older").textContent = "";
  older = null;
  loadingOlder = false;
  drawEarlier();
}

// The catch-up left out the events before `until` (a long match opened, or a reconnect
// after more than LOG_TAIL events): the log starts again from there, the earlier lines
// a press (or a scroll to the top) away.
function onSkipped(frame) {
  clearLog();
  early.length = 0;
  older = frame.until;
  following = true;
  drawEarlier();
}

// "Show earlier events (N more)" above the log's lines while any are not loaded, or
// what is happening to them in words.
function drawEarlier(note) {
  $("#log-earlier").hidden = older === null;
  const button = $("#log-more");
  button.disabled = loadingOlder;
  button.textContent = loadingOlder ? t("log_loading") : t("log_more", { n: older || 0 });
  if (note !== undefined) $("#log-note").textContent = note;
}

// The page of events before `older`, said and put above the lines there; the box keeps
// showing what the reader was looking at (it grows above it), and the note says so.
async function loadOlder() {
  if (older === null || loadingOlder || !matchId) return;
  const id = matchId;
  loadingOlder = true;
  drawEarlier("");
  let page;
  try {
    page = await readJson(`/api/matches/${encodeURIComponent(id)}/log?before=${older}&limit=${LOG_TAIL}`);
  } catch (err) {
    if (matchId !== id) return;
    loadingOlder = false;
    drawEarlier(t("log_failed", { why: errorText(err) }));
    return;
  }
  if (matchId !== id || !loadingOlder) return;  // another match, or the log began again
  const box = $("#log");
  const below = box.scrollHeight - box.scrollTop;
  const lines = document.createDocumentFragment();
  for (const e of page.events) {
    const entry = { facts: eventFacts(e.type, e.data), li: el("li", { "data-version": e.version }) };
    if (!sayLine(entry)) continue;
    logged.push(entry);
    lines.appendChild(entry.li);
  }
  const added = lines.childElementCount;
  $("#log-older").prepend(lines);
  older = page.older;
  loadingOlder = false;
  drawEarlier(t("log_added", { n: added }));
  box.scrollTop = box.scrollHeight - below;  // the lines in view stay where they were
  followedTo = box.scrollTop;
}

async function onEvent(frame, animate) {
  if (!loaded) {  // caught up before the first state: written down once the seats are known
    early.push(frame);
    return;
  }
  if (!animate) {
    logEvent(frame);
    return;
  }
  const entry = logEvent(frame);
  const d = frame.data;
  if (entry && ["DieRolled", "PieceMoved", "RollPassed"].includes(frame.event_type)) {
    showing = entry.li.textContent;  // the turn line says what is being drawn
    drawStatus();
  }
  if (frame.event_type === "DieRolled") {
    SOUNDS.roll();
    await showDie(d.value, !hurry(d.seat));
  } else if (frame.event_type === "PieceMoved") {
    const captures = d.captures || [];
    board.setMovable(null);
    await board.animateMove({ seat: d.seat, piece: d.piece, from: d.frm, to: d.to, captures },
                            { stepMs: stepMs(d.seat) });
    board.setLastMove(d.seat, d.piece);
    (captures.length ? SOUNDS.capture : d.to >= match.board.goal ? SOUNDS.goal : SOUNDS.move)();
  } else if (frame.event_type === "TurnEnded") {
    message("");  // an answer about the turn that ended is no longer true
    if (d.next_seat === mySeat) SOUNDS.turn();
  }
  showing = null;
}

// The page keeps up with the table: with more than one batch of frames waiting behind
// this one (fast CPUs, a slow device, a late spectator) the others' rolls and moves are
// drawn without animation until it has caught up (the player's own always animate: they
// are watching their die); at a fast table the CPUs' pieces walk quicker. (A piece walks
// 140 ms a square: a CPU's six-square move would take 0.84 s to draw against its 0.125 s
// pause at fast, and the player's turn would wait for the drawing.)
const hurry = (seat) => busy > 3 && seat !== mySeat;
function stepMs(seat) {
  if (hurry(seat)) return -1;  // drawn at once (board.js: no animation)
  return cpuSpeed() === "fast" && seat !== mySeat ? 60 : 140;
}

function showDie(value, animate) {
  const die = $("#die");
  const none = value === null || value === undefined;
  die.classList.remove("spinning");
  die.dataset.value = none ? "" : String(value);
  die.textContent = none ? "?" : String(value);
  die.setAttribute("aria-label", `${t("die")}: ${none ? "–" : value}`);
  if (!animate || matchMedia("(prefers-reduced-motion: reduce)").matches) return Promise.resolve();
  die.classList.remove("rolling");
  void die.offsetWidth;  // restart the animation
  die.classList.add("rolling");  // for as long as the die turns, no longer
  return new Promise((done) => setTimeout(() => { die.classList.remove("rolling"); done(); }, 450));
}

function onState(frame) {
  match = frame.match;
  moves = frame.moves || [];
  drawnVersion = frame.version;
  settle();
  if (match.status !== "playing") pending = null;  // nothing is on its way to a match over
  if (!board) {
    const bottom = me();
    board = LudoBoard.create($("#board"), match.board, {
      bottom: bottom === null ? match.board.colour_index[0] : match.board.colour_index[bottom],
      labels: boardLabels(match.board, who),
      onPiece,
    });
  }
  if (!loaded) {
    loaded = true;
    if (!seatNames.length) seatNames = match.seats.map((s) => s.name);
    firstSeat = match.first_seat;
    for (const e of early) logEvent(e);
    early.length = 0;
  }
  board.setPieces(piecesBySeat(match));
  if (match.status === "playing") sawPlaying = matchId;
  if (pinnedMatch) askArenaOf(match.party_id);
  drawAll();
  document.body.dataset.version = String(frame.version);
  document.body.dataset.phase = match.phase;
  if (document.body.dataset.ready !== "true") {
    document.body.dataset.ready = "true";
    performance.mark("ludo:playable");  // `ludo bench site` reads it
  }
}

// ------------------------------------------------------------------ drawing
function drawAll() {
  sayLog();
  $("#board").setAttribute("aria-label", t("spot.board"));
  drawPlayers();
  drawControls();
  drawResult();
  drawStampPalette();
  if (party) drawStampsSwitch();
  $("#page-title").textContent = tableTitle();
}

function drawPlayers() {
  loadSeatRatings();
  const list = $("#players");
  list.textContent = "";
  match.seats.forEach((s, i) => {
    const li = el("li", { class: `c-${s.colour}${match.turn === i ? " turn" : ""}`, "data-seat": i });
    li.appendChild(el("span", { class: "mark", "aria-hidden": "true" }, SYMBOL[s.colour]));
    li.appendChild(el("span", { class: "name" }, `${t(`colour.${s.colour}`)} ${seatName(i)}${isMe(i) ? t("you_mark") : ""}`));
    if (match.ranked && !s.cpu && ratings.has(s.player_id)) {
      li.appendChild(el("span", { class: "tag rating", "data-rating": ratings.get(s.player_id) },
                        t("rating_of", { n: ratings.get(s.player_id) })));
    }
    if (s.cpu) li.appendChild(el("span", { class: "tag cpu" }, t("cpu")));
    else if (s.stood_in) li.appendChild(el("span", { class: "tag cpu", "data-stood-in": s.stood_in }, t("stood_in")));
    // Who is connected, in words. This page's own seat is said once its socket's hello is
    // answered, and is connected while that socket is open, whatever the last presence
    // frame said: that frame may be older than this socket (a reload drew the player
    // "away" for a moment).
    const unanswered = isMe(i) && !helloSeen;
    if (!s.cpu && connected && !unanswered) {
      const mine = isMe(i) && document.body.dataset.socket === "open";
      const on = mine || connected.includes(i);
      li.appendChild(el("span", { class: `presence${on ? " on" : ""}`, "data-presence": on ? "online" : "away" },
                        `● ${t(on ? "online" : "away")}`));
    }
    if (!s.cpu && !isMe(i) && s.player_id) {
      // The button says what pressing it does ("Unmute" once muted), and a tag says the
      // state in words; no aria-pressed, which beside an action's name would say it twice
      // over ("Unmute, pressed").
      const muted = isMuted(i);
      if (muted) li.appendChild(el("span", { class: "tag muted", "data-muted": i }, t("muted")));
      const mute = el("button", { type: "button", class: "secondary mute", "data-mute": i,
                                  "data-muted": String(muted),
                                  "aria-label": t(muted ? "unmute_label" : "mute_label", { who: who(i) }) },
                      t(muted ? "unmute" : "mute"));
      mute.addEventListener("click", () => setMuted(i, !isMuted(i)));
      li.appendChild(mute);
    }
    if (match.placements) {
      li.appendChild(el("span", { class: "place" }, placeText(i)));
    } else if (match.turn === i) {
      li.appendChild(el("span", { class: "clock", id: "seat-clock" }));
    }
    list.appendChild(li);
  });
  tick();
}

function placeText(seat) {
  const place = match.placements[seat];
  const shared = match.placements.filter((p) => p === place).length > 1;
  return t(shared ? "place_shared" : "place", { n: place });
}

// The turn line: what is being drawn, else the command on its way, else the state.
function statusText() {
  if (match.status === "finished") return t("finished");
  if (showing) return showing;
  if (pending && !pending.probe) {
    const m = pending.message;
    return m.type === "roll" ? t("rolling")
      : m.type === "move" ? (pending.auto ? t("auto_moving") : t("moving", { piece: m.piece + 1 }))
      : m.type === "leave" ? t("leaving") : m.type === "concede" ? t("conceding") : t("reclaiming");
  }
  const turn = match.turn;
  if (mySeat !== null && match.seats[mySeat].stood_in) return t("stood_in_you");
  if (myTurn()) return match.phase === "roll" ? t("your_turn_roll") : t("your_turn_move", { die: match.die });
  if (turn === mySeat && cpuDeadline()) return t("cpu_turn_you");
  const words = controlled(match, turn) || cpuDeadline() ? t("cpu_thinking", { who: who(turn) })
    : t("turn_of", { who: who(turn) });
  return mySeat === null ? `${words} ${t("spectating")}` : words;
}

function drawStatus() {
  const status = $("#status");
  status.textContent = statusText();
  status.classList.toggle("mine", myTurn() && !pending && !showing);
}

// The message box: at the top before the match; under the turn's controls during it,
// under the result after it (an answer never pushes the board or the die down).
function placeMessage() {
  const slot = !match || $("#match-view").hidden ? $("#message-wrap")
    : match.status === "finished" ? $("#result-note") : $("#turn-note");
  if ($("#message").parentElement !== slot) slot.appendChild($("#message"));
}

function drawControls() {
  if (!match) return;
  placeMessage();
  const mine = myTurn();
  drawStatus();
  $("#keys-hint").textContent = mine && match.phase === "roll" ? t("roll_key")
    : mine && match.phase === "move" ? t("move_keys") : "";
  $("#turn-box").hidden = match.status === "finished";  // the result box says it
  const rolling = !!pending && pending.message.type === "roll";
  if (!showing) showDie(match.die, false);
  $("#die").classList.toggle("spinning", rolling && !showing);  // the press answered at once
  const roller = $("#roll");
  roller.hidden = !(mine && match.phase === "roll");
  roller.disabled = !!pending || busy > 0;
  if (board && !showing) {
    const moving = pending && !pending.probe && pending.message.type === "move" ? pending.message.piece : null;
    if (moving !== null) {  // the chosen piece stays marked until it walks
      board.setMovable(mySeat, moves.filter((m) => m.piece === moving), null, { chosen: moving });
    } else if (mine && match.phase === "move" && !pending && busy === 0) {
      board.setMovable(mySeat, moves, pick);
    } else {
      board.setMovable(null);
    }
  }
  const stoodIn = mySeat !== null && playing() && match.seats[mySeat].stood_in;
  $("#reclaim").hidden = !stoodIn;
  $("#leave-match").hidden = !(mySeat !== null && playing() && !stoodIn);
  $("#concede").hidden = !canConcede();
  if ($("#concede").hidden && $("#concede-dialog").open) $("#concede-dialog").close();
  $("#auto-move-box").hidden = mySeat === null || !playing();
  $("#ranked-badge").hidden = !match.ranked;
  drawSpeed($("#match-speed"), iAmHost() && playing() && hasCpus());
  const note = $("#speed-note");
  note.hidden = iAmHost() || !hasCpus() || !party;
  note.textContent = t("cpu_speed_note", { speed: t(`cpu_speeds.${cpuSpeed()}`) });
  // One command at a time: a button says so instead of ignoring a click.
  $("#reclaim").disabled = $("#leave-match").disabled = $("#concede").disabled = !!pending;
  autoMove();
  if (mine && match.phase === "roll" && !roller.disabled && document.activeElement === document.body) {
    roller.focus({ preventScroll: true });  // Enter and Space roll too; the page stays put
  }
}

function tick() {
  const clock = $("#seat-clock");
  const timer = $("#timer");
  const d = playing() ? match.deadline : null;
  if (!d || d.kind !== "turn") {
    timer.textContent = "";
    if (clock) clock.textContent = "";
    return;
  }
  const left = Math.max(0, Math.ceil((Date.parse(d.due_at) - serverNow()) / 1000));
  timer.textContent = t("timer", { s: left });
  timer.classList.toggle("low", left <= 10);
  if (clock) clock.textContent = `${left}s`;
}

// ------------------------------------------------------------------ the end
let ratingFor = null;
function drawResult() {
  const box = $("#result");
  if (!match || match.status !== "finished") {
    box.hidden = true;
    return;
  }
  box.hidden = false;
  const list = $("#placements");
  list.textContent = "";
  const order = match.seats.map((s, i) => i).sort((a, b) => match.placements[a] - match.placements[b]);
  for (const i of order) {
    const s = match.seats[i];
    const li = el("li", { class: `c-${s.colour}`, "data-seat": i, "data-place": match.placements[i] });
    li.appendChild(el("span", { class: "place" }, placeText(i)));
    li.appendChild(el("span", { class: "mark", "aria-hidden": "true" }, SYMBOL[s.colour]));
    // The colour in words, as the players list says it: the mark beside it is not read out,
    // and two CPUs of one level would otherwise read alike.
    li.appendChild(el("span", { class: "who" }, `${who(i)}${isMe(i) ? t("you_mark") : ""}`));
    li.appendChild(el("span", { class: "rating", "data-player": s.player_id || "" }));
    li.appendChild(el("span", { class: "luck", "data-luck-seat": i }));
    list.appendChild(li);
  }
  drawRematch();
  drawArena();
  if (analysisFor !== matchId) {
    analysisFor = matchId;
    analysis = null;
    analysisState = "pending";
    loadAnalysis(matchId);
  }
  drawAnalysis();
  if (!match.ranked) {
    $("#rating-note").textContent = t("rating_none");
  } else {
    if (ratingFor !== matchId) {
      ratingFor = matchId;
      rated = null;
      loadRatings(matchId);
    }
    drawRatings();
  }
}

// The rating change of each player of a ranked match, once the ranking service rated it.
let rated = null;
async function loadRatings(id) {
  $("#rating-note").textContent = t("rating_pending");
  for (let tries = 0; tries < 60 && matchId === id; tries++) {
    try {
      const answer = await api("GET", `/api/ratings/matches/${id}`);
      if (answer.rated) {
        rated = answer;
        drawRatings();
        return;
      }
    } catch (err) {
      $("#rating-note").textContent = errorText(err);
    }
    await new Promise((done) => setTimeout(done, 1000));
  }
}

function drawRatings() {
  if (!rated) return;
  for (const c of rated.changes) {
    const cell = document.querySelector(`#placements .rating[data-player="${c.player_id}"]`);
    if (!cell) continue;
    const delta = Math.round(c.rating_after) - Math.round(c.rating_before);
    cell.textContent = `${t("rating")} ` + t("rating_change", {
      before: Math.round(c.rating_before), after: Math.round(c.rating_after),
      delta: (delta >= 0 ? "+" : "") + delta,
    });
    cell.classList.add(delta > 0 ? "up" : delta < 0 ? "down" : "same");
  }
  $("#rating-note").textContent = "";
}

// ------------------------------------------------------------ the analysis
// Every finished match is analysed by the ranking service (docs/analysis.md) within
// seconds of its end: each human seat's line then says its chance to finish first from
// the start to the end and what moved it, in points that add up (analysis_words.js), and
// a link opens the replay at its analysis. Until it is written the page says so; the
// match socket says when it is (`{"type": "analysis"}`) and the page reads it at once.
// It also asks again after a reconnect (a word may have been missed meanwhile) and,
// seldom, on its own (a lost hint); a ranking service that does not answer (503) is said
// in words, and nothing else on the page waits for it.
// ms before each ask of its own (the socket's word comes first, as a rule); after the
// last the card says the replay will show it later.
const ANALYSIS_WAITS = [5000, 15000, 30000, 60000];
let analysisFor = null;
let analysis = null;           // the stored analysis (GET /api/ratings/analysis/{id})
let analysisState = "pending"; // pending, ready, later, unavailable, none
let analysisAsk = null;        // wakes the asking loop at once (the socket said it is ready)

// keepalive: a page left while the answer is on its way does not abort it.
async function askAnalysis(id) {
  let r;
  try {
    r = await fetch(`/api/ratings/analysis/${encodeURIComponent(id)}`,
                    { keepalive: true, cache: "no-store", headers: { Accept: "application/json" } });
  } catch (_) {
    return { state: "unavailable" };
  }
  if (r.ok) return { state: "ready", body: await r.json() };
  let code = null;
  try { code = (await r.json()).error; } catch (_) { /* not JSON */ }
  if (r.status === 404 && code === "not_found") return { state: "none" };
  if (r.status === 404 && code === "not_analysed") return { state: "pending" };
  return { state: "unavailable" };
}

async function loadAnalysis(id) {
  for (let tries = 0; matchId === id; tries++) {
    const answer = await askAnalysis(id);
    if (matchId !== id) return;
    if (answer.state === "ready") analysis = answer.body;
    const last = tries >= ANALYSIS_WAITS.length;
    // not written yet after the last ask: the replay shows it later
    analysisState = answer.state === "pending" && last ? "later" : answer.state;
    drawAnalysis();
    if (answer.state === "ready" || answer.state === "none" || last) return;
    // The next ask: when the socket says the analysis is written, or after a while.
    await new Promise((done) => {
      const timer = setTimeout(done, ANALYSIS_WAITS[tries]);
      analysisAsk = () => { clearTimeout(timer); done(); };
    });
    analysisAsk = null;
  }
}

// The match socket's word that the analysis is written (or a new socket: one may have
// been missed while there was none): the card asks at once, again if it had given up.
function analysisWritten() {
  if (analysisAsk) analysisAsk();
  else if (matchId && analysisFor === matchId && ["later", "unavailable"].includes(analysisState)) {
    loadAnalysis(matchId);
  }
}

function drawAnalysis() {
  const ready = analysisState === "ready" && analysis && analysis.seats;
  for (const cell of document.querySelectorAll("#placements .luck")) {
    const seat = Number(cell.dataset.luckSeat);
    const human = match && match.seats[seat] && !match.seats[seat].cpu;
    const split = ready && human ? chanceSplit(analysis, seat) : null;
    cell.replaceChildren(...(split ? [chanceBlock(split, isMe(seat))] : []));
  }
  const note = $("#analysis-note");
  note.textContent = ready ? t("chance.note") : t(`analysis_${analysisState}`);
  note.dataset.state = analysisState;
  const link = $("#analysis-link");
  link.hidden = !ready;
  link.href = `/replay/${encodeURIComponent(matchId)}#analysis`;
}

function drawRematch() {
  const button = $("#rematch");
  const me = guest();
  const seated = party && me && party.seats.some((s) => s.player_id === me.id);
  // An arena's table has no もう一度: the arena pairs the next match.
  button.hidden = !!arenaId || !(party && seated && match && match.status === "finished"
                                 && party.match_id === matchId);
}

// ------------------------------------------------------------------- start
// R rolls whatever has focus (but a text field); Space rolls unless it is pressing a
// button, a piece or a checkbox, which act on it themselves; 1–4 press that piece.
function onKey(e) {
  if (e.altKey || e.ctrlKey || e.metaKey || !match) return;
  const target = e.target instanceof Element ? e.target : null;
  // Keys typed into a field are its own; a checkbox or a radio button (the table's own
  // settings) takes only Space and the arrows.
  if (target && target.closest("input:not([type=checkbox]):not([type=radio]), select, textarea")) return;
  const pressable = target && target.closest("button, a[href], summary, [role=button], input");
  if ((e.key === "r" || e.key === "R" || (e.key === " " && !pressable)) && myTurn() && match.phase === "roll") {
    e.preventDefault();
    roll();
  } else if (/^[1-4]$/.test(e.key) && mySeat !== null && playing()) {
    e.preventDefault();
    tryPiece(Number(e.key) - 1);
  }
}

async function start() {
  siteHeader();
  drawSound();
  $("#sound").addEventListener("click", () => {
    soundOn = !soundOn;
    localStorage.setItem(SOUND_KEY, soundOn ? "on" : "off");
    drawSound();
    if (soundOn) SOUNDS.move();
  });
  $("#roll").addEventListener("click", roll);
  $("#reclaim").addEventListener("click", () => command({ type: "reclaim" }));
  $("#leave-match").addEventListener("click", () => { if (confirm(t("leave_confirm"))) command({ type: "leave" }); });
  const autoBox = $("#auto-move");
  autoBox.checked = autoMoveOn;
  autoBox.addEventListener("change", () => {
    autoMoveOn = autoBox.checked;
    localStorage.setItem(AUTO_KEY, autoMoveOn ? "on" : "off");
    if (match) drawControls();
  });
  const dialog = $("#concede-dialog");
  $("#concede").addEventListener("click", () => {
    dialog.showModal();
    $("#concede-cancel").focus();  // the safe answer first
  });
  $("#concede-cancel").addEventListener("click", () => dialog.close());
  $("#concede-confirm").addEventListener("click", () => {
    dialog.close();
    command({ type: "concede" });
  });
  $("#rematch").addEventListener("click", () => partyCommand("/rematch", undefined, $("#rematch")));
  $("#start").addEventListener("click", () => partyCommand("/start", undefined, $("#start")));
  for (const button of document.querySelectorAll(".stamps-switch")) {
    button.addEventListener("click", () => partyCommand("/settings", { stamps: !stampsOn() }, button));
  }
  $("#leave-party").addEventListener("click", async () => {
    await partyCommand("/leave", undefined, $("#leave-party"));
  });
  $("#join-form").addEventListener("submit", joinWithName);
  $("#stay-here").addEventListener("click", stayHere);
  $("#back-to-arena").addEventListener("click", (e) => { e.preventDefault(); goToArena(); });
  $("#copy").addEventListener("click", async () => {
    const input = $("#share-link");
    input.select();
    try { await navigator.clipboard.writeText(input.value); } catch (_) { document.execCommand("copy"); }
    $("#copied").textContent = t("copied_link");
  });
  document.addEventListener("keydown", onKey);
  const log = $("#log");
  log.addEventListener("scroll", () => {
    // Only the reader's own scrolling decides: an event of followLog's may arrive after
    // the box has changed size, when it no longer looks like the end.
    if (log.scrollTop !== followedTo) {
      following = log.scrollHeight - log.scrollTop - log.clientHeight < 8;
      // A scroll within a second of the reader's gesture, or of the scroll before it, is
      // the reader's: a fling (or a smooth wheel scroll on a busy phone) keeps moving the box
      // after the finger or the wheel has stopped, and reaches the top later than that.
      const byHand = Date.now() - scrolledByHand < 1000;
      if (byHand) scrolledByHand = Date.now();
      // The reader scrolled up to the top: the earlier lines come by themselves. Not when
      // the box scrolled to show the button that has the focus (it is pressed for that).
      if (log.scrollTop < 40 && byHand) loadOlder();
    }
  }, { passive: true });
  let scrolledByHand = 0;  // when the reader last turned a wheel, swiped or pressed a key there
  for (const kind of ["wheel", "touchmove", "keydown"]) {
    log.addEventListener(kind, () => { scrolledByHand = Date.now(); }, { passive: true });
  }
  $("#log-more").addEventListener("click", loadOlder);
  // A box that changes size (a phone turned, a window resized) keeps its newest line.
  if (typeof ResizeObserver === "function") new ResizeObserver(followLog).observe(log);
  document.addEventListener("languagechange", () => {
    drawSound();
    drawEarlier("");
    if (party && !party.match_id) drawParty();
    if (match) drawAll();
    drawArena();
  });
  setInterval(() => { if (match) tick(); }, 250);
  try {
    options = await api("GET", "/api/rules/options");
  } catch (err) {
    message(errorText(err));
  }
  if (pinnedMatch) {
    openMatch(pinnedMatch);
    return;
  }
  liveSocket({
    url: () => `/ws/parties/${encodeURIComponent(partyId)}`,
    onStatus: (state, seconds) => {
      if (!matchSocket) connectionStatus(state, seconds);
      if (state === "gone") message(t("not_found"));
    },
    onFrame: (frame) => { if (frame.type === "party") showParty(frame.party); },
  });
}
start();
// ---- end of table.js
watchSeats({ list: $("#players"), seats: () => (match ? match.seats : []), matchId: () => matchId });
