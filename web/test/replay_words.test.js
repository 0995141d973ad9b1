// web/js/lib/replay_words.js's `matchWords`, in node (the module is pure: the page hands
// it site.js, a test hands it the same few sayers over a catalogue's words): how the
// replay viewer and the dispute report say a legal move, a stamp, an event and a seat,
// in English, Hindi and Japanese, with every key it names in the catalogues.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { matchWords } from "../js/lib/replay_words.js";
import { merge, wording } from "../js/lib/words.js";

// The words of the replay viewer's page in `lang` (its shell's sections, merged as the
// server merges them), and the keys asked for that had no word.
function pageWords(lang) {
  const catalogue = JSON.parse(readFileSync(new URL(`../i18n/${lang}.json`, import.meta.url), "utf-8"));
  const WORDS = {};
  for (const section of ["common", "report_player", "replay", "analysis"]) merge(WORDS, catalogue[section]);
  const missing = [];
  return { WORDS, missing, t: (key, vars) => wording(WORDS, key, vars, (k) => missing.push(k)) };
}

// site.js's other sayers, reduced to what shows which of them was asked: their own
// tests are the pages'. `eventWords` words a move only (another event: none, as for a
// kind of event the page does not know).
function site(lang) {
  const words = pageWords(lang);
  return {
    ...words,
    eventWords: (facts, who) => (facts.type === "PieceMoved"
      ? { text: `${who(facts.seat)} moved ${facts.piece} (first ${facts.first_seat}, ${facts.seed_hash})` }
      : null),
    spotName: (board, p) => `${board.kind}:${p}`,
    seatLabel: (seat) => `label ${seat.name}`,
    colourLabel: (colour) => `colour ${colour}`,
    seatWho: (seat) => seat.name,
  };
}

const MODEL = {
  seats: [{ name: "Ann", colour: "yellow" }, { name: "Bo", colour: "red" }],
  board: { kind: "cross" },
  first_seat: 1,
  fairness: { seed_hash: "ab12" },
};

test("a legal move says its piece, where it goes and what it captures", () => {
  const words = site("en");
  const said = matchWords(() => MODEL, words);
  assert.equal(said.optionText({ piece: 1, from: -1, to: 0, captures: [] }), "piece 2: cross:-1 → cross:0");
  assert.equal(said.optionText({ piece: 0, from: 10, to: 13, captures: [[1, 2]] }),
               "piece 1: cross:10 → cross:13, captures Bo's piece 3");
  assert.deepEqual(words.missing, []);
});

test("a move is said in Hindi and Japanese from their own catalogues", () => {
  for (const [lang, expected] of [
    ["hi", "गोटी 1: cross:10 → cross:13, Bo की 3 नंबर गोटी कटती है"],
    ["ja", "コマ1: cross:10 → cross:13（Boのコマ3を取る）"],
  ]) {
    const words = site(lang);
    const said = matchWords(() => MODEL, words);
    assert.equal(said.optionText({ piece: 0, from: 10, to: 13, captures: [[1, 2]] }), expected, lang);
    assert.deepEqual(words.missing, [], lang);
  }
});

test("a stamp is said as a sticker when the catalogue has it as one, else as a stamp", () => {
  const words = site("en");
  const said = matchWords(() => MODEL, words);
  assert.equal(said.stampText(0, "six"), "Ann: sticker “Rolled a 6!”");
  assert.equal(said.stampText(1, "good_luck"), "Bo: “Good luck”");
  assert.deepEqual(words.missing, []);
});

test("an event is worded by the site's words, with the match's facts, else the server's line", () => {
  const said = matchWords(() => MODEL, site("en"));
  assert.equal(said.eventText({ type: "PieceMoved", seat: 0, chosen: 2, text: "server" }),
               "Ann moved 2 (first 1, ab12)");
  assert.equal(said.eventText({ type: "SomethingNew", seat: 0, text: "the server's line" }),
               "the server's line");
});

test("a seat is named by the site's labels; no seat is no one", () => {
  const said = matchWords(() => MODEL, site("en"));
  assert.equal(said.seatName(1), "label Bo");
  assert.equal(said.colourName("red"), "colour red");
  assert.equal(said.who(0), "Ann");
  assert.equal(said.who(null), "");
  assert.equal(said.who(undefined), "");
});

test("the model is read when a word is asked for, not when the words are made", () => {
  let model = null;
  const said = matchWords(() => model, site("en"));
  model = MODEL;
  assert.equal(said.who(1), "Bo");
});

test("a key without a word is told, and said as the key itself", () => {
  const words = site("en");
  delete words.WORDS.viewer.option_capture;
  const said = matchWords(() => MODEL, words);
  assert.equal(said.optionText({ piece: 0, from: 1, to: 2, captures: [[1, 0]] }),
               "piece 1: cross:1 → cross:2viewer.option_capture");
  assert.deepEqual(words.missing, ["viewer.option_capture"]);
});
