"""The pages' stamp ids are the domain's fixed set, each worded in both languages: the
table's palette (table.js) and the words (site.js) are plain JavaScript with no build step,
so this reads them as text."""

from __future__ import annotations

import re

from domain.stamps import PHRASES, STICKERS
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


def test_every_stamp_has_words_in_japanese_and_english() -> None:
    """site.js words every stamp id in both languages (one `stamp:` table per language)."""
    text = (JS / "lib" / "site.js").read_text()
    tables = re.findall(r"\bstamp: \{(.*?)\}", text, flags=re.S)
    assert len(tables) == 2
    for table in tables:
        assert set(re.findall(r"\b([a-z_]+):", table)) == set(PHRASES) | set(STICKERS)
