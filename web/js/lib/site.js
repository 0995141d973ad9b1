// ---- site.js: what the site's pages share (lobby, table, ratings, …), imported by
// their modules.
// The page's words, the guest kept on this device, the API, live sockets.
import { $, el, WORDS, lang, t, translate, languageMenu } from "./page_common.js";
export const SYMBOL = { yellow: "○", blue: "□", red: "△", green: "✚" };

// --------------------------------------------------------------------------- words
// The page's words (web/i18n/<lang>.json's sections its shell names, put in by the
// server) and how to say them: page_common.js, shared with the dashboard. Japanese
// follows the site's rule page: rule names as it spells them.
export { WORDS, lang, t, tn, passage, locale, translate, setLanguage, languageMenu, LANGUAGES } from "./page_common.js";
document.documentElement.lang = lang;

// ------------------------------------------------------------------ the guest
// The guest's id, name and secret token, kept in this browser only (localStorage): a
// reload or a new tab on this device is the same player, back in the same seats.
export const GUEST_KEY = "ludo.guest";
export function guest() {
  try {
    const g = JSON.parse(localStorage.getItem(GUEST_KEY) || "null");
    return g && g.id && g.token ? g : null;
  } catch (_) {
    return null;
  }
}

// A refused request: the server's `error` code, `detail`, `field`, and `why` (the facts of
// an illegal move: the rule that stops the piece, docs/api.md).
export class ApiError extends Error {
  constructor(status, code, detail, field, why, body) {
    super(detail || code || `HTTP ${status}`);
    this.status = status;
    this.code = code;
    this.field = field;
    this.why = why || null;
    this.body = body || null;  // the whole error body (e.g. ranked_paused's `until`)
  }
}

// The server's clock minus ours, from the `Date` header of every API answer (turn timers
// count down against the server's clock; the header has whole seconds, hence the +0.5 s).
export let clockOffset = 0;
export const serverNow = () => Date.now() + clockOffset;
export function heardServerClock(res) {
  const date = Date.parse(res.headers.get("date") || "");
  if (Number.isFinite(date)) clockOffset = date + 500 - Date.now();
}

// An error as the player should read it: our words for codes we know, else the server's.
export function errorText(err) {
  if (!(err instanceof ApiError)) return t("errors.network");
  if (err.status === 429) return t("errors.too_many");
  const known = WORDS.errors[err.code];
  return known || err.message;
}

// A key for a command's Idempotency-Key: random, so a retry of the same click is the
// same key and a new click a new one. (crypto.randomUUID needs a secure context.)
export function newKey() {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

export async function api(method, path, body, key) {
  const headers = { Accept: "application/json" };
  const g = guest();
  if (g) headers.Authorization = "Bearer " + g.token;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  if (key) headers["Idempotency-Key"] = key;
  let res;
  try {
    res = await fetch(path, {
      method, headers, cache: "no-store",
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch (_) {
    throw new ApiError(0, "network", t("errors.network"));
  }
  heardServerClock(res);
  let data = null;
  try { data = await res.json(); } catch (_) { /* not JSON */ }
  if (!res.ok) {
    throw new ApiError(res.status, data && data.error, data && data.detail, data && data.field,
                       data && data.why, data);
  }
  return data;
}

// The guest of this device: created with `name` when there is none (with no name, the
// server makes one up in the page's language: `createPlayer` without `name`), renamed
// when the name changed (the same player: its seats, ratings and token stay).
export async function ensureGuest(name) {
  const g = guest();
  const wanted = (name || "").trim();
  if (g && (!wanted || wanted === g.name)) return g;
  if (g) {
    try {
      const renamed = await api("PUT", "/api/players/me", { name: wanted });
      const kept = { ...g, name: renamed.name };
      localStorage.setItem(GUEST_KEY, JSON.stringify(kept));
      return kept;
    } catch (err) {
      if (!(err instanceof ApiError) || err.status !== 401) throw err;
      // The server no longer knows this token (a new database): a new guest below.
    }
  }
  const made = await api("POST", "/api/players", wanted ? { name: wanted } : { lang });
  const fresh = { id: made.id, name: made.name, token: made.token };
  localStorage.setItem(GUEST_KEY, JSON.stringify(fresh));
  return fresh;
}

// ------------------------------------------------------------------ live sockets
// A WebSocket that comes back by itself: after a drop it waits 0.5 s, 1 s, 2 s … (at most
// 10 s, with some jitter) and opens again on `url()` (a function, so a match socket can
// ask for the events after the last one it saw). A connection that has gone dead
// without closing (a network that vanished) is found by a ping every 15 s that must be
// answered within 10 s; the browser going offline and online again is heeded at once.
// `onStatus` hears "connecting", "open", "waiting" (with the seconds until the next
// try) and "gone" (the server said the match or party does not exist).
export const PING_EVERY = 15000, PONG_WITHIN = 10000;
export function liveSocket({ url, onOpen, onFrame, onStatus }) {
  let socket = null;
  let attempt = 0;
  let timer = null;
  let closed = false;
  let countdown = null;
  let heartbeat = null;
  let lastHeard = 0;

  function open() {
    if (closed) return;
    clearTimeout(timer);
    clearInterval(countdown);
    onStatus && onStatus("connecting");
    const scheme = location.protocol === "https:" ? "wss:" : "ws:";
    const ws = new WebSocket(`${scheme}//${location.host}${url()}`);
    socket = ws;
    ws.addEventListener("open", () => {
      if (ws !== socket) return;
      lastHeard = Date.now();
      onStatus && onStatus("open");
      clearInterval(heartbeat);
      heartbeat = setInterval(() => {
        if (Date.now() - lastHeard > PING_EVERY + PONG_WITHIN) drop();
        else if (Date.now() - lastHeard > PING_EVERY) send({ type: "ping" });
      }, 1000);
      onOpen && onOpen(send);
    });
    ws.addEventListener("message", (e) => {
      if (ws !== socket) return;
      lastHeard = Date.now();
      let frame;
      try { frame = JSON.parse(e.data); } catch (_) { return; }
      // The backoff starts over only once the socket carries something: while the
      // database is away a socket opens, says 503 and closes (1011), and the retries
      // must keep slowing down, not come every half second from every page.
      if (frame.type !== "error") attempt = 0;
      if (frame.type !== "pong") onFrame(frame, send);
    });
    ws.addEventListener("close", (e) => {
      if (ws !== socket) return;  // a socket this one already gave up on
      socket = null;
      clearInterval(heartbeat);
      if (closed || e.code === 4404 || e.code === 4422) {
        if (!closed) onStatus && onStatus("gone", e.code);
        return;
      }
      retryLater();
    });
  }

  function retryLater() {
    const wait = Math.min(10, 0.5 * 2 ** attempt) * (0.8 + Math.random() * 0.4);
    attempt++;
    let left = Math.ceil(wait);
    onStatus && onStatus("waiting", left);
    countdown = setInterval(() => { left--; if (left > 0) onStatus && onStatus("waiting", left); }, 1000);
    timer = setTimeout(() => { clearInterval(countdown); open(); }, wait * 1000);
  }

  // Give up on the current connection (it may never say it closed) and try again.
  function drop() {
    const old = socket;
    socket = null;
    clearInterval(heartbeat);
    if (old) { try { old.close(4000, "no answer"); } catch (_) { /* already gone */ } }
    if (!closed) retryLater();
  }

  function send(message) {
    if (socket && socket.readyState === WebSocket.OPEN) {
      socket.send(JSON.stringify(message));
      return true;
    }
    return false;
  }

  const offline = () => { if (socket) drop(); };
  const online = () => { if (!socket && !closed) { attempt = 0; open(); } };
  window.addEventListener("offline", offline);
  window.addEventListener("online", online);
  open();
  return {
    send,
    close() {
      closed = true;
      clearTimeout(timer);
      clearInterval(countdown);
      clearInterval(heartbeat);
      window.removeEventListener("offline", offline);
      window.removeEventListener("online", online);
      if (socket) socket.close(1000);
      socket = null;
    },
    isOpen: () => !!socket && socket.readyState === WebSocket.OPEN,
  };
}

// ------------------------------------------------------------------ the page frame
// The header every site page shares, drawn into its empty <header class="site">: the
// brand, the links (the current page's marked), this device's guest, the language switch.
export function siteHeader() {
  const header = $("header.site");
  header.textContent = "";
  const brand = el("a", { class: "brand", href: "/" });
  brand.appendChild(el("span", { class: "dots", "aria-hidden": "true" }, "○□△✚"));
  brand.appendChild(el("span", { "data-t": "site" }));
  const nav = el("nav");
  let here = "/" + (location.pathname.split("/").filter(Boolean)[0] || "");
  if (here === "/tournament") here = "/tournaments";  // one arena: under the arenas
  for (const [href, key] of [["/", "lobby"], ["/tournaments", "arenas"], ["/leaderboard", "ratings"],
                             ["/rules", "rules_link"]]) {
    const link = el("a", { href, "data-t": key });
    if (href === here) link.setAttribute("aria-current", "page");
    nav.appendChild(link);
  }
  const right = el("div", { class: "right" });
  const g = guest();
  right.appendChild(el("span", { class: "me", id: "me" }, g ? g.name : ""));
  right.appendChild(languageMenu());
  header.append(brand, nav, right);
  translate();
}

// The status line under the header: "connecting", "reconnecting in 3 s", or hidden.
export function connectionStatus(state, seconds) {
  const box = $("#connection");
  if (!box) return;
  box.dataset.state = state;
  if (state === "open" || state === "gone") {  // gone: the page says why in its message
    box.hidden = true;
    return;
  }
  box.hidden = false;
  box.textContent = state === "connecting" ? t("connecting")
    : state === "waiting" ? t("reconnecting", { s: seconds }) : t("reconnecting_now");
}

// One event in words, as the table's log and the replay viewer both say it. `e` holds
// the event's facts: {type, seat, die, piece, from, to, captures, bonus, reason, retry,
// next_seat, place, first_seat, seed_hash}; `who(seat)` names a seat; `board` gives
// `home` and `goal`; `isMe(seat)` (optional) is true for this device's player's seat,
// whose events are said to them ("Your piece 2 moved", `ev.you.*`). Returns {text, kind}
// (kind "capture", "bonus", "turn" or ""), or null for a kind of event the page does not
// know.
export function eventWords(e, who, board, isMe) {
  // `key` said of `seat`: to the player when it is theirs, else with the seat's name.
  const say = (key, seat, vars) => (isMe && isMe(seat)
    ? t(`ev.you.${key}`, vars) : t(`ev.${key}`, { who: who(seat), ...vars }));
  switch (e.type) {
    case "MatchCreated": return { text: t("ev.created", { hash: e.seed_hash.slice(0, 16) }), kind: "turn" };
    case "MatchStarted": return { text: say("started", e.first_seat), kind: "" };
    case "DieRolled": return { text: say("rolled", e.seat, { die: e.die }), kind: "" };
    case "PieceMoved": {
      const piece = e.piece + 1, n = e.to - e.from;
      let text;
      if (e.from < 0) text = say("entered", e.seat, { piece });
      else if (e.to >= board.goal) text = say("to_goal", e.seat, { piece });
      else if (e.to >= board.home && e.from < board.home) text = say("to_home", e.seat, { piece });
      else text = say(n === 1 ? "moved_one" : "moved", e.seat, { piece, n });
      if (e.die === null || e.die === undefined) text += " " + t("ev.auto_enter");
      const captures = e.captures || [];
      for (const [seat] of captures) text += " " + say("captured", seat);
      if (e.bonus) text += " " + (e.bonus === 1 ? t("ev.bonus") : t("ev.bonus_n", { n: e.bonus }));
      return { text, kind: captures.length ? "capture" : e.bonus ? "bonus" : "" };
    }
    case "RollPassed":
      if (e.reason === "three_sixes") return { text: say("pass_sixes", e.seat), kind: "" };
      return { text: say(e.retry ? "pass_retry" : "pass_none", e.seat), kind: "" };
    case "TurnEnded": return { text: say("turn", e.next_seat), kind: "turn" };
    case "TurnTimedOut": return { text: say("timeout", e.seat), kind: "" };
    case "SeatStoodIn": return { text: say(`stand_in.${e.reason}`, e.seat), kind: "" };
    case "SeatReclaimed": return { text: say("reclaimed", e.seat), kind: "" };
    case "PlayerFinished": return { text: say("finished_player", e.seat, { n: e.place }), kind: "" };
    case "MatchConceded": return { text: say("conceded", e.seat), kind: "" };
    case "MatchFinished": return { text: t("ev.over"), kind: "" };
    case "SeedRevealed": return { text: t("ev.seed"), kind: "" };
    default: return null;
  }
}

// Where a piece at progress `p` stands, in words: the nest, the start, square n, the
// home column's n-th square, the goal (`model` is the board model).
export function spotName(model, p) {
  if (p < 0) return t("spot.nest");
  if (p >= model.goal) return t("spot.goal");
  if (p >= model.home) return t("spot.home_n", { n: p - model.last_track });
  return p === 0 ? t("spot.start") : t("spot.square_n", { n: p });
}

// The board's labels for board.js in the page's language: the board, each piece ("○Yellow
// Alice's piece 2, square 14"), each move offered. `model` is the board model,
// `who(seat)` names a seat.
export function boardLabels(model, who) {
  const where = (p) => spotName(model, p);
  const seatOf = (colour) => model.colours.indexOf(colour);
  return {
    board: t("spot.board"),
    piece: (colour, piece, p) => t("spot.piece", { who: who(seatOf(colour)), piece: piece + 1, where: where(p) }),
    move: (colour, move) => t("spot.move", { piece: move.piece + 1, from: where(move.from), to: where(move.to) }),
  };
}

// The text of one option's value: "あり"/"On", a choice's name, or the die faces.
export function optionValueText(key, value) {
  if (key === "enter_on") return value.join("・");
  if (key === "play_to_end" && value === false) return t("opt.play_to_end_off");
  if (typeof value === "boolean") return t(value ? "opt.on" : "opt.off");
  return t(`opt.${key}.values.${value}`);
}

// The rules of a party in words: the preset it matches, else the options changed from ours.
export function rulesSummary(rules, options) {
  const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);
  for (const [name, preset] of Object.entries(options.presets)) {
    if (Object.keys(preset).every((k) => same(preset[k], rules[k]))) return t(`preset_${name}`);
  }
  const base = options.presets[options.default];
  const changed = Object.keys(base).filter((k) => !same(base[k], rules[k]));
  return changed.map((k) => `${t(`opt.${k}.name`)}: ${optionValueText(k, rules[k])}`).join(" / ");
}

// ------------------------------------------------------------------ names of seats
// One naming of a seat for every page (lobby, table, replay viewer, dispute report): a
// guest by their own name, a CPU by its level in the page's language ("CPU（ふつう）" /
// "CPU (normal)"), never the server's stored "CPU 2 (normal)", which is English and
// numbered by seat; where the seat's colour is known it comes first ("□青 CPU（ふつう）"
// / "□Blue CPU (normal)"), as the board shows it.
export const cpuName = (level) => t(`cpu_level.${level}`);
export function seatLabel(seat) {
  if (!seat) return "";
  return seat.cpu ? cpuName(seat.cpu) : seat.name || "";
}
export const colourLabel = (colour) => `${SYMBOL[colour] || ""}${t(`colour.${colour}`)}`;
export function seatWho(seat) {
  if (!seat) return "";
  return seat.colour ? `${colourLabel(seat.colour)} ${seatLabel(seat)}` : seatLabel(seat);
}

// --------------------------------------------------------------- completion rates
// A player's completion rate (matches played to the end ÷ matches started, over the
// last 50) shown next to their name: `loadCompletionRates(ids)` asks the match service
// (`GET /api/players/reputation`, its own read: shown while the ranking service is
// away), and every name drawn by `completionTag` afterwards carries its rate.
export const completionRates = new Map();
export const completionListeners = [];
export function setCompletionRates(rates) {
  for (const [id, rate] of Object.entries(rates || {})) {
    if (typeof rate === "number" && rate >= 0 && rate <= 1) completionRates.set(id, rate);
  }
  for (const redraw of completionListeners) redraw();
}
// Called with a redraw function: it runs again whenever rates arrive.
export function onCompletionRates(redraw) { completionListeners.push(redraw); }
// A tag "完走率 96%" / "Finished 96%" for `playerId`, or null when no rate is known.
export function completionTag(playerId) {
  const rate = playerId ? completionRates.get(playerId) : undefined;
  if (rate === undefined) return null;
  return el("span", { class: "tag completion", "data-completion": String(rate) },
            t("completion", { n: Math.round(rate * 100) }));
}
// GET /api/players/reputation for `ids` (at most 100): {player_id: completion or null}.
// keepalive: a page reloaded or left while the answer is on its way does not abort it
// (the table asks nothing it would abandon, test_table.py).
export async function readCompletions(ids) {
  const r = await fetch(`/api/players/reputation?ids=${ids.map(encodeURIComponent).join(",")}`,
                        { keepalive: true, headers: { Accept: "application/json" } });
  if (!r.ok) throw new ApiError(r.status, "reputation", String(r.status));
  const out = {};
  for (const p of (await r.json()).players) out[p.player_id] = p.completion;
  return out;
}
export const completionAsked = new Set();
export async function loadCompletionRates(ids) {
  const wanted = [...new Set(ids)].filter((id) => id && !completionAsked.has(id)).slice(0, 100);
  if (!wanted.length) return;
  wanted.forEach((id) => completionAsked.add(id));
  try {
    const rates = {};
    for (const [id, c] of Object.entries(await readCompletions(wanted))) if (c) rates[id] = c.rate;
    setCompletionRates(rates);
  } catch { wanted.forEach((id) => completionAsked.delete(id)); }
}
// ---- end of site.js
