"""docs/rules.md against the engine: every option of `domain.rules` with its allowed values,
its value in every preset and the site's names for it; the board sizes; the safe squares;
the revisions; the turn limits; why a piece cannot move; and every link within the page."""

from __future__ import annotations

import json
import re
from typing import Any, get_args

from domain.board import ARM, board_for
from domain.cannot_move import Rule
from domain.decider import STAND_IN_AFTER_TIMEOUTS
from domain.party import TURN_LIMITS
from domain.rules import (
    CURRENT_REVISION,
    OPTION_KEYS,
    PRESETS,
    REVISIONS,
    option_values,
    options_to_dict,
    parse_ruleset,
)
from services.shared.words import catalogue
from tests import paths

DOC = paths.ROOT / "docs" / "rules.md"
_CODE = re.compile(r"`([^`]*)`")


def _text() -> str:
    return DOC.read_text()


def _section(title: str) -> str:
    """The text under the heading `title` (any level), up to the next heading of its level
    or above."""
    text = _text()
    match = re.search(rf"^(#+) {re.escape(title)}\n", text, re.MULTILINE)
    assert match is not None, f"no heading {title!r} in docs/rules.md"
    level = len(match.group(1))
    end = re.compile(rf"^#{{1,{level}}} ", re.MULTILINE).search(text, match.end())
    return text[match.end() : end.start() if end else len(text)]


def _rows(section: str) -> list[list[str]]:
    """The body rows of the first table of `section`, as lists of cells (header and rule
    lines left out)."""
    lines = [line for line in section.splitlines() if line.startswith("|")]
    return [[cell.strip() for cell in line.strip("|").split("|")] for line in lines[2:]]


def _header(section: str) -> list[str]:
    line = next(line for line in section.splitlines() if line.startswith("|"))
    return [cell.strip() for cell in line.strip("|").split("|")]


def _value(token: str) -> Any:
    """A value as the page writes it in backticks: JSON where it is JSON (`true`, `6`,
    `[6]`, `null`), else a bare name (`cross`)."""
    try:
        return json.loads(token)
    except ValueError:
        return token


def _option_rows() -> dict[str, list[str]]:
    rows = _rows(_section("Every option"))
    return {_CODE.findall(row[0])[0]: row for row in rows}


def _site_words() -> dict[str, dict[str, tuple[str, dict[str, str]]]]:
    """Per language, per option: the site's name for it and its values' labels, from the
    catalogues' `common.opt` (web/i18n/<lang>.json)."""
    words: dict[str, dict[str, tuple[str, dict[str, str]]]] = {}
    for language in ("ja", "en"):
        options = catalogue(language)["common"]["opt"]
        words[language] = {
            name: (option["name"], dict(option.get("values", {})))
            for name, option in options.items()
            if isinstance(option, dict) and "name" in option
        }
    return words


def github_anchor(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped (letters of any
    script, digits, `_` and `-` kept), spaces as `-`."""
    text = heading.strip().lower()
    text = "".join(ch for ch in text if ch.isalnum() or ch in "_- ")
    return text.replace(" ", "-")


def _anchors() -> set[str]:
    headings = re.findall(r"^#+ (.+)$", _text(), re.MULTILINE)
    anchors = [github_anchor(h) for h in headings]
    assert len(anchors) == len(set(anchors)), "two headings share an anchor"
    return set(anchors)


def test_every_option_has_a_row_in_the_engines_order() -> None:
    """The options table has one row per option of `domain.rules`, in `OPTION_KEYS` order."""
    assert list(_option_rows()) == list(OPTION_KEYS)


def test_each_option_row_lists_exactly_its_allowed_values() -> None:
    """Each option's row names every value `option_values()` allows, in its order."""
    rows = _option_rows()
    listed = {name: [_value(t) for t in _CODE.findall(rows[name][2])] for name in rows}
    assert listed == option_values()


def test_each_option_row_gives_its_value_in_every_preset() -> None:
    """The table has a column per preset, and each cell is that preset's value."""
    section = _section("Every option")
    columns = [_CODE.findall(cell) for cell in _header(section)]
    presets = {cell[0]: i for i, cell in enumerate(columns) if cell and cell[0] in PRESETS}
    assert sorted(presets) == sorted(PRESETS)
    for preset, column in presets.items():
        spelled = options_to_dict(PRESETS[preset])
        cells = {name: row[column] for name, row in _option_rows().items()}
        assert {name: _value(_CODE.findall(cell)[0]) for name, cell in cells.items()} == spelled


def test_the_default_preset_is_standard() -> None:
    """The page calls `standard` the default preset, which is what no preset parses to."""
    assert parse_ruleset(None) == PRESETS["standard"]
    assert "It is the default preset." in _section("Presets").split("**`bga`**")[0]


def test_each_option_has_the_sites_names() -> None:
    """Each row names the option as the site's pages do, in Japanese and in English."""
    words = _site_words()
    for name, row in _option_rows().items():
        ja, en = (part.strip() for part in row[1].split(" · "))
        assert (ja, en) == (words["ja"][name][0], words["en"][name][0]), name


def test_each_choice_is_introduced_with_the_sites_labels() -> None:
    """Each value of a choice option appears as **`value`** (its Japanese label, "its
    English label"), as the party settings form shows it."""
    introduced = set(re.findall(r'\*\*`(\w+)`\*\* \(([^,()]+), "([^"]+)"', _text()))
    words = _site_words()
    for name, values in option_values().items():
        labels_ja, labels_en = words["ja"][name][1], words["en"][name][1]
        if not labels_ja:
            continue  # a switch or `enter_on`: no labels
        for value in values:
            assert (value, labels_ja[value], labels_en[value]) in introduced, (name, value)


def test_board_sizes_match_the_engine() -> None:
    """Every layout at 2, 3 and 4 players has a row, and its arms, track length, colours,
    start squares and goal are the engine's."""
    seen = set()
    for row in _rows(_section("Board sizes")):
        kind, players = _CODE.findall(row[0])[0], int(row[1])
        board = board_for(parse_ruleset({"board": kind}), players)
        assert int(row[2]) * ARM == board.length == int(row[3])
        assert tuple(c.strip() for c in row[4].split(",")) == board.colours
        assert tuple(int(s) for s in row[5].split(",")) == board.starts
        assert int(row[6]) == board.goal == board.length + 4
        seen.add((kind, players))
    assert seen == {(kind, n) for kind in ("cross", "by_players") for n in (2, 3, 4)}


def test_safe_squares_are_the_formulas_of_the_page() -> None:
    """`start_and_star` is every arm's start and the square the page says ahead of it;
    `start` the starts alone; `none` nothing (arms nobody plays included)."""
    offset = int(re.findall(r"13·\*a\* \+ (\d+)", _section("Safe squares: `safe_squares`"))[0])
    for kind in ("cross", "by_players"):
        for players in (2, 3, 4):
            arms = range(board_for(parse_ruleset({"board": kind}), players).length // ARM)
            expected = {
                "start_and_star": {s for a in arms for s in (ARM * a, ARM * a + offset)},
                "start": {ARM * a for a in arms},
                "none": set(),
            }
            for safe, squares in expected.items():
                rules = parse_ruleset({"board": kind, "safe_squares": safe})
                assert board_for(rules, players).safe == squares, (kind, players, safe)


def test_every_revision_has_a_row_and_the_current_one_is_marked() -> None:
    """The revisions table has a row per revision of `REVISIONS`; the current one says so."""
    rows = {int(row[0]): row for row in _rows(_section("Revisions of the rules"))}
    assert sorted(rows) == sorted(REVISIONS)
    assert [n for n, row in rows.items() if "current" in row[2]] == [CURRENT_REVISION]


def test_turn_limits_and_the_stand_in_count_are_the_engines() -> None:
    """The turn limit's values and default, and the timeouts before a stand-in."""
    section = _section("The turn limit, timeouts and stand-ins")
    row = next(row for row in _rows(section) if row[0] == "`turn_limit`")
    assert [_value(t) for t in _CODE.findall(row[1])] == list(TURN_LIMITS)
    assert _value(_CODE.findall(row[2])[0]) is None
    assert f"At {STAND_IN_AFTER_TIMEOUTS} (`domain.decider.STAND_IN_AFTER_TIMEOUTS`)" in section


def test_every_reason_a_piece_cannot_move_is_explained() -> None:
    """Each rule a refusal may name (`CannotMove.rule`) has a row."""
    rows = _rows(_section("Why a piece cannot move"))
    assert [_CODE.findall(row[0])[0] for row in rows] == list(get_args(Rule))


def test_every_link_within_the_page_finds_its_heading() -> None:
    """Each `(#anchor)` link of the page, and each `rules.md#anchor` link of the docs, is
    the anchor of one of the page's headings."""
    anchors = _anchors()
    links = set(re.findall(r"\]\(#([^)]+)\)", _text()))
    for other in (paths.ROOT / "docs").glob("*.md"):
        links |= set(re.findall(r"\]\(rules\.md#([^)]+)\)", other.read_text()))
    assert len(links) > 20  # the scan found the links at all
    assert sorted(links - anchors) == []


def test_the_page_cites_nothing_outside_the_repository() -> None:
    """The specification stands on its own: no file outside the repository, no issue."""
    text = _text()
    for outside in ("RULES" + ".md", "DESIGN" + ".md", "../" + "shared", "seeds/"):
        assert outside not in text
    assert re.findall(r"(?i)issue\s*#?\d+|#\d+\b", text) == []
