// ---- replay_words.js: `matchWords`, how the replay viewer and the dispute report
// (dispute_report.html) say a match's seats, events, stamps and legal moves. The viewer's
// own words are its catalogue section (web/i18n/<lang>.json `replay`, key `viewer`); the
// events themselves are worded with the table's `ev.*` (site.js `eventWords`).
//
// Pure: no DOM and no import. The page hands in what it says words with (site.js, whose
// exports it names below), so node's tests can import this file with words of their own
// (web/test/replay_words.test.js).

// The words of the match `model()` (a function: the page's model when asked), which
// holds `seats`, `board`, `first_seat` and `fairness` (getReplaySteps and
// getDisputeReport alike, docs/api.md). An event is a step or a report entry: its type,
// seat and facts (`die`, `chosen`, `from`, `to`, …). `site` says the words: the page
// passes site.js itself (`import * as site`); what is read of it is `WORDS` (the page's
// words, in its language at the time of asking), `t`, `eventWords`, `spotName`,
// `seatLabel`, `colourLabel` and `seatWho`.
export function matchWords(model, site) {
  const { t } = site;
  // A seat as the table names it: "○黄 CPU（ふつう）" / "○Yellow hostess".
  // (site.js `seatLabel` and `seatWho`: the one naming of the site's pages).
  const seatName = (seat) => site.seatLabel(model().seats[seat]);
  const colourName = (colour) => site.colourLabel(colour);
  function who(seat) {
    return seat === null || seat === undefined ? "" : site.seatWho(model().seats[seat]);
  }
  const where = (p) => site.spotName(model().board, p);
  // Worded as the table words it (site.js `eventWords`); a kind of event this page does
  // not know yet: the server's English line.
  function eventText(event) {
    const m = model();
    const facts = { ...event, piece: event.chosen, first_seat: m.first_seat, seed_hash: m.fairness.seed_hash };
    const said = site.eventWords(facts, who, m.board);
    return said ? said.text : event.text;
  }
  // A quick-chat stamp (its id, domain/stamps.py) sent from `seat`, as the table says it.
  function stampText(seat, stamp) {
    const sticker = !!site.WORDS.sticker && stamp in site.WORDS.sticker;
    const word = sticker ? t(`sticker.${stamp}`) : t(`stamp.${stamp}`);
    return t(sticker ? "sticker_said" : "stamp_said", { who: who(seat), stamp: word });
  }
  // One legal move of a roll: "コマ2: 巣 → スタート（○赤 Bo のコマ1を取る）".
  function optionText(o) {
    let text = t("viewer.option", { piece: o.piece + 1, from: where(o.from), to: where(o.to) });
    for (const [s, p] of o.captures) text += t("viewer.option_capture", { who: who(s), piece: p + 1 });
    return text;
  }
  return { seatName, colourName, who, where, eventText, stampText, optionText };
}
// ---- end of replay_words.js
