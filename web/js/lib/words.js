// ---- words.js: a page's words looked up and filled in. Pure (no DOM, no fetch): node's
// tests import it (web/test/words.test.js); page_common.js holds the page's words and
// language and calls these.
//
// The words are one language's catalogue sections merged into one table
// (web/i18n/<lang>.json, services/shared/words.py): nested objects, keys joined by dots.

// The value at "a.b.c" in `words`, or undefined.
export function lookup(words, key) {
  return key.split(".").reduce((node, part) => (node == null ? undefined : node[part]), words);
}

// `text` with each {name} replaced by vars[name] (a name without a value stays as it is).
export function fill(text, vars) {
  return text.replace(/\{(\w+)\}/g, (_, name) => (vars && name in vars ? String(vars[name]) : `{${name}}`));
}

// The text of `key` with `vars` filled in; a table (an object) as it is. A key with no
// word is said as the key itself, and `missing(key)` is told, so that a page never
// shows a key silently (page_common.js reports it as an error).
export function wording(words, key, vars, missing) {
  const value = lookup(words, key);
  if (value === undefined) {
    if (missing) missing(key);
    return key;
  }
  return typeof value === "string" ? fill(value, vars) : value;
}

// The form of `key` for the number `n` in `lang` ({n} filled in): the entry named by
// Intl.PluralRules' category ("one", "other"; ordinal: "two", "few" too), else "other".
export function plural(words, lang, key, n, vars, type = "cardinal", missing) {
  const forms = lookup(words, key);
  const text = forms && (forms[new Intl.PluralRules(lang, { type }).select(n)] ?? forms.other);
  if (typeof text !== "string") {
    if (missing) missing(key);
    return key;
  }
  return fill(text, { n, ...vars });
}

// `texts` as one passage in `lang`: sentences follow each other after a space, except in
// the languages whose script runs them together (Japanese, Chinese: 「…。…。」).
const UNSPACED = new Set(["ja", "zh"]);
export function sentences(lang, texts) {
  return texts.filter(Boolean).join(UNSPACED.has(lang.split("-")[0]) ? "" : " ");
}

// `from`'s words merged into `into`, deeply (a later section's table adds to an earlier).
export function merge(into, from) {
  for (const [key, value] of Object.entries(from)) {
    if (value && typeof value === "object" && !Array.isArray(value)) merge((into[key] = into[key] || {}), value);
    else into[key] = value;
  }
  return into;
}
// ---- end of words.js
