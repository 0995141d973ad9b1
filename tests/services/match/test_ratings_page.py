"""A player's public page `/players/{id}` (services/match/ratings.html) in a real browser:
the rating chart runs oldest to newest with labels a phone can read, and the history says
each match's place as one of that match's places, a leaver's too; in Japanese and English,
on a 375×812 phone and a 1280×800 desktop.

The matches are real: a ranked duel played over HTTP against the match service (its
deadline worker plays the stand-in of the guest who left), rated by the ranking service
running beside it (this folder's conftest.py). The waiting is on the page's own state
(`body[data-ready]`) and on the services' answers, never on a clock.
"""

from __future__ import annotations

import re
from typing import Any

import httpx
import pytest
from playwright.async_api import Browser, Page, expect

from tests.browser import axe_violations, person, requires_chromium, shot
from tests.services.match.site_pages import Site
from tests.waiting import wait_until

pytestmark = [pytest.mark.anyio, pytest.mark.slow, requires_chromium]

expect.set_options(timeout=15_000)

PHONE = (375, 812)
DESKTOP = (1280, 800)
LOCALES = {"ja": "ja-JP", "en": "en-GB"}


def guest(site: Site, name: str) -> dict[str, str]:
    """A new guest over HTTP: its id and bearer header."""
    made = site.http.post("/api/players", json={"name": name}).json()
    return {"id": made["id"], "Authorization": f"Bearer {made['token']}"}


async def ranked_duel(site: Site, host: dict[str, str], other: dict[str, str], leaver: int) -> str:
    """A ranked duel of `host` (seat 0) and `other` (seat 1) played to its end over HTTP:
    the seat `leaver` leaves at once and its CPU stand-in plays it out (the deadline
    worker), the other seat plays its first legal move each turn. Returns the match id
    once the ranking service has rated it (the leaver placed last whoever won)."""
    auth = [{"Authorization": p["Authorization"]} for p in (host, other)]
    async with httpx.AsyncClient(base_url=site.url, timeout=30) as http:
        r = await http.post(
            "/api/parties",
            json={"seats": 2, "rules": {"preset": "bga"}, "client_seed": "a", "ranked": True},
            headers=auth[0],
        )
        party = r.json()["id"]
        r = await http.post(
            f"/api/parties/{party}/join", json={"client_seed": "b"}, headers=auth[1]
        )
        assert r.status_code == 200, r.text
        r = await http.post(f"/api/parties/{party}/start", headers=auth[0])
        assert r.status_code == 201, r.text
        match_id: str = r.json()["match_id"]
        r = await http.post(f"/api/matches/{match_id}/leave", headers=auth[leaver])
        assert r.status_code == 200, r.text
        stayer = auth[1 - leaver]
        while True:
            state = (await http.get(f"/api/matches/{match_id}")).json()
            if state["status"] == "finished":
                break
            if state["turn"] == leaver:  # the stand-in's turn: the deadline worker plays it

                async def moved(version: int = state["version"]) -> bool:
                    now = (await http.get(f"/api/matches/{match_id}")).json()
                    return bool(now["version"] > version)

                await wait_until(moved, what="the stand-in plays its turn")
            elif state["phase"] == "roll":
                r = await http.post(f"/api/matches/{match_id}/roll", headers=stayer)
                assert r.status_code == 200, r.text
            else:
                moves = (await http.get(f"/api/matches/{match_id}/moves")).json()["moves"]
                r = await http.post(
                    f"/api/matches/{match_id}/move",
                    headers=stayer,
                    json={"piece": moves[0]["piece"]},
                )
                assert r.status_code == 200, r.text

    async def rated() -> bool:
        return bool(site.http.get(f"/api/ratings/matches/{match_id}").json()["rated"])

    await wait_until(rated, what="the ranking service rates the duel")
    return match_id


async def visit(page: Page, url: str) -> None:
    await page.goto(url)
    await expect(page.locator("body[data-ready=true]")).to_be_attached()


async def test_a_duel_left_by_one_player_is_placed_first_and_second_of_two(
    site: Site, browser: Browser
) -> None:
    """bob leaves a ranked duel at once and his CPU stand-in plays it out: whoever the
    stand-in beat, the ranking places bob 2nd of 2 (left) and alice 1st of 2, never a 3rd
    place in a duel; his page says so in each language."""
    alice, bob = guest(site, "alice"), guest(site, "bob")
    match_id = await ranked_duel(site, alice, bob, leaver=1)
    assert sorted(site.state(match_id)["placements"]) == [1, 2]
    rated = site.http.get(f"/api/ratings/matches/{match_id}").json()["changes"]
    assert {c["player_id"]: c["place"] for c in rated} == {alice["id"]: 1, bob["id"]: 2}
    (mine,) = site.http.get(f"/api/ratings/players/{bob['id']}").json()["history"]
    assert (mine["place"], mine["players"], mine["left_match"]) == (2, 2, True)
    said = {"ja": "2位（2人中）・途中で抜けた", "en": "Place 2 of 2 (left)"}
    for lang, locale in LOCALES.items():
        async with person(browser, locale=locale, width=PHONE[0], height=PHONE[1]) as (
            page,
            errors,
        ):
            await visit(page, f"{site.url}/players/{bob['id']}")
            await expect(page.locator("#history tbody tr .place")).to_have_text(said[lang])
            await shot(page, f"player-left-375-{lang}.png")
            assert errors == []


# Each dot of the chart, left to right: its rating and where it is drawn.
_DOTS = """() => [...document.querySelectorAll("#chart circle.dot")]
  .map((c) => ({ x: Number(c.getAttribute("cx")), y: Number(c.getAttribute("cy")),
                 rating: Number(c.dataset.rating) }))
  .sort((a, b) => a.x - b.x)"""

# The on-screen height of each chart label's glyphs beside that of the page's small text
# (a tag, 12-13 px): a label drawn at 11 px in a wide drawing scaled down to a phone is
# as small on the screen as it looks. And how wide the page is.
_SIZES = """() => {
  const box = (node) => { const r = document.createRange(); r.selectNodeContents(node);
                          return r.getBoundingClientRect().height; };
  const small = document.querySelector("#player-tags .tag");
  return { small: box(small),
           labels: [...document.querySelectorAll("#chart text")]
             .map((t) => ({ text: t.textContent, height: t.getBoundingClientRect().height })),
           wide: document.documentElement.scrollWidth };
}"""


async def test_the_rating_chart_runs_oldest_to_newest_with_labels_a_phone_reads(
    site: Site, browser: Browser
) -> None:
    """The rating chart runs oldest to newest from the rating before the first match, with
    labels at least the page's small text on a 375 px phone and a desktop.

    alice wins a ranked duel (bob leaves it), then loses one (she leaves): 1500, up, down,
    left to right, as its words say, in both languages; axe finds nothing serious."""
    alice, bob, carol = guest(site, "alice"), guest(site, "bob"), guest(site, "carol")
    await ranked_duel(site, alice, bob, leaver=1)
    await ranked_duel(site, carol, alice, leaver=1)
    history = site.http.get(f"/api/ratings/players/{alice['id']}").json()["history"]
    newest, oldest = history
    assert oldest["rating_before"] == 1500
    assert oldest["rating_after"] > 1500 and newest["rating_after"] < newest["rating_before"]
    expected = [oldest["rating_before"], oldest["rating_after"], newest["rating_after"]]
    for lang, locale in LOCALES.items():
        async with person(browser, locale=locale, width=PHONE[0], height=PHONE[1]) as (
            page,
            errors,
        ):
            await visit(page, f"{site.url}/players/{alice['id']}")
            for size in (PHONE, DESKTOP):
                await page.set_viewport_size({"width": size[0], "height": size[1]})
                # Two frames: the chart's ResizeObserver has drawn it at its new size.
                await page.evaluate(
                    "() => new Promise((done) => requestAnimationFrame("
                    "() => requestAnimationFrame(done)))"
                )
                dots: list[dict[str, float]] = await page.evaluate(_DOTS)
                assert [d["rating"] for d in dots] == expected, (lang, size)
                ys = [d["y"] for d in dots]
                assert ys[1] < ys[0] and ys[2] > ys[1]  # up after the win, down after the loss
                await expect(page.locator("#chart")).to_have_attribute(
                    "aria-label", re.compile(" → ".join(str(r) for r in expected) + "$")
                )
                sizes: dict[str, Any] = await page.evaluate(_SIZES)
                assert sizes["wide"] <= size[0]
                assert len(sizes["labels"]) >= 3, sizes  # top and bottom ratings, a date
                for label in sizes["labels"]:
                    assert label["height"] >= sizes["small"] - 0.5, (lang, size, label, sizes)
                await shot(page, f"player-chart-{size[0]}-{lang}.png", full_page=False)
                assert await axe_violations(page) == []
            # The history lists the newest match first.
            rows = page.locator("#history tbody tr")
            await expect(rows).to_have_count(2)
            await expect(rows.first).to_have_attribute("data-match", newest["match_id"])
            assert errors == []
