"""Self-contained HTML pages of both services, each served under a CSP that names its
inline blocks by hash.

The pages (the replay viewer and dispute report of the match service, the operator
dashboard of the ranking service) carry their script and style inline and load nothing
else. What they share (DOM helpers, the message box, operator API calls) lives once, in
`page_common.js` beside this module: a page's script names it in a comment
`/*@include page_common.js*/`, which is replaced by the file before hashing.

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

__all__ = ["PAGE_HEADERS", "inline_html", "inline_page"]

# Headers every page response carries besides its CSP. (`Cache-Control: no-store` comes
# from the apps' `cache_control`, set for every response of both services.)
PAGE_HEADERS = {
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}

_BLOCK = re.compile(r"<(script|style)>(.*?)</\1>", re.DOTALL)
_INCLUDE = re.compile(r"/\*@include ([a-z_]+\.(?:js|css))\*/")


def _expand(html: str) -> str:
    """`html` with each `/*@include NAME*/` replaced by this package's file NAME."""
    shared = resources.files(__package__ or "services.shared")
    return _INCLUDE.sub(lambda m: shared.joinpath(m.group(1)).read_text("utf-8").strip(), html)


def _digest(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


@functools.cache
def inline_page(package: str, name: str) -> tuple[str, str]:
    """The page `name` of `package` and the CSP that allows exactly its inline script
    and style blocks (read and hashed once per process)."""
    return inline_html(resources.files(package).joinpath(name).read_text("utf-8"))


def inline_html(source: str) -> tuple[str, str]:
    """The page `source` with its includes expanded, and the CSP that allows exactly its
    inline script and style blocks."""
    html = _expand(source)
    blocks = _BLOCK.findall(html)
    scripts = " ".join(_digest(body) for kind, body in blocks if kind == "script") or "'none'"
    styles = " ".join(_digest(body) for kind, body in blocks if kind == "style") or "'none'"
    csp = (
        f"default-src 'none'; script-src {scripts}; style-src {styles}; connect-src 'self'; "
        "img-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    )
    return html, csp
