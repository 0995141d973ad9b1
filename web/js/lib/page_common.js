// ---- page_common.js: shared by the pages of both services (the match site, the
// ranking service's dashboard), imported by their modules.
export const $ = (sel) => document.querySelector(sel);

// The page's language, Japanese or English: the one chosen on this device before
// (`ludo.lang`, which the pages' language switch keeps), else the browser's first
// known language, else English.
export const LANG_KEY = "ludo.lang";
export function pickLanguage() {
  const saved = localStorage.getItem(LANG_KEY);
  if (saved === "ja" || saved === "en") return saved;
  const wanted = navigator.languages && navigator.languages.length ? navigator.languages : [navigator.language || "en"];
  for (const tag of wanted) {
    const base = String(tag).toLowerCase().split("-")[0];
    if (base === "ja" || base === "en") return base;
  }
  return "en";
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
