"""Where the tests find the repository and the golden files, from whichever folder a test
is in (a test that moves keeps its paths)."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = ROOT / "tests" / "golden"
