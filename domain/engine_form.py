"""Which form of the rules engine runs: the modules compiled by mypyc (a build with
LUDO_COMPILE=1, setup.py) or their Python source. The benches print it beside their figures,
since the two differ by 1.5-2.5x, and the tests check it is the form they expect."""

from __future__ import annotations

import domain.decider

__all__ = ["engine_form"]


def engine_form() -> str:
    """ "compiled" when the rules engine runs as mypyc-compiled modules, else "interpreted"."""
    compiled = domain.decider.__file__.endswith((".so", ".pyd"))
    return "compiled" if compiled else "interpreted"
