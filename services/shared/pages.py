"""Self-contained HTML pages of both services, each served under a CSP that names its
inline blocks by hash.

The pages (the replay viewer and dispute report of the match service, the operator
dashboard of the ranking service) carry their script and style inline and load nothing
else. What they share lives once, in files a page names in a comment
`/*@include NAME.js*/` inside its `<script>` (or `/*@include NAME.css*/` inside its
`<style>`), replaced by the file before hashing. NAME is looked up first in the page's
own package, then here: `page_common.js` (DOM helpers, the message box, operator API
calls) serves the pages of both services; the match service's site pages share its
`site.js` and `site.css`. One include is made, not read: `settings.js` defines
`SETTINGS`, every table setting's allowed values and defaults (`domain.settings.CHOICES`),
so the pages' forms offer exactly what the API takes.

The policy allows exactly the served blocks (`'sha256-…'` of each) and no other script
or style: an injected `<script>` or `onclick=` would not run even if some text reached
the page unescaped. The dashboard holds the operator token in session storage, which is
why it gets the same policy as the public pages rather than `'unsafe-inline'`.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import re
from importlib import resources
from typing import Final

import msgspec

from domain.settings import CHOICES

__all__ = ["PAGE_HEADERS", "inline_html", "inline_page"]

# Headers every page response carries besides its CSP. (`Cache-Control: no-store` comes
# from the apps' `cache_control`, set for every response of both services.)
PAGE_HEADERS = {
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}

_BLOCK = re.compile(r"<(script|style)>(.*?)</\1>", re.DOTALL)
_INCLUDE = re.compile(r"/\*@include ([a-z_]+\.(?:js|css))\*/")
# Includes made from the domain's values rather than read from a file.
_MADE: Final = {"settings.js": f"const SETTINGS = {msgspec.json.encode(CHOICES).decode()};"}


def _expand(html: str, package: str) -> str:
    """`html` with each `/*@include NAME*/` replaced by the file NAME of `package`, or of
    this package when `package` has none."""
    places = [resources.files(package), resources.files(__package__ or "services.shared")]

    def read(match: re.Match[str]) -> str:
        if match.group(1) in _MADE:
            return _MADE[match.group(1)]
        for place in places:
            candidate = place.joinpath(match.group(1))
            if candidate.is_file():
                return candidate.read_text("utf-8").strip()
        raise FileNotFoundError(f"{match.group(0)}: no {match.group(1)} in {package} or here")

    return _INCLUDE.sub(read, html)


def _digest(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


@functools.cache
def inline_page(package: str, name: str) -> tuple[str, str]:
    """The page `name` of `package` and the CSP that allows exactly its inline script
    and style blocks (read and hashed once per process)."""
    return inline_html(resources.files(package).joinpath(name).read_text("utf-8"), package)


def inline_html(source: str, package: str = "services.shared") -> tuple[str, str]:
    """The page `source` with its includes expanded (from `package`, then this package),
    and the CSP that allows exactly its inline script and style blocks."""
    html = _expand(source, package)
    blocks = _BLOCK.findall(html)
    scripts = " ".join(_digest(body) for kind, body in blocks if kind == "script") or "'none'"
    styles = " ".join(_digest(body) for kind, body in blocks if kind == "style") or "'none'"
    csp = (
        f"default-src 'none'; script-src {scripts}; style-src {styles}; connect-src 'self'; "
        "img-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    )
    return html, csp
