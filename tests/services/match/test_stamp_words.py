"""The pages' stamp ids are the domain's fixed set, each worded in every language: the
table's palette (table.js, plain JavaScript with no build step, so read as text) and the
catalogues' `common.stamp` (web/i18n/<lang>.json)."""

from __future__ import annotations

import re

from domain.stamps import PHRASES, STICKERS
from services.shared.words import catalogue, languages
from tests import paths

JS = paths.ROOT / "web" / "js"


def _ids(name: str) -> list[str]:
    text = (JS / "table.js").read_text()
    found = re.search(rf"const {name} = \[([^\]]*)\]", text)
    assert found is not None, name
    return re.findall(r'"([a-z_]+)"', found.group(1))


def test_the_palette_offers_the_domains_stamps_in_its_order() -> None:
    """table.js lists the phrases and stickers of domain/stamps.py, in the same order."""
    assert _ids("PHRASE_IDS") == list(PHRASES)
    assert _ids("STICKER_IDS") == list(STICKERS)


def test_every_stamp_has_words_in_every_language() -> None:
    """Every catalogue words every stamp id, and only those (its `common.stamp` table)."""
    for language in languages():
        table = catalogue(language["code"])["common"]["stamp"]
        assert set(table) == set(PHRASES) | set(STICKERS), language["code"]
