"""The services' pages are shells of web/pages/ whose only scripts are ES modules allowed by
a per-response nonce, and `/static/{path}` serves exactly the front-end files of web/."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

import pytest
from litestar import Litestar
from litestar.testing import TestClient

import web
from services.shared.errors import exception_handlers
from services.shared.pages import page_response, shell_html, static_file, static_route
from services.shared.words import catalogue
from tests.browser import page_served, requires_chromium
from tests.paths import ROOT

LANGS = ["en", "hi", "ja"]
PAGES = sorted(p.name for p in (ROOT / "web" / "pages").glob("*.html"))
SCRIPT = re.compile(r"<script\b([^>]*)>(.*?)</script>", re.DOTALL)
IMPORT = re.compile(r"""^import\s[^;]*?from\s+"([^"]+)";""", re.MULTILINE | re.DOTALL)


def test_every_page_is_here() -> None:
    """The nine pages of both services are shells in web/pages/."""
    match = ["lobby", "table", "rules", "arenas", "ratings", "replay_viewer", "dispute_report"]
    assert sorted(f"{p}.html" for p in [*match, "not_found", "dashboard"]) == PAGES


@pytest.mark.parametrize("name", PAGES)
def test_a_page_runs_one_module_and_no_inline_script(name: str) -> None:
    """A shell's only script is its entry module (a served file, carrying the response's
    nonce); any other <script> is a JSON data block; no <style> block."""
    response = page_response(name)
    html = str(response.content)
    nonce = re.search(r"'nonce-([^']+)'", response.headers["Content-Security-Policy"])
    assert nonce is not None
    modules = []
    for attrs, body in SCRIPT.findall(html):
        assert f'nonce="{nonce.group(1)}"' in attrs
        if 'type="module"' in attrs:
            src = re.search(r'src="/static/([^"]+)"', attrs)
            assert src is not None and body == "" and static_file(src.group(1)) is not None
            modules.append(src.group(1))
        else:
            assert 'type="application/json"' in attrs
    assert modules == [f"js/{name.removesuffix('.html')}.js"]
    assert "<style" not in html and " style=" not in html and " on" + "click=" not in html
    for href in re.findall(r'<link rel="stylesheet" href="/static/([^"]+)">', html):
        assert static_file(href) is not None, href


@pytest.mark.parametrize("name", PAGES)
def test_the_csp_is_strict_and_its_nonce_new_each_time(name: str) -> None:
    """No 'unsafe-*', scripts only by this response's nonce (and what they import), styles
    only from this origin; two responses never share a nonce."""
    first, second = page_response(name), page_response(name)
    policies = [r.headers["Content-Security-Policy"] for r in (first, second)]
    for csp in policies:
        policy = dict(part.strip().split(" ", 1) for part in csp.split(";"))
        assert policy["default-src"] == "'none'" and "unsafe" not in csp
        assert re.fullmatch(r"'nonce-[\w-]{20,}' 'strict-dynamic'", policy["script-src"])
        assert policy["style-src"] == "'self'"
    assert policies[0] != policies[1]


def _module_files() -> Iterator[str]:
    for path in sorted((ROOT / "web" / "js").rglob("*.js")):
        yield path.relative_to(ROOT / "web").as_posix()


@pytest.mark.parametrize("name", list(_module_files()))
def test_every_import_is_a_served_module(name: str) -> None:
    """Each `import … from "…"` of a module names a file that /static serves."""
    text = (ROOT / "web" / name).read_text("utf-8")
    folder = name.rsplit("/", 1)[0]
    for target in IMPORT.findall(text):
        assert target.startswith(("./", "../")), target
        parts = folder.split("/") + target.split("/")
        resolved: list[str] = []
        for part in parts:
            if part == "..":
                resolved.pop()
            elif part != ".":
                resolved.append(part)
        assert static_file("/".join(resolved)) is not None, (name, target)


@pytest.fixture(scope="module")
def client() -> Iterator[TestClient[Litestar]]:
    """The static route with the services' error answers."""
    app = Litestar(route_handlers=[static_route], exception_handlers=exception_handlers)
    with TestClient(app) as c:
        yield c


@pytest.mark.parametrize(
    ("path", "kind"),
    [
        ("js/lobby.js", "text/javascript"),
        ("js/lib/board.js", "text/javascript"),
        ("css/site.css", "text/css"),
    ],
)
def test_a_front_end_file_is_served_typed_and_revalidated(
    client: TestClient[Litestar], path: str, kind: str
) -> None:
    """The file's bytes, its content type, nosniff, an ETag of its content and `no-cache`
    (kept, but checked on every use: never stale after a deploy); 304 when unchanged."""
    r = client.get(f"/static/{path}")
    assert r.status_code == 200 and r.content == web.FILES.joinpath(path).read_bytes()
    assert r.headers["content-type"].startswith(kind)
    assert r.headers["x-content-type-options"] == "nosniff"
    assert r.headers["cache-control"] == "no-cache"
    again = client.get(f"/static/{path}", headers={"If-None-Match": r.headers["etag"]})
    assert again.status_code == 304 and again.content == b""


def test_a_catalogues_section_is_served_as_a_file(client: TestClient[Litestar]) -> None:
    """`/static/i18n/<lang>/<section>.json`: one section of a catalogue (what a language
    switch fetches); an unknown language or section is the JSON 404."""
    r = client.get("/static/i18n/hi/lobby.json")
    assert r.status_code == 200 and r.headers["content-type"].startswith("application/json")
    assert r.json() == catalogue("hi")["lobby"]
    assert client.get("/static/i18n/xx/lobby.json").status_code == 404
    assert client.get("/static/i18n/hi/nope.json").status_code == 404


def test_a_page_comes_in_the_readers_language() -> None:
    """The shell's `<html lang>`, its title and its words block are the language's, and the
    response says it varies with the cookie and Accept-Language."""
    response = page_response("lobby.html", "hi")
    html = str(response.content)
    assert '<html lang="hi">' in html
    assert f"<title>{catalogue('hi')['meta']['titles']['lobby']}</title>" in html
    block = re.search(r'<script [^>]*id="words" data-sections="([a-z ]+)">(.*?)</script>', html)
    assert block is not None
    served = json.loads(block.group(2))
    assert served["lang"] == "hi" and [lang["code"] for lang in served["languages"]] == LANGS
    assert served["words"] == catalogue("hi")["common"] | catalogue("hi")["lobby"]
    assert response.headers["Vary"] == "Cookie, Accept-Language"


@pytest.mark.parametrize(
    "path",
    [
        "/static/js/nope.js",
        "/static/pages/lobby.html",
        "/static/__init__.py",
        "/static/js/../__init__.py",
        "/static/js/%2e%2e/%2e%2e/pyproject.toml",
        "/static/..%2f..%2fpyproject.toml",
        "/static//etc/passwd",
        "/static/js/lib",
        "/static/package.json",
        "/static/eslint.config.js",
    ],
)
def test_nothing_else_is_served(client: TestClient[Litestar], path: str) -> None:
    """Any other path, a folder or one that climbs out of web/, is the JSON 404."""
    r = client.get(path)
    assert r.status_code == 404
    assert r.json()["error"] == "not_found"


INJECTED = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>injected</title></head>
<body><p id="p" onclick="window.clicked = true">text</p>
<script>window.injected = true;</script>
<script type="application/json" id="words" data-sections="common"></script>
<script type="module">
import { el } from "/static/js/lib/page_common.js";
document.body.append(el("span", { id: "made" }, "made"));
document.body.dataset.ready = "true";
</script></body></html>
"""


@requires_chromium
@pytest.mark.anyio
@pytest.mark.slow
async def test_an_injected_inline_script_does_not_run() -> None:
    """Under a page's CSP the nonced module and its imports run, while a <script> or an
    onclick= that reached the page without the nonce is refused."""
    async with page_served("http://inject.test/", *shell_html(INJECTED)) as (page, errors):
        assert await page.locator("#made").count() == 1
        await page.click("#p")
        assert await page.evaluate("[window.injected, window.clicked]") == [None, None]
        refused = [e for e in errors if "Content Security Policy" in e]
        assert len(refused) >= 2, errors


@requires_chromium
@pytest.mark.anyio
@pytest.mark.parametrize("name", ["rules.html", "not_found.html"])
async def test_the_first_paint_comes_after_the_words(name: str) -> None:
    """The shell's Japanese is never painted for an English reader: the first contentful
    paint comes after the modules' first pass (the `ludo-shown` mark), and the page then
    speaks English."""
    source = (ROOT / "web" / "pages" / name).read_text("utf-8")
    async with page_served("http://first-paint.test/", *shell_html(source)) as (page, errors):
        # The paint's entry is recorded once the frame is presented, which may be after the
        # load event (the headless shell presents later than the full browser).
        await page.wait_for_function(
            "() => performance.getEntriesByName('first-contentful-paint').length > 0"
        )
        times = await page.evaluate(
            """() => [performance.getEntriesByName("ludo-shown")[0]?.startTime ?? null,
                      performance.getEntriesByName("first-contentful-paint")[0]?.startTime
                        ?? null]"""
        )
        shown, painted = times
        assert shown is not None and painted is not None, times
        assert painted >= shown, times
        assert await page.evaluate("document.documentElement.lang") == "en"
        assert "Ludo" in await page.locator("header.site").inner_text()
        assert errors == []
