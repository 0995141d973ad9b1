"""Debian's Chromium as the benchmarks and the page tests drive it (Playwright, no
browser download): where it is and the flags it runs with here. Without the
background-networking flags Chromium keeps trying hosts this machine cannot reach.

The headless shell (Debian's `chromium-headless-shell`, built from the same source and
version as `chromium`): the same Blink and V8 without the desktop browser's layers, and
the build Playwright itself runs for headless Chromium. On the page tests it used a fifth
less CPU than `chromium --headless`, and as much less time (docs/testing.md); people try
the site in the full browser."""

from __future__ import annotations

__all__ = ["CHROMIUM", "CHROMIUM_ARGS"]

CHROMIUM = "/usr/bin/chromium-headless-shell"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
]
