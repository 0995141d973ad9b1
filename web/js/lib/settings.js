// ---- settings.js: every table setting's allowed values and defaults
// (domain.settings.CHOICES), so the pages' forms offer exactly what the API takes. The
// server writes them into the page's JSON data block `#settings` (services/shared/pages.py);
// a data block is not executed, so the CSP has nothing to allow for it.
export const SETTINGS = JSON.parse(document.getElementById("settings").textContent);
