// ---- analysis_words.js: how the pages say what a match's analysis (docs/analysis.md) means
// for one player, the same way wherever it is shown (the end card: table.js; the replay
// viewer; the player's page): their chance to finish first where it started and where it
// ended, and what moved it, in whole percentage points that add up (`chanceSplit`). Include
// it after site.js. Japanese follows the site's words (「1位になる確率」「選んだ手」).
import { el } from "./page_common.js";
import { t } from "./site.js";
// Its words are the catalogue's `analysis` section (web/i18n/<lang>.json): a page that
// imports this module names that section on its #words block.

// A change in points, signed: "+12", "−4", "±0" (a true minus sign); `digits` after
// the point ("+2.5"), as a figure rounded to them.
export function signedPoints(n, digits = 0) {
  const text = Math.abs(n).toFixed(digits);
  const zero = Number(text) === 0;
  return zero ? `\u00b1${text}` : n > 0 ? `+${text}` : `\u2212${text}`;
}

// "+12 points" / 「+12ポイント」 (`signed` false: "12 points", where the words say which way).
export function pointsText(n, { digits = 0, signed = true } = {}) {
  const figure = signed ? signedPoints(n, digits) : Math.abs(n).toFixed(digits);
  const one = digits === 0 && Math.round(Math.abs(n)) === 1;
  return t(one ? "chance.point" : "chance.points", { n: figure });
}

// Whole numbers near `values` that add up to `total` (a whole number; the values add up to
// it exactly or nearly): each rounded down, then the units still missing given to the
// largest remainders (ties: the earlier value), so no part moves by a unit or more.
export function sharesOf(values, total) {
  const floors = values.map((v) => Math.floor(v + 1e-9));
  let missing = total - floors.reduce((a, b) => a + b, 0);
  const order = values.map((v, i) => i).sort((a, b) => (values[b] - floors[b]) - (values[a] - floors[a]) || a - b);
  const out = floors.slice();
  for (let k = 0; missing > 0; k = (k + 1) % out.length, missing--) out[order[k]] += 1;
  for (let k = out.length - 1; missing < 0; k = (k + out.length - 1) % out.length, missing++) out[order[k]] -= 1;
  return out;
}

// Seat `seat`'s way through the match (docs/analysis.md, "What a player sees"), in whole
// points of its chance to finish first:
// - `start`, `end`: its chance (%) at the analysis's first and last point, as the replay's
//   chart draws them; `change` = end − start;
// - `dice` (its luck), `choices` (what its own choices cost: −own_error, never above 0),
//   `rest` (all else: the other seats' turns, a stand-in's moves, the analysis's own
//   approximations), rounded so that dice + choices + rest = change exactly;
// - no part beyond ±100: the parts are sums over the whole match, and one that went up and
//   came down again can exceed what a chance can move. Then the movement in both directions
//   is reduced by the same `cancelled` points (each side's parts in proportion), as little
//   as keeps every part within ±100; the sum stays the change (`gross`: the parts before);
// - `diceAgainst`: the dice's sign contradicts the result (a lucky player who did not
//   finish first, an unlucky one who did), which the words then say.
export function chanceSplit(analysis, seat) {
  const points = analysis.points;
  if (!points.length || !analysis.seats[seat]) return null;
  const startShare = points[0][1][seat], endShare = points[points.length - 1][1][seat];
  const start = Math.round(startShare * 100), end = Math.round(endShare * 100);
  const change = end - start;
  const s = analysis.seats[seat];
  const dice = s.luck * 100;
  const choices = s.choices ? -s.own_error * 100 : 0;
  const gross = sharesOf([dice, choices, change - dice - choices], change);
  let parts = gross;
  let cancelled = 0;
  if (parts.some((p) => Math.abs(p) > 100)) {
    const up = parts.filter((p) => p > 0), down = parts.filter((p) => p < 0).map((p) => -p);
    const sumUp = up.reduce((a, b) => a + b, 0), sumDown = down.reduce((a, b) => a + b, 0);
    const need = (sum, most) => (most > 100 ? sum - (100 * sum) / most : 0);
    cancelled = Math.ceil(Math.max(need(sumUp, Math.max(0, ...up)), need(sumDown, Math.max(0, ...down))) - 1e-9);
    const side = (sign, sum) => {
      const idx = parts.map((p, i) => i).filter((i) => Math.sign(parts[i]) === sign);
      const scaled = sharesOf(idx.map((i) => (Math.abs(parts[i]) * (sum - cancelled)) / sum), sum - cancelled);
      return new Map(idx.map((i, k) => [i, sign * scaled[k]]));
    };
    const shrunk = new Map([...side(1, sumUp), ...side(-1, sumDown)]);
    parts = parts.map((p, i) => (shrunk.has(i) ? shrunk.get(i) : p));
  }
  const [diceShown, choicesShown, restShown] = parts;
  const won = endShare > 0;
  return {
    seat, start, end, change, won,
    dice: diceShown, choices: choicesShown, rest: restShown, gross,
    choiceless: !s.choices, cancelled,
    diceAgainst: (won && diceShown < 0) || (!won && diceShown > 0),
  };
}

// The words of a split: its line, its parts (key, label, figure), why the dice look
// against the result when they do, and the movement that cancelled out.
export function chanceWords(split, you) {
  const who = you ? "you" : "seat";
  const parts = [
    { key: "dice", label: t("chance.dice"), points: split.dice, figure: signedPoints(split.dice) },
    { key: "choices", label: t(`chance.choices_${who}`), points: split.choices,
      figure: split.choiceless ? t("chance.no_choice") : signedPoints(split.choices) },
    { key: "rest", label: t("chance.rest"), points: split.rest, figure: signedPoints(split.rest) },
  ];
  const head = t(`chance.line_${who}`, { start: `${split.start}%`, end: `${split.end}%` });
  const change = t("chance.change", { change: pointsText(split.change) });
  return {
    line: head + change, head, change,
    parts,
    why: split.diceAgainst ? t(`chance.${split.won ? "won_unlucky" : "lost_lucky"}_${who}`) : "",
    cancelled: split.cancelled ? t(`chance.cancelled_${who}`, { n: pointsText(split.cancelled, { signed: false }) }) : "",
  };
}

// The split as the end card shows it under a player's name: the line, the parts as a
// list, and the sentences that explain (data-* hold the figures, for tests and tools).
export function chanceBlock(split, you) {
  const words = chanceWords(split, you);
  const box = el("div", { class: "chance", "data-start": split.start, "data-end": split.end,
                          "data-change": split.change, "data-cancelled": split.cancelled });
  const line = el("p", { class: "chance-line" }, words.head);
  line.appendChild(el("span", { class: "chance-change" }, words.change));
  box.appendChild(line);
  const list = el("ul", { class: "chance-parts", "aria-label": t("chance.parts") });
  for (const part of words.parts) {
    const li = el("li", { "data-part": part.key, "data-points": part.points });
    li.appendChild(el("span", { class: "chance-label" }, part.label));
    li.appendChild(document.createTextNode(" "));
    li.appendChild(el("span", { class: "chance-figure" }, part.figure));
    list.appendChild(li);
  }
  box.appendChild(list);
  for (const [cls, text] of [["chance-why", words.why], ["chance-cancelled", words.cancelled]]) {
    if (text) box.appendChild(el("p", { class: cls }, text));
  }
  return box;
}
