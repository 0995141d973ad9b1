// The not found page's script (web/pages/not_found.html).
import { $ } from "./lib/page_common.js";
import { t, siteHeader } from "./lib/site.js";

// What is missing, from the address: /party/…, /match/… or /replay/…, /players/…,
// /tournament/…, else a page.
const first = location.pathname.split("/").filter(Boolean)[0] || "";
const kind = { party: "party", match: "match", replay: "match", report: "match",
               players: "player", tournament: "arena" }[first] || "page";
const draw = () => { $("#what").textContent = t(`missing.${kind}`); document.title = t(`missing.${kind}`); };
siteHeader();
document.addEventListener("languagechange", draw);
draw();
document.body.dataset.ready = "true";
