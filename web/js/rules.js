// The rules page's script (web/pages/rules.html).
import { keyboardScroll } from "./lib/page_common.js";
import { t, siteHeader } from "./lib/site.js";

// The article is one skeleton for every language: siteHeader's `translate` puts each
// block of the catalogue's `rules` section into its element (data-t-html), and a
// language switch puts the new language's in (page_common.js `setLanguage`). The words
// are the site's own (web/i18n/, reviewed like the shell), and the page runs under a
// nonce-based CSP, so the markup they carry is safe as innerHTML.
const retitle = () => { document.title = t("rules_title"); };

siteHeader();
document.addEventListener("languagechange", retitle);
retitle();
keyboardScroll();
document.body.dataset.ready = "true";
