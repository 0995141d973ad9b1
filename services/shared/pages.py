"""The pages of both services and the front-end files they load, from the `web` folder
(web/__init__.py).

A page is a shell, `web/pages/<page>.html`: markup, its stylesheets and one
`<script type="module">`, its entry module, which imports the modules it needs
(`web/js/lib/`). `page_response(name)` serves a shell under a Content-Security-Policy
whose `script-src` is a nonce made for that response, with `'strict-dynamic'` so that
the entry's imports load; styles come only from this origin (`'self'`). No inline script
runs: an injected `<script>` or `onclick=` carries no nonce, so it would not run even if
some text reached the page unescaped. The dashboard holds the operator token in session
storage, which is why it gets the same policy as the public pages.

Data reaches a page as JSON data blocks, which the browser does not execute: a shell's
empty `<script type="application/json" id="settings">` is filled with
`domain.settings.CHOICES` (every table setting's allowed values and defaults, defined once
there), so the pages' forms offer exactly what the API takes; its
`<script type="application/json" id="words" data-sections="…">` with the page's words in
the reader's language (services/shared/words.py), which also becomes the shell's
`<html lang>` and, where the catalogue names one, its `<title>`. An empty element whose
words are markup (`data-t="key" data-t-html`: the rules page's article) gets them in the
HTML already, so that its text is there without the modules (a crawler sees the rules).

`static_file` answers `GET /static/{path}` of both services: only the files of web/js,
web/css and web/i18n (an index made once, so no other path can be named), with their
content type, `X-Content-Type-Options: nosniff`, an ETag of their content and
`Cache-Control: no-cache` (a browser may keep a file but asks each time whether it
changed: code is never stale after a deploy), and each section of each catalogue as
`i18n/<lang>/<section>.json` (a language switch fetches them). Anything else is the JSON 404.
"""

from __future__ import annotations

import functools
import hashlib
import re
import secrets
from html import escape
from typing import Any, Final

import msgspec
from litestar import MediaType, Request, Response, get
from litestar.datastructures import CacheControlHeader
from litestar.params import FromPath

import web
from domain.errors import NotFound
from domain.settings import CHOICES
from services.shared.words import (
    DEFAULT_LANGUAGE,
    LANGUAGE_COOKIE,
    catalogue,
    choose_language,
    page_words,
    section_files,
)

__all__ = [
    "PAGE_HEADERS",
    "page_csp",
    "page_response",
    "reader_language",
    "shell_html",
    "static_file",
    "static_route",
]

# Headers every page and static response carries besides its CSP. (`Cache-Control:
# no-store` comes from the apps' `cache_control`, set for every response of both services;
# the static files say `no-cache` instead.)
PAGE_HEADERS = {
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}

# The folders of web/ that are served, and the content type of each kind of file.
_SERVED: Final = ("js", "css", "i18n")
_TYPES: Final = {
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".json": "application/json",
}
_SETTINGS_BLOCK: Final = '<script type="application/json" id="settings"></script>'
_WORDS_BLOCK: Final = re.compile(
    r'<script type="application/json" id="words" data-sections="([a-z_ ]+)"></script>'
)
_HTML_LANG: Final = re.compile(r'<html lang="[a-z]+">')
# An element whose markup is a word of the catalogue (`data-t-html`: the rules' article),
# empty in the shell.
_HTML_WORD: Final = re.compile(r'(<([a-z0-9]+)[^<>]* data-t="([\w.]+)" data-t-html>)(</\2>)')
_TITLE: Final = re.compile(r"<title>[^<]*</title>")


def page_csp(nonce: str) -> str:
    """The policy of a page whose entry module carries `nonce`."""
    return (
        f"default-src 'none'; script-src 'nonce-{nonce}' 'strict-dynamic'; "
        "style-src 'self'; connect-src 'self'; img-src data:; base-uri 'none'; "
        "form-action 'none'; frame-ancestors 'none'"
    )


def _data(value: object) -> str:
    """`value` as JSON that cannot end the data block it is put in."""
    return msgspec.json.encode(value).decode().replace("</", "<\\/")


def _filled(source: str, lang: str, page: str | None = None) -> str:
    """The shell `source` with its data blocks filled, in `lang` (the title of `page`,
    web/pages/<page>.html, from the catalogue's `meta.titles` when it has one)."""

    def words(found: re.Match[str]) -> str:
        sections = tuple(found.group(1).split())
        return (
            f'<script type="application/json" id="words" data-sections="{found.group(1)}">'
            f"{_data(page_words(lang, sections))}</script>"
        )

    html = source.replace(
        _SETTINGS_BLOCK,
        f'<script type="application/json" id="settings">{_data(CHOICES)}</script>',
    )
    # The words a `data-t-html` element says are put in here too, so that the page's text
    # is in the HTML itself (a crawler, a reader before the modules run), as the module
    # would put it; they are the catalogue's own markup (web/i18n/, ours), never a reader's.
    block = _WORDS_BLOCK.search(html)
    if block is not None:
        table = page_words(lang, tuple(block.group(1).split()))["words"]

        def markup(found: re.Match[str]) -> str:
            word: Any = table
            for part in found.group(3).split("."):
                word = word.get(part) if isinstance(word, dict) else None
            return found.group(1) + word + found.group(4) if isinstance(word, str) else found[0]

        html = _HTML_WORD.sub(markup, html)
    html = _WORDS_BLOCK.sub(words, html)
    html = _HTML_LANG.sub(f'<html lang="{lang}">', html, count=1)
    title = catalogue(lang)["meta"]["titles"].get(page) if page else None
    if title:
        html = _TITLE.sub(f"<title>{escape(title)}</title>", html, count=1)
    return html


@functools.cache
def _shell(name: str, lang: str) -> str:
    source = web.FILES.joinpath("pages", name).read_text("utf-8")
    return _filled(source, lang, name.removesuffix(".html"))


def shell_html(source: str, lang: str = DEFAULT_LANGUAGE) -> tuple[str, str]:
    """The shell `source` with its data blocks filled in `lang` and a fresh nonce on each
    of its `<script` tags, and the CSP that allows exactly those scripts (and what they
    import)."""
    nonce = secrets.token_urlsafe(18)
    html = _filled(source, lang).replace("<script ", f'<script nonce="{nonce}" ')
    return html, page_csp(nonce)


def reader_language(request: Request[Any, Any, Any]) -> str:
    """The language a page is served in to the reader of `request` (words.py)."""
    return choose_language(
        request.cookies.get(LANGUAGE_COOKIE), request.headers.get("accept-language")
    )


def page_response(name: str, lang: str = DEFAULT_LANGUAGE, status: int = 200) -> Response[str]:
    """The page `name` (`web/pages/<name>`) in `lang` under its CSP, with a nonce of its
    own."""
    nonce = secrets.token_urlsafe(18)
    html = _shell(name, lang).replace("<script ", f'<script nonce="{nonce}" ')
    return Response(
        html,
        status_code=status,
        media_type=MediaType.HTML,
        headers={
            "Content-Security-Policy": page_csp(nonce),
            # The page's words depend on these two (`reader_language`).
            "Vary": "Cookie, Accept-Language",
            **PAGE_HEADERS,
        },
    )


@functools.cache
def _index() -> dict[str, tuple[bytes, str, str]]:
    """Every served file: its path under /static -> its bytes, content type and ETag."""
    found: dict[str, tuple[bytes, str, str]] = {}

    def walk(folder: object, prefix: str) -> None:
        for entry in folder.iterdir():  # type: ignore[attr-defined]
            path = f"{prefix}/{entry.name}"
            if entry.is_dir():
                walk(entry, path)
                continue
            kind = _TYPES.get("." + entry.name.rsplit(".", 1)[-1])
            if kind is not None:
                body = entry.read_bytes()
                etag = '"' + hashlib.sha256(body).hexdigest()[:32] + '"'
                found[path] = (body, kind, etag)

    for top in _SERVED:
        folder = web.FILES.joinpath(top)
        if folder.is_dir():  # a folder with nothing to serve yet is not in a checkout
            walk(folder, top)
    for path, body in section_files().items():
        found[path] = (body, _TYPES[".json"], '"' + hashlib.sha256(body).hexdigest()[:32] + '"')
    return found


def static_file(path: str) -> tuple[bytes, str, str] | None:
    """The served file at `path` (e.g. `js/lobby.js`): bytes, content type, ETag; None
    for any path that is not one of them."""
    return _index().get(path.lstrip("/"))


@get(
    "/static/{path:path}",
    include_in_schema=False,
    cache_control=CacheControlHeader(no_cache=True),
    sync_to_thread=False,
)
def static_route(path: FromPath[str], request: Request[Any, Any, Any]) -> Response[bytes]:
    """A front-end file (web/js, web/css, web/i18n); 304 when the browser's copy is current."""
    found = static_file(path)
    if found is None:
        raise NotFound("no such file")
    body, kind, etag = found
    headers = {"ETag": etag, **PAGE_HEADERS}
    if request.headers.get("if-none-match") == etag:
        return Response(b"", status_code=304, headers=headers, media_type=kind)
    return Response(body, media_type=kind, headers=headers)
