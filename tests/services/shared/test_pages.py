"""The services' self-contained pages: shared script inlined once, CSP naming each block."""

from __future__ import annotations

import base64
import hashlib
import re

import pytest

from services.shared.pages import inline_page

PAGES = [
    ("services.match", "replay_viewer.html"),
    ("services.match", "dispute_report.html"),
    ("services.ranking", "dashboard.html"),
    ("services.match", "lobby.html"),
    ("services.match", "table.html"),
    ("services.match", "ratings.html"),
    ("services.match", "not_found.html"),
    ("services.match", "rules.html"),
]


@pytest.mark.parametrize(("package", "name"), PAGES)
def test_the_shared_script_is_inlined_once(package: str, name: str) -> None:
    """Each page carries page_common.js exactly once, in place of its include marker."""
    html, _csp = inline_page(package, name)
    assert "/*@include" not in html
    assert html.count("async function operatorJson(") == 1
    assert html.count("function el(") == 1 and html.count("function message(") == 1


@pytest.mark.parametrize(("package", "name"), PAGES)
def test_the_csp_allows_exactly_the_served_blocks(package: str, name: str) -> None:
    """The policy's hashes are those of the blocks as served (after the include)."""
    html, csp = inline_page(package, name)
    policy = dict(part.strip().split(" ", 1) for part in csp.split(";"))
    for kind in ("script", "style"):
        bodies = re.findall(rf"<{kind}>(.*?)</{kind}>", html, re.DOTALL)
        hashes = {
            "'sha256-" + base64.b64encode(hashlib.sha256(b.encode()).digest()).decode() + "'"
            for b in bodies
        }
        assert bodies and set(policy[f"{kind}-src"].split()) == hashes
    assert policy["default-src"] == "'none'" and "unsafe" not in csp


def test_the_board_is_inlined_into_the_replay_viewer() -> None:
    """board.js in the viewer's script and board.css in its style, once each."""
    html, _csp = inline_page("services.match", "replay_viewer.html")
    script = re.findall(r"<script>(.*?)</script>", html, re.DOTALL)
    style = re.findall(r"<style>(.*?)</style>", html, re.DOTALL)
    assert sum(b.count("const LudoBoard = ") for b in script) == 1
    assert sum(b.count("---- board.css") for b in style) == 1
