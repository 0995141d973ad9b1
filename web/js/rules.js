// The rules page's script (web/pages/rules.html).
import { keyboardScroll } from "./lib/page_common.js";
import { mergeWords, lang, t, siteHeader } from "./lib/site.js";

mergeWords({
  ja: { rules_title: "ルドーのルール・遊び方" },
  en: { rules_title: "Ludo: the rules and how to play" },
});

// Show the article of the page's language; the other is hidden.
function showLanguage() {
  for (const article of document.querySelectorAll("main.rules > article[lang]")) {
    article.hidden = article.lang !== lang;
  }
  document.title = t("rules_title");
}

siteHeader();
document.addEventListener("languagechange", showLanguage);
showLanguage();
keyboardScroll();
document.body.dataset.ready = "true";
