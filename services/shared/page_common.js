  // ---- page_common.js: shared by the services' pages. services/shared/pages.py puts it
  // in place of the `@include page_common.js` comment inside a page's script, so the
  // served page stays one self-contained file under its hash-based CSP.
  const $ = (sel) => document.querySelector(sel);
  const OPERATOR_KEY = "ludo.operatorToken";  // sessionStorage: this tab only
  class AuthError extends Error {}

  function el(tag, attrs, text) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
    if (text !== undefined && text !== null) node.textContent = text;
    return node;
  }

  // The #message box: `kind` "error" (default) or "info"; no text hides it.
  function message(text, kind) {
    const box = $("#message");
    box.textContent = text || "";
    box.className = text ? kind || "error" : "";
    box.hidden = !text;
  }

  // GET an operator-only JSON endpoint with the tab's operator token. A refused token is
  // an AuthError (the page asks for the token again); another failure an Error naming
  // the URL and the status.
  async function operatorJson(url) {
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
