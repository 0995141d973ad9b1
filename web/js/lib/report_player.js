// ---- report_player.js: each human seat's completion rate and, for a player who sat in
// the match, a button to report another of its players. Put after site.js by
// the table (table.html) and the replay viewer (replay_viewer.html), inside their script.
//
// `watchSeats({list, seats, matchId})` follows a list of seats (`<li data-seat=i>`,
// drawn by the page as it likes): whenever the page draws it again, each human seat gets
// its completion rate ("完走率 96%", from GET /api/players/reputation, read once per
// player) and, when this device's guest sat in the match, every other human seat a
// report button. The button opens a dialog with the reasons; sending is
// POST /api/reports, and the dialog says it was sent (or why not).
import { el } from "./page_common.js";
import { WORDS, t, guest, ApiError, errorText, api, readCompletions } from "./site.js";
// Its words are the catalogue's `report_player` section (web/i18n/<lang>.json): a page
// that imports this module names that section on its #words block.
export const REPORT_REASONS = ["left_on_purpose", "abusive_stamps", "collusion", "other"];
export const completions = new Map();  // player id -> {finished, started, rate} | null
export let completionsWanted = new Set();

export async function loadCompletions(ids) {
  const missing = ids.filter((id) => !completions.has(id) && !completionsWanted.has(id));
  if (!missing.length) return false;
  missing.forEach((id) => completionsWanted.add(id));
  try {
    for (const [id, c] of Object.entries(await readCompletions(missing))) completions.set(id, c);
    return true;
  } catch (_) {
    // The ranking service is away: no rates shown; asked again on the next draw.
    completionsWanted = new Set([...completionsWanted].filter((id) => !missing.includes(id)));
    return false;
  }
}

export function completionText(playerId) {
  const c = completions.get(playerId);
  return c ? t("completion", { n: Math.round(c.rate * 100) }) : "";
}

export let reportDialog = null;
export function openReport(matchId, playerId, name) {
  if (!reportDialog) {
    reportDialog = el("dialog", { id: "report-dialog", "aria-labelledby": "report-title" });
    document.body.appendChild(reportDialog);
  }
  const d = reportDialog;
  d.textContent = "";
  const form = el("form", { method: "dialog" });
  form.appendChild(el("h2", { id: "report-title" }, t("report.title", { name })));
  const group = el("fieldset");
  group.appendChild(el("legend", {}, t("report.reason")));
  for (const reason of REPORT_REASONS) {
    const label = el("label", { class: "reason" });
    label.appendChild(el("input", { type: "radio", name: "reason", value: reason }));
    label.appendChild(document.createTextNode(" " + t(`report.reasons.${reason}`)));
    group.appendChild(label);
  }
  form.appendChild(group);
  const status = el("p", { id: "report-status", role: "status" });
  form.appendChild(status);
  const buttons = el("div", { class: "buttons" });
  const cancel = el("button", { type: "button", class: "secondary", id: "report-cancel" }, t("report.cancel"));
  const send = el("button", { type: "submit", id: "report-send" }, t("report.send"));
  buttons.append(cancel, send);
  form.appendChild(buttons);
  d.appendChild(form);
  cancel.addEventListener("click", () => d.close());
  group.addEventListener("change", () => { status.textContent = ""; });
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const picked = form.querySelector("input[name=reason]:checked");
    if (!picked) { status.textContent = t("report.pick"); return; }
    send.disabled = true;
    try {
      await api("POST", "/api/reports", { match_id: matchId, player_id: playerId, reason: picked.value });
      status.textContent = t("report.sent");
      status.dataset.sent = "true";
      form.querySelectorAll("input").forEach((i) => { i.disabled = true; });
      send.hidden = true;
      cancel.textContent = t("report.close");
    } catch (err) {
      const known = err instanceof ApiError && WORDS.report.refused[err.code];
      status.textContent = known || errorText(err);
      send.disabled = false;
    }
  });
  d.showModal();
  const first = form.querySelector("input[name=reason]");
  if (first) first.focus();
}

// `seats()`: the match's seats [{player_id, cpu, name}], by seat index; `matchId()`:
// the match's id (null: none yet).
export function watchSeats({ list, seats, matchId }) {
  const decorate = async () => {
    const all = seats() || [];
    const humans = all.filter((s) => s && s.player_id && !s.cpu).map((s) => s.player_id);
    const g = guest();
    const sat = g && humans.includes(g.id);
    for (const li of list.querySelectorAll("li[data-seat]")) {
      const s = all[Number(li.dataset.seat)];
      if (!s || !s.player_id || s.cpu) continue;
      let rate = li.querySelector(".completion");
      if (!rate) {
        rate = el("span", { class: "tag completion", "data-completion": s.player_id, title: t("completion_help") });
        li.appendChild(rate);
      }
      rate.textContent = completionText(s.player_id);
      rate.hidden = !rate.textContent;
      if (sat && s.player_id !== g.id && matchId() && !li.querySelector(".report")) {
        const button = el("button", { type: "button", class: "secondary report", "data-report": s.player_id },
                          t("report.button"));
        button.setAttribute("aria-label", t("report.title", { name: s.name }));
        button.addEventListener("click", () => openReport(matchId(), s.player_id, s.name));
        li.appendChild(button);
      }
    }
    if (await loadCompletions(humans)) decorate();
  };
  new MutationObserver(() => decorate()).observe(list, { childList: true });
  decorate();
  return decorate;
}
// ---- end of report_player.js
