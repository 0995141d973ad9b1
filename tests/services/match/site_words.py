"""The site's words as the pages get them, read from the catalogues (web/i18n/<lang>.json,
services/shared/words.py), in the shape the older tests read them in: a table per
language, {"ja": {...}, "en": {...}, "hi": {...}}. `site_words()` is the `common` section
(what every site page says), `page_words(module)` the section a shared module's words are
(replay_words.js: `replay`)."""

from __future__ import annotations

from typing import Any

from services.shared.words import catalogue, languages
from tests.paths import ROOT

JS = ROOT / "web" / "js"

# The shared modules of web/js/lib and the catalogue section holding their words.
SECTIONS = {
    "replay_words.js": "replay",
    "report_player.js": "report_player",
    "analysis_words.js": "analysis",
}


def _section(name: str) -> dict[str, Any]:
    return {lang["code"]: catalogue(lang["code"])[name] for lang in languages()}


def site_words() -> dict[str, Any]:
    """The `common` section in every language."""
    return _section("common")


def page_words(module: str) -> dict[str, Any]:
    """The section of the shared module `module` (web/js/lib) in every language."""
    return _section(SECTIONS[module])
