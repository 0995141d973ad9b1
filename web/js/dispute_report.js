// The dispute report page's script (web/pages/dispute_report.html).
import { $, OPERATOR_KEY, AuthError, el, message, keyboardScroll, operatorJson } from "./lib/page_common.js";
import * as site from "./lib/site.js";
import { t, siteHeader } from "./lib/site.js";
import { matchWords } from "./lib/replay_words.js";

const matchId = decodeURIComponent(location.pathname.split("/").filter(Boolean).pop() || "");
let report = null;
const { seatName, colourName, who, eventText, stampText, optionText } = matchWords(() => report, site);

function time(iso) {
  if (!iso) return "";
  const d = new Date(iso);
  if (isNaN(d)) return iso;
  return d.toISOString().slice(11, 23);
}
function seconds(s) { return s === null || s === undefined ? "—" : s.toFixed(1); }

// The #message box, kept as words so a language switch says it again.
let said = null;
function say(key, vars, kind) {
  said = key ? { key, vars, kind } : null;
  message(key ? t(key, vars) : "", kind);
}

const readReport = () => operatorJson(`/api/matches/${encodeURIComponent(matchId)}/report`);

// A line of the timeline in the page's language: an event as the replay viewer says it,
// a stamp as the table does, a live connection opened or closed.
function entryText(entry) {
  if (entry.kind === "event") return eventText(entry);
  if (entry.kind === "stamp") return stampText(entry.seat, entry.type);
  if (entry.kind === "connected") return t("dispute.connected", { who: who(entry.seat) });
  if (entry.kind === "disconnected") return t("dispute.disconnected", { who: who(entry.seat) });
  return entry.text;  // a kind of line this page does not know yet: the server's
}
const kindWord = (kind) => (kind === "stamp" ? t("viewer.marks.stamp") : t(`dispute.kinds.${kind}`));

function entryRow(entry, rolls) {
  const kindClass = entry.kind === "event" ? entry.marks.map((m) => `m-${m}`).join(" ")
                                           : entry.kind;
  const tr = el("tr", { class: `entry ${kindClass}`, "data-kind": entry.kind });
  if (entry.version !== null) tr.dataset.version = entry.version;
  tr.appendChild(el("td", { class: "at" }, time(entry.at)));
  const what = el("td", { class: "what" }, entryText(entry));
  if (entry.kind !== "event") what.appendChild(el("span", { class: `badge k-${entry.kind}` },
                                                  kindWord(entry.kind)));
  for (const m of entry.marks) what.appendChild(el("span", { class: `badge m-${m}` }, t(`viewer.marks.${m}`)));
  const roll = entry.type === "DieRolled" ? rolls.get(entry.version) : null;
  if (roll && roll.options.length) {
    const list = el("ul", { class: "options" });
    for (const o of roll.options) {
      const chosen = roll.chosen && roll.chosen.piece === o.piece && roll.chosen.to === o.to;
      const li = el("li", { class: chosen ? "option chosen" : "option" }, optionText(o));
      if (chosen) li.appendChild(el("span", { class: "chosen-mark" }, t("viewer.chosen")));
      list.appendChild(li);
    }
    what.appendChild(list);
    if (roll.chosen_by) {
      what.appendChild(el("div", { class: `chooser by-${roll.chosen_by}` },
                          t("viewer.decided_by", { by: t(`viewer.by.${roll.chosen_by}`) })));
    }
  } else if (roll && roll.passed) {
    what.appendChild(el("div", { class: "muted" }, t(`dispute.passed.${roll.passed}`)));
  }
  tr.appendChild(what);
  tr.appendChild(el("td", { class: `by by-${entry.by || ""}` },
                    entry.by ? t(`viewer.by.${entry.by}`) : ""));
  return tr;
}

function entriesTable(entries, rolls) {
  const table = el("table", { class: "entries" });
  const body = el("tbody");
  for (const entry of entries) body.appendChild(entryRow(entry, rolls || new Map()));
  table.appendChild(body);
  return table;
}

// A turn's heading: "3手番目 · ○赤 CPU（弱い） · 12:00:01.250 → 12:00:04.000（2.8秒） · 時間切れ1回".
function turnTitle(turn) {
  const span = turn.ended_at
    ? t("dispute.turn_span", { from: time(turn.started_at), to: time(turn.ended_at), s: seconds(turn.seconds) })
    : t("dispute.turn_playing", { from: time(turn.started_at) });
  const parts = [t("dispute.turn_n", { n: turn.index + 1 }), who(turn.seat), span];
  if (turn.timeouts) {
    parts.push(turn.timeouts === 1 ? t("dispute.timeouts_one") : t("dispute.timeouts", { n: turn.timeouts }));
  }
  if (turn.stand_ins.length) {
    const why = turn.stand_ins.map((r) => t(`dispute.stand_in_reason.${r}`)).join(t("dispute.sep"));
    parts.push(t("dispute.stand_in", { why }));
  }
  return parts.join(" · ");
}

// Everything drawn from the report the page holds: again on a language switch.
function render() {
  const body = $("#summary tbody");
  body.textContent = "";
  for (const s of report.summary) {
    const tr = el("tr", { "data-seat": s.seat });
    const cells = [
      `${s.seat} ${colourName(s.colour)}`, seatName(s.seat),
      s.place ?? "—", s.turns, seconds(s.mean_seconds), seconds(s.max_seconds),
      s.timeouts, s.stand_ins, s.reclaims, s.connects, s.disconnects,
    ];
    cells.forEach((v, i) => tr.appendChild(el("td", i > 1 ? { class: "num" } : {}, String(v))));
    body.appendChild(tr);
  }
  const stamp = (iso) => (iso ? iso.replace("T", " ").replace(/\.\d+/, "") : "—");
  $("#span").textContent = report.ended_at
    ? t("dispute.span_ended", { start: stamp(report.started_at), end: stamp(report.ended_at) })
    : t("dispute.span_playing", { start: stamp(report.started_at) });

  const block = (title, entries) => {
    const box = el("div", { class: "turn" });
    box.appendChild(el("h3", {}, title));
    box.appendChild(entriesTable(entries));
    return box;
  };
  $("#prologue").textContent = "";
  $("#prologue").appendChild(block(t("dispute.before"), report.prologue));
  const turns = $("#turns");
  turns.textContent = "";
  for (const turn of report.turns) {
    // A connection lost or made during a turn flags it; a quick-chat stamp does not.
    const flagged = turn.timeouts > 0 || turn.stand_ins.length > 0 || turn.reclaims > 0 ||
      turn.entries.some((e) => e.kind !== "event" && e.kind !== "stamp");
    const box = el("div", { class: flagged ? "turn flagged" : "turn", "data-index": turn.index,
                            "data-seat": turn.seat });
    box.appendChild(el("h3", {}, turnTitle(turn)));
    const rolls = new Map(turn.rolls.map((r) => [r.version, r]));
    box.appendChild(entriesTable(turn.entries, rolls));
    turns.appendChild(box);
  }
  $("#no-turns").hidden = report.turns.length > 0;
  $("#epilogue").textContent = "";
  if (report.epilogue.length) $("#epilogue").appendChild(block(t("dispute.after"), report.epilogue));
  applyFilter();
}

function applyFilter() {
  const only = $("#only-flagged").checked;
  for (const box of document.querySelectorAll("#turns .turn")) {
    box.hidden = only && !box.classList.contains("flagged");
  }
}

function signedIn(yes) {
  $("#login").hidden = yes;
  $("#logout").hidden = !yes;
  $("#report").hidden = !yes;
}

async function load() {
  $("#loading").hidden = false;
  try {
    report = await readReport();
  } catch (err) {
    report = null;
    signedIn(false);
    if (err instanceof AuthError) {
      sessionStorage.removeItem(OPERATOR_KEY);
      say("dispute.wrong_token");
    } else {
      say("dispute.load_failed", { why: err.message });  // the URL and status, as they come
    }
    return;
  } finally {
    $("#loading").hidden = true;
  }
  say(null);
  signedIn(true);
  render();
  document.body.dataset.ready = "true";
}

function drawWords() {
  document.title = t("dispute.page_title");
  if (said) message(t(said.key, said.vars), said.kind);
  if (report && !$("#report").hidden) render();
}

siteHeader();
keyboardScroll();
drawWords();
document.addEventListener("languagechange", drawWords);
$("#match-id").textContent = matchId;
$("#viewer-link").href = `/replay/${encodeURIComponent(matchId)}`;
$("#login").addEventListener("submit", (e) => {
  e.preventDefault();
  sessionStorage.setItem(OPERATOR_KEY, $("#token").value.trim());
  $("#token").value = "";
  load();
});
$("#logout").addEventListener("click", () => {
  sessionStorage.removeItem(OPERATOR_KEY);
  signedIn(false);
  say("dispute.signed_out", {}, "info");
});
$("#only-flagged").addEventListener("change", applyFilter);
if (sessionStorage.getItem(OPERATOR_KEY)) load();
