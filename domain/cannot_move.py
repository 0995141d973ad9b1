"""Why a piece cannot move, as facts: `CannotMove`, which `domain.moves.why_not` gives and
a rejection carries (`Rejection.why`, then the services' error bodies), for a client to
word in its own language.

A module of its own, never compiled (it is not in pyproject.toml's `compiled-modules`),
though `domain.moves` builds it: in a module mypyc compiles, a msgspec Struct loses its
class options (`frozen`, `kw_only`, `omit_defaults`: its JSON would carry every field,
null or empty) and its annotations become bare runtime types (`rule` a `type`), so it
could no longer be decoded either. tests/test_compiled.py runs tests/domain/test_moves.py
against the compiled engine to keep it so.
"""

from __future__ import annotations

from typing import Literal

import msgspec

__all__ = ["CannotMove", "Rule"]

Rule = Literal["enter_on", "in_goal", "exact_finish", "block", "no_overtaking"]


class CannotMove(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """Why a piece cannot move a die, as facts (docs/rules.md#why-a-piece-cannot-move), for a client
    to word in its own language; `str()` words it in English (the rejection's text). One of:

    - `enter_on`: a nest piece and a die that does not enter; `values`, the entering values;
    - `in_goal`: the piece is already in the goal;
    - `exact_finish`: the die overshoots the goal; `needs`, the value that reaches it;
    - `block` (blocks=double): a pair of another colour on the path or the landing square:
      `square`, the track square, and `seat`, whose pair it is;
    - `no_overtaking`: a piece stands between: `seat`, whose piece it is (the mover's own
      too), and `square`, its track square, None when it stands in the mover's home
      column (a square of no other colour's path).

    Fields a rule does not use keep their defaults, and are left out of its JSON.
    """

    rule: Rule
    values: tuple[int, ...] = ()
    needs: int | None = None
    square: int | None = None
    seat: int | None = None

    def __str__(self) -> str:
        return self.sentence

    @property
    def sentence(self) -> str:
        """The facts in English, as the rejection's text (`Rejection.reason`) gives them."""
        rule = self.rule
        if rule == "enter_on":
            return f"a piece leaves the nest only on {list(self.values)}"
        if rule == "in_goal":
            return "the piece is already in the goal"
        if rule == "exact_finish":
            return f"the goal needs exactly {self.needs}"
        if rule == "block":
            return f"a block stands on square {self.square}"
        if self.square is None:
            return "no overtaking: an own piece stands in the home column"
        return f"no overtaking: a piece stands on square {self.square}"
