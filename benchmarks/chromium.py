"""Debian's Chromium as the benchmarks and the page tests drive it (Playwright, no
browser download): where it is and the flags it runs with here. Without the
background-networking flags Chromium keeps trying hosts this machine cannot reach."""

from __future__ import annotations

__all__ = ["CHROMIUM", "CHROMIUM_ARGS"]

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
]
