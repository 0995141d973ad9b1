// Unit tests of web/js/lib/words.js, the pure half of the pages' words (no DOM): run with
// `node --test web/test/` (package.json's `test`). Each test's name says what it pins.
import { test } from "node:test";
import assert from "node:assert/strict";
import { lookup, fill, wording, plural, sentences, merge } from "../js/lib/words.js";

const WORDS = {
  roll: "Roll",
  ev: { moved: "{who} moved piece {piece}", you: { rolled: "You rolled {die}" } },
  errors: { network: "No connection" },
  dice: { days: { one: "{n} day", other: "{n} days" } },
  place: { one: "{n}st", two: "{n}nd", few: "{n}rd", other: "{n}th" },
  only_other: { other: "{n} 日" },
};

test("lookup follows a dotted key into nested tables and says undefined for a missing one", () => {
  assert.equal(lookup(WORDS, "roll"), "Roll");
  assert.equal(lookup(WORDS, "ev.you.rolled"), "You rolled {die}");
  assert.deepEqual(lookup(WORDS, "errors"), { network: "No connection" });
  assert.equal(lookup(WORDS, "ev.nothing"), undefined);
  assert.equal(lookup(WORDS, "roll.deeper.still"), undefined);
  assert.equal(lookup(WORDS, "nowhere.at.all"), undefined);
});

test("fill puts each {name} given and leaves one without a value as it is", () => {
  assert.equal(fill("{who} moved piece {piece}", { who: "Aoi", piece: 2 }), "Aoi moved piece 2");
  assert.equal(fill("{who} moved piece {piece}", { who: "Aoi" }), "Aoi moved piece {piece}");
  assert.equal(fill("{n} and {n}", { n: 0 }), "0 and 0");
  assert.equal(fill("no names", undefined), "no names");
});

test("wording fills a text, gives a table as it is, and reports a missing key once said as the key", () => {
  const missing = [];
  const told = (key) => missing.push(key);
  assert.equal(wording(WORDS, "ev.moved", { who: "Ken", piece: 3 }, told), "Ken moved piece 3");
  assert.deepEqual(wording(WORDS, "errors", undefined, told), { network: "No connection" });
  assert.deepEqual(missing, []);
  assert.equal(wording(WORDS, "ev.flew", { who: "Ken" }, told), "ev.flew");
  assert.deepEqual(missing, ["ev.flew"]);
  assert.equal(wording(WORDS, "ev.flew"), "ev.flew");  // no one to tell: still the key
});

test("plural picks English's one and other", () => {
  assert.equal(plural(WORDS, "en", "dice.days", 1), "1 day");
  assert.equal(plural(WORDS, "en", "dice.days", 0), "0 days");
  assert.equal(plural(WORDS, "en", "dice.days", 2), "2 days");
});

test("plural picks Hindi's one for 0 and 1, and other from 2", () => {
  assert.equal(plural(WORDS, "hi", "dice.days", 0), "0 day");
  assert.equal(plural(WORDS, "hi", "dice.days", 1), "1 day");
  assert.equal(plural(WORDS, "hi", "dice.days", 2), "2 days");
});

test("plural in Japanese is always other, and a form the table lacks falls back to other", () => {
  assert.equal(plural(WORDS, "ja", "dice.days", 1), "1 days");
  assert.equal(plural(WORDS, "ja", "only_other", 1), "1 日");
  assert.equal(plural(WORDS, "en", "only_other", 1), "1 日");
});

test("plural with the ordinal type names places as each language counts them", () => {
  const place = (lang, n) => plural(WORDS, lang, "place", n, undefined, "ordinal");
  assert.deepEqual([1, 2, 3, 4, 11, 21, 22, 23].map((n) => place("en", n)),
                   ["1st", "2nd", "3rd", "4th", "11th", "21st", "22nd", "23rd"]);
  // Hindi's ordinals: one (1), two (2, 3), few (4), many (6; this table has none: other).
  assert.deepEqual([1, 2, 3, 4, 5, 6].map((n) => place("hi", n)),
                   ["1st", "2nd", "3nd", "4rd", "5th", "6th"]);
  assert.deepEqual([1, 2, 3].map((n) => place("ja", n)), ["1th", "2th", "3th"]);
});

test("plural fills other names besides n and reports a key with no forms", () => {
  const missing = [];
  const forms = { left: { one: "{n} left in {pool}", other: "{n} left in {pool}" } };
  assert.equal(plural(forms, "en", "left", 3, { pool: "A" }), "3 left in A");
  assert.equal(plural(WORDS, "en", "roll.none", 3, undefined, "cardinal", (k) => missing.push(k)), "roll.none");
  assert.equal(plural(WORDS, "en", "nothing", 3, undefined, "cardinal", (k) => missing.push(k)), "nothing");
  assert.deepEqual(missing, ["roll.none", "nothing"]);
});

test("sentences are spaced apart, but run together in Japanese", () => {
  assert.equal(sentences("en", ["One.", "Two."]), "One. Two.");
  assert.equal(sentences("hi", ["एक।", "दो।"]), "एक। दो।");
  assert.equal(sentences("ja", ["一。", "二。"]), "一。二。");
  assert.equal(sentences("ja-JP", ["一。", "", "二。"]), "一。二。");
  assert.equal(sentences("en", ["Only.", ""]), "Only.");
});

test("merge adds a later table's words into an earlier one's, deeply, and returns it", () => {
  const into = { a: "A", ev: { moved: "moved", you: { rolled: "rolled" } }, list: [1] };
  const out = merge(into, { b: "B", ev: { you: { moved: "you moved" } }, list: [2, 3] });
  assert.equal(out, into);
  assert.deepEqual(into, {
    a: "A", b: "B", list: [2, 3],
    ev: { moved: "moved", you: { rolled: "rolled", moved: "you moved" } },
  });
  // A table merged into nothing is copied, not shared: changing it later leaves the copy.
  const source = { ev: { moved: "x" } };
  const copy = merge({}, source);
  source.ev.moved = "y";
  assert.equal(copy.ev.moved, "x");
});
