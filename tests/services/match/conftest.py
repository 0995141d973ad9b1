"""Fixtures of the match service's page tests: `site` (the match and ranking services on
loopback ports, tests/services/match/site_pages.py) and `browser` (Debian's Chromium).
A module may define its own `site` (the rules page needs only the match service)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from playwright.async_api import Browser

from tests.browser import launched
from tests.services.match.site_pages import Site, running_site


@pytest.fixture
def site(database_url: str, tmp_path: Path) -> Iterator[Site]:
    with running_site(database_url, tmp_path) as site:
        yield site


@pytest.fixture
async def browser() -> AsyncIterator[Browser]:
    async with launched() as chromium:
        yield chromium
