// ---- page_common.js: shared by the pages of both services (the match site, the
// ranking service's dashboard), imported by their modules.
import { wording, plural, merge, sentences } from "./words.js";

export const $ = (sel) => document.querySelector(sel);

// ------------------------------------------------------------------ the page's words
// The server fills the shell's #words block (services/shared/words.py) with the page's
// words in the reader's language: {lang, languages: [{code, name, menu}], words}.
// `t` and `tn` say them; `setLanguage` fetches the same sections of another catalogue.
const served = JSON.parse($("#words").textContent);
const SECTIONS = $("#words").dataset.sections.split(" ");
export const LANGUAGES = served.languages;
export let lang = served.lang;
// "Language" in a language (its catalogue's `meta.language_menu`).
const menuLabel = () => (LANGUAGES.find((l) => l.code === lang) || {}).menu || "Language";
// The words of the page in `lang`: one object, replaced in place by a switch, so that a
// module holding it reads the new words.
export const WORDS = served.words;
export const LANGUAGE_COOKIE = "ludo_lang";
// A device that chose before the cookie kept its choice in localStorage (`ludo.lang`):
// carried over once, then forgotten.
const kept = localStorage.getItem("ludo.lang");
if (kept) {
  localStorage.removeItem("ludo.lang");
  const chosen = document.cookie.split("; ").some((c) => c.startsWith(`${LANGUAGE_COOKIE}=`));
  if (!chosen && kept !== lang && served.languages.some((l) => l.code === kept)) {
    queueMicrotask(() => setLanguage(kept).catch((err) => console.error(err)));
  }
}

// A key with no word is an error a test sees (console.error), said once per key.
const reported = new Set();
function missing(key) {
  if (reported.has(`${lang}:${key}`)) return;
  reported.add(`${lang}:${key}`);
  console.error(`no word for "${key}" in ${lang}`);
}
// t(key, {who: "…"}): the text of `key` in the page's language, {names} filled in.
export const t = (key, vars) => wording(WORDS, key, vars, missing);
// tn(key, n): the plural form of `key` for the number n (words.js `plural`).
export const tn = (key, n, vars, type) => plural(WORDS, lang, key, n, vars, type, missing);

// passage(a, b): sentences as one passage in the page's language (words.js `sentences`).
export const passage = (...texts) => sentences(lang, texts);
// The page's language as Intl formats dates in it: English in the British order the site
// has always shown ("7 Dec 2026, 17:02"); another language as its own.
const LOCALES = { ja: "ja-JP", en: "en-GB", hi: "hi-IN" };
export const locale = () => LOCALES[lang] || lang;

// Every element with data-t="key" gets that text (data-t-attr="placeholder" puts it
// there; data-t-html puts the word's own markup: the rules' articles, from the catalogue).
export function translate(root) {
  for (const node of (root || document).querySelectorAll("[data-t]")) {
    const attr = node.dataset.tAttr;
    if (attr) node.setAttribute(attr, t(node.dataset.t));
    else if ("tHtml" in node.dataset) node.innerHTML = t(node.dataset.t);
    else node.textContent = t(node.dataset.t);
  }
}

// Switches the page to `code`: fetches its catalogue's sections of this page, says
// every data-t again, then tells the page ("languagechange") to draw what it drew. The
// choice is kept in the `ludo_lang` cookie, which the server reads for the next page.
export async function setLanguage(code) {
  const sections = await Promise.all(SECTIONS.map(async (section) => {
    const res = await fetch(`/static/i18n/${code}/${section}.json`);
    if (!res.ok) throw new Error(`/static/i18n/${code}/${section}.json: HTTP ${res.status}`);
    return res.json();
  }));
  for (const key of Object.keys(WORDS)) delete WORDS[key];
  for (const table of sections) merge(WORDS, table);
  lang = code;
  document.cookie = `${LANGUAGE_COOKIE}=${code}; path=/; max-age=31536000; samesite=lax`;
  document.documentElement.lang = code;
  translate();
  document.dispatchEvent(new CustomEvent("languagechange"));
}

// The language menu: a <select> of every language by its own name (each marked with its
// language, so a screen reader says it right: WCAG 3.1.2), labelled in the page's.
export function languageMenu() {
  const label = el("label", { class: "language-menu" });
  const caption = el("span", { class: "visually-hidden" }, menuLabel());
  const select = el("select", { id: "lang", "aria-label": menuLabel() });
  for (const { code, name } of LANGUAGES) {
    const option = el("option", { value: code, lang: code }, name);
    if (code === lang) option.selected = true;
    select.append(option);
  }
  // Arrow keys on the closed menu change it at each press: a switch under way goes on to
  // the last choice rather than the menu being disabled meanwhile (which would take the
  // keyboard's focus away from it).
  let wanted = null;
  select.addEventListener("change", async () => {
    const busy = wanted !== null;
    wanted = select.value;
    if (busy) return;
    try {
      while (wanted !== lang) await setLanguage(wanted);
    } catch (err) {
      console.error(err);
      select.value = lang;
    } finally {
      wanted = null;
    }
  });
  document.addEventListener("languagechange", () => {
    caption.textContent = menuLabel();
    select.setAttribute("aria-label", menuLabel());
  });
  label.append(caption, select);
  return label;
}
// The page is painted once its modules have run their first pass (the page's words put in,
// the article of its language shown): until then the stylesheets keep <body> hidden
// (`html:not([data-shown])`). A module's graph runs in one go, so this microtask, queued
// while this module runs, comes after the page's own module has run and before any paint:
// an English reader never sees the shell's Japanese for a frame. (The mark lets a test see
// that the first paint came after it.)
queueMicrotask(() => { document.documentElement.dataset.shown = ""; performance.mark("ludo-shown"); });

export const OPERATOR_KEY = "ludo.operatorToken";  // sessionStorage: this tab only
export class AuthError extends Error {}

export function el(tag, attrs, text) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
  if (text !== undefined && text !== null) node.textContent = text;
  return node;
}

// The #message box: `kind` "error" (default) or "info"; no text hides it.
//
// A message about one field names it: message(text, "error", {field, valid}). The field
// is marked (aria-invalid, and aria-describedby the box, so a screen reader reads the
// message with it), and the message clears by itself as soon as the field is valid
// again: after every input or change event on the page, `valid()` is asked (by default
// `field.checkValidity()`; give it when the page's rule is not the browser's, e.g. a
// name that is blank once trimmed). `valid` may read the page afresh each time, so a
// field drawn again (a language switch) is still followed. Any later message(...)
// replaces it and the watch. Pages use it for their forms: the lobby's name and "values
// that leave the nest"; the table's join form can do the same with its #join-name.
export let watched = null;  // {field, check}: the field the message is about

export function unwatch() {
  if (!watched) return;
  document.removeEventListener("input", watched.check);
  document.removeEventListener("change", watched.check);
  const field = watched.field;
  field.removeAttribute("aria-invalid");
  const rest = (field.getAttribute("aria-describedby") || "").split(/\s+/)
    .filter((id) => id && id !== "message");
  if (rest.length) field.setAttribute("aria-describedby", rest.join(" "));
  else field.removeAttribute("aria-describedby");
  watched = null;
}

export function message(text, kind, about) {
  unwatch();
  const box = $("#message");
  box.textContent = text || "";
  box.className = text ? kind || "error" : "";
  box.hidden = !text;
  const field = text && about && about.field;
  if (!field) return;
  const valid = about.valid || (() => field.checkValidity());
  field.setAttribute("aria-invalid", "true");
  const ids = (field.getAttribute("aria-describedby") || "").split(/\s+/).filter(Boolean);
  if (!ids.includes("message")) field.setAttribute("aria-describedby", [...ids, "message"].join(" "));
  // Heard as the event bubbles up to the document, so after the page's own handlers of
  // it (on the field or its form): a field the page redraws is read as drawn anew.
  const check = () => {
    if (watched && watched.check === check && valid()) message("");
  };
  watched = { field, check };
  document.addEventListener("input", check);
  document.addEventListener("change", check);
}

// A box whose content can scroll must be reachable by the keyboard, or its hidden part
// cannot be read without a mouse (WCAG 2.1.1; axe: scrollable-region-focusable). Each
// `[data-scroll]` box is in the Tab order while its content overflows it, and out of it
// when everything fits. Name the box (aria-labelledby its heading; a <div> gets
// role="region" too), so that a screen reader says what took the focus.
export function keyboardScroll() {
  const boxes = Array.from(document.querySelectorAll("[data-scroll]"));
  const update = () => {
    for (const box of boxes) {
      const scrolls = box.scrollWidth > box.clientWidth + 1 || box.scrollHeight > box.clientHeight + 1;
      if (scrolls) box.setAttribute("tabindex", "0");
      else box.removeAttribute("tabindex");
    }
  };
  // A box's overflow changes with its own size (a resize, a page shown) and with its
  // content (rows drawn, words of another language): both are watched.
  const resized = new ResizeObserver(update);
  const changed = new MutationObserver(update);
  for (const box of boxes) {
    resized.observe(box);
    changed.observe(box, { childList: true, subtree: true, characterData: true });
  }
  update();
}

// GET an operator-only JSON endpoint with the tab's operator token. A refused token is
// an AuthError (the page asks for the token again); another failure an Error naming
// the URL and the status.
export async function operatorJson(url) {
  const token = sessionStorage.getItem(OPERATOR_KEY) || "";
  const res = await fetch(url, {
    headers: { Authorization: "Bearer " + token, Accept: "application/json" },
    cache: "no-store",
  });
  if (res.status === 401 || res.status === 403) throw new AuthError();
  if (!res.ok) {
    let detail = "";
    try { detail = (await res.json()).detail || ""; } catch (_) { /* not JSON */ }
    throw new Error(`${url}: HTTP ${res.status} ${detail}`.trim());
  }
  return res.json();
}
// ---- end of page_common.js
