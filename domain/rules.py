"""Rulesets: the options of docs/rules.md#options-local-rules-and-presets, the two presets, and
their validation.

A ruleset is data, not code: every variant of the game is one frozen `Ruleset` value, and the
engine reads it. `parse_ruleset` is the single entry point for untrusted input (the rules
oracle, party settings): it takes a preset name plus overrides and rejects anything unknown or
out of range with a `RulesetError` that names the field.

A ruleset also says which *revision* of the engine's reading of docs/rules.md it is played under
(`REVISIONS`). A match pins its revision in `MatchCreated`, so a reading corrected later never
changes how a match already recorded verifies or folds; new matches get `CURRENT_REVISION`.
The revision is not an option: party settings never carry it (`parse_settings` refuses it).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, Literal, get_args

import msgspec

__all__ = [
    "CURRENT_REVISION",
    "OPTION_KEYS",
    "PRESETS",
    "REVISIONS",
    "BlockRule",
    "BoardKind",
    "EmptyCourseRule",
    "Ruleset",
    "RulesetError",
    "SafeSquares",
    "entering_value_ends_tries",
    "option_values",
    "options_to_dict",
    "parse_ruleset",
    "parse_settings",
    "ruleset_to_dict",
]

BoardKind = Literal["cross", "by_players"]
EmptyCourseRule = Literal["normal", "auto_enter", "three_tries"]
SafeSquares = Literal["start_and_star", "start", "none"]
BlockRule = Literal["double", "none", "no_overtaking"]


class RulesetError(ValueError):
    """A ruleset (or a position/player count checked against one) is invalid.

    `field` names the offending key so callers can show it next to the input.
    """

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


# The engine's readings of docs/rules.md, oldest first: a match is played, folded and verified
# under the revision it pinned. Add one only to correct a reading; never change an old one.
REVISIONS: dict[int, str] = {
    1: "the first reading (every match recorded before revisions existed)",
    2: "three_tries: an entering value ends the tries, even when no move can play it",
}
CURRENT_REVISION: Final = 2


class Ruleset(msgspec.Struct, frozen=True, kw_only=True):
    """Every option of docs/rules.md#options-local-rules-and-presets, defaults the `standard` preset
    (our site's defaults), and the revision of the rules' reading (last, so the options keep their
    order)."""

    board: BoardKind = "cross"
    enter_on: frozenset[int] = frozenset({6})
    empty_course: EmptyCourseRule = "normal"
    three_sixes: bool = True
    capture_bonus: bool = True
    goal_bonus: bool = False
    safe_squares: SafeSquares = "start_and_star"
    blocks: BlockRule = "double"
    exact_finish: bool = True
    play_to_end: bool = False
    rotate_first: bool = True
    quick_start: bool = False
    revision: int = CURRENT_REVISION


OPTION_KEYS: tuple[str, ...] = tuple(f for f in Ruleset.__struct_fields__ if f != "revision")

PRESETS: dict[str, Ruleset] = {
    "standard": Ruleset(),
    "bga": Ruleset(
        board="by_players",
        enter_on=frozenset(range(1, 7)),
        three_sixes=False,
        goal_bonus=True,
        blocks="none",
        quick_start=True,
    ),
}

_CHOICES: dict[str, tuple[str, ...]] = {
    "board": get_args(BoardKind),
    "empty_course": get_args(EmptyCourseRule),
    "safe_squares": get_args(SafeSquares),
    "blocks": get_args(BlockRule),
}
_SWITCHES = frozenset(name for name in OPTION_KEYS if name not in _CHOICES and name != "enter_on")


def option_values() -> dict[str, list[Any]]:
    """Every value each option may take, in the order a settings form lists them:
    choices as declared, switches `[true, false]`, `enter_on` the die faces (any non-empty
    subset of them)."""
    values: dict[str, list[Any]] = {}
    for name in OPTION_KEYS:
        if name == "enter_on":
            values[name] = [1, 2, 3, 4, 5, 6]
        elif name in _CHOICES:
            values[name] = list(_CHOICES[name])
        else:
            values[name] = [True, False]
    return values


def _shown(value: object) -> str:
    """`repr(value)` for an error message, cut short: the message goes back to whoever
    sent the value, and a 16 KiB list need not come back whole."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _switch(field: str, value: object) -> bool:
    # The rule pages speak of options as あり/なし (on/off); accept both spellings.
    if isinstance(value, bool):
        return value
    if value in ("on", "off"):
        return value == "on"
    raise RulesetError(field, f'expected true/false (or "on"/"off"), got {_shown(value)}')


def _enter_on(value: object) -> frozenset[int]:
    if not isinstance(value, list | tuple | set | frozenset):
        raise RulesetError("enter_on", f"expected a list of die values 1-6, got {_shown(value)}")
    if not value:
        raise RulesetError("enter_on", "must name at least one die value (1-6)")
    faces: set[int] = set()
    for face in value:
        if isinstance(face, bool) or not isinstance(face, int) or not 1 <= face <= 6:
            raise RulesetError("enter_on", f"die values are 1-6, got {_shown(face)}")
        faces.add(face)
    return frozenset(faces)


def _revision(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value not in REVISIONS:
        raise RulesetError("revision", f"expected one of {list(REVISIONS)}, got {_shown(value)}")
    return value


def parse_ruleset(spec: Mapping[str, Any] | None) -> Ruleset:
    """Build a ruleset from `{"preset": name, **overrides}` (preset defaults to `standard`).

    Raises `RulesetError` naming the first bad field: an unknown key, a value of the wrong
    type, a choice outside its list, or an empty/out-of-range `enter_on`. `revision` (one of
    `REVISIONS`, default `CURRENT_REVISION`) is read too, so a pinned ruleset parses back.
    """
    if spec is None:
        return PRESETS["standard"]
    if not isinstance(spec, Mapping):
        raise RulesetError("rules", f"expected an object of options, got {type(spec).__name__}")
    preset_name = spec.get("preset", "standard")
    if not isinstance(preset_name, str) or preset_name not in PRESETS:
        raise RulesetError(
            "preset", f"unknown preset {_shown(preset_name)}; choose one of {sorted(PRESETS)}"
        )
    changes: dict[str, Any] = {}
    for key, value in spec.items():
        if key == "preset":
            continue
        if key == "revision":
            changes[key] = _revision(value)
        elif key not in OPTION_KEYS:
            raise RulesetError(key, f"unknown option; known options are {', '.join(OPTION_KEYS)}")
        elif key == "enter_on":
            changes[key] = _enter_on(value)
        elif key in _SWITCHES:
            changes[key] = _switch(key, value)
        elif value not in _CHOICES[key]:
            raise RulesetError(key, f"expected one of {list(_CHOICES[key])}, got {_shown(value)}")
        else:
            changes[key] = value
    return msgspec.structs.replace(PRESETS[preset_name], **changes)


def parse_settings(spec: Mapping[str, Any] | None) -> Ruleset:
    """The ruleset a party's host chooses: `parse_ruleset`, but a `revision` is refused, since
    every new match is played under the current one (`CURRENT_REVISION`)."""
    if isinstance(spec, Mapping) and "revision" in spec:
        raise RulesetError(
            "revision",
            f"not a setting: every new match is played under the current revision "
            f"({CURRENT_REVISION})",
        )
    return parse_ruleset(spec)


def ruleset_to_dict(ruleset: Ruleset) -> dict[str, Any]:
    """The canonical JSON form: every option spelled out, `enter_on` as a sorted list, and the
    `revision` last.

    This is what events pin, so a match keeps its rules even if a preset changes later.
    """
    out: dict[str, Any] = msgspec.structs.asdict(ruleset)
    out["enter_on"] = sorted(ruleset.enter_on)
    return out


def options_to_dict(ruleset: Ruleset) -> dict[str, Any]:
    """`ruleset_to_dict` without the revision: the options alone, as party settings and the
    presets of a settings form hold them."""
    out = ruleset_to_dict(ruleset)
    del out["revision"]
    return out


def entering_value_ends_tries(ruleset: Ruleset) -> bool:
    """docs/rules.md#no-piece-on-the-course-empty_course `three_tries`: "up to three rolls until an
    entering value comes; that roll is played normally". From revision 2 an entering value ends the
    tries even when no move can play it (it is passed, and a passed roll adds nothing). Revision 1
    granted another try for it, as for any other passed roll."""
    return ruleset.revision >= 2
