"""Options and presets (docs/rules.md#options-local-rules-and-presets), and the validation of
untrusted rulesets."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
from hypothesis import given

from domain.board import Board, board_for
from domain.rules import (
    CURRENT_REVISION,
    OPTION_KEYS,
    PRESETS,
    REVISIONS,
    Ruleset,
    RulesetError,
    entering_value_ends_tries,
    options_to_dict,
    parse_ruleset,
    parse_settings,
    ruleset_to_dict,
)
from tests.conftest import rules, rulesets

# docs/rules.md#every-option, the table, column by column.
STANDARD = {
    "board": "cross",
    "enter_on": [6],
    "empty_course": "normal",
    "three_sixes": True,
    "capture_bonus": True,
    "goal_bonus": False,
    "safe_squares": "start_and_star",
    "blocks": "double",
    "exact_finish": True,
    "play_to_end": False,
    "rotate_first": True,
    "quick_start": False,
}
BGA = {
    "board": "by_players",
    "enter_on": [1, 2, 3, 4, 5, 6],
    "empty_course": "normal",
    "three_sixes": False,
    "capture_bonus": True,
    "goal_bonus": True,
    "safe_squares": "start_and_star",
    "blocks": "none",
    "exact_finish": True,
    "play_to_end": False,
    "rotate_first": True,
    "quick_start": True,
}
VALUES: dict[str, list[Any]] = {
    "board": ["cross", "by_players"],
    "empty_course": ["normal", "auto_enter", "three_tries"],
    "safe_squares": ["start_and_star", "start", "none"],
    "blocks": ["double", "none", "no_overtaking"],
}


class TestPresets:
    """The option table, the `standard` and `bga` presets, preset + overrides."""

    def test_option_keys_are_exactly_the_table_rows(self) -> None:
        """The ruleset has exactly the twelve option keys of the table."""
        assert set(OPTION_KEYS) == set(STANDARD)
        assert set(PRESETS) == {"standard", "bga"}

    def test_standard_preset_is_our_default_column(self) -> None:
        """`standard` matches the table's standard column, and is what no preset means."""
        assert options_to_dict(PRESETS["standard"]) == STANDARD
        assert ruleset_to_dict(PRESETS["standard"]) == {**STANDARD, "revision": CURRENT_REVISION}
        assert parse_ruleset(None) == parse_ruleset({}) == Ruleset() == PRESETS["standard"]

    def test_bga_preset_matches_its_column(self) -> None:
        """`bga` matches the table: by_players, enter on any value, blocks none, quick start…"""
        assert options_to_dict(parse_ruleset({"preset": "bga"})) == BGA

    def test_bga_preset_has_no_blocks(self) -> None:
        """Decision: BGA describes no blocks, so `bga` uses blocks = none and start_and_star."""
        bga = PRESETS["bga"]
        assert (bga.blocks, bga.safe_squares) == ("none", "start_and_star")

    @pytest.mark.parametrize("preset", ["standard", "bga"])
    def test_preset_plus_overrides_changes_only_the_overridden_options(self, preset: str) -> None:
        """`{"preset": p, key: value}` is preset p with just that option replaced."""
        base = ruleset_to_dict(PRESETS[preset])
        overrides = {"blocks": "no_overtaking", "enter_on": [5, 1], "goal_bonus": False}
        got = ruleset_to_dict(parse_ruleset({"preset": preset, **overrides}))
        assert got == {**base, **overrides, "enter_on": [1, 5]}

    @pytest.mark.parametrize(("key", "values"), sorted(VALUES.items()))
    def test_every_choice_of_every_option_is_accepted(self, key: str, values: list[str]) -> None:
        """Each value listed in the table for a choice option parses."""
        for value in values:
            assert getattr(rules(**{key: value}), key) == value

    @pytest.mark.parametrize("key", [k for k in STANDARD if isinstance(STANDARD[k], bool)])
    def test_switches_accept_booleans_and_on_off(self, key: str) -> None:
        """On/off options take true/false or the pages' "on"/"off"."""
        for spelled, value in ((True, True), (False, False), ("on", True), ("off", False)):
            option: dict[str, Any] = {key: spelled}
            assert getattr(rules(**option), key) is value

    def test_enter_on_accepts_any_non_empty_set_of_die_values(self) -> None:
        """enter_on is a set: duplicates collapse, order does not matter."""
        assert rules(enter_on=[6, 1, 6]).enter_on == frozenset({1, 6})
        assert rules(enter_on=(3,)).enter_on == frozenset({3})

    def test_ruleset_to_dict_spells_every_option_with_enter_on_sorted(self) -> None:
        """The canonical dict has every option, then the revision; enter_on a sorted list."""
        out = ruleset_to_dict(rules(enter_on=[6, 2, 4]))
        assert list(out) == [*OPTION_KEYS, "revision"]
        assert list(options_to_dict(rules())) == list(OPTION_KEYS)
        assert out["enter_on"] == [2, 4, 6]

    @given(rulesets())
    def test_canonical_dict_parses_back_to_the_same_ruleset(self, ruleset: Ruleset) -> None:
        """parse_ruleset(ruleset_to_dict(r)) == r for every ruleset (events pin rules so)."""
        assert parse_ruleset(ruleset_to_dict(ruleset)) == ruleset
        assert parse_ruleset(msgspec.json.decode(msgspec.json.encode(ruleset_to_dict(ruleset))))


class TestRevisions:
    """The revision of the rules' reading a ruleset is played under (domain.rules.REVISIONS)."""

    def test_new_rulesets_get_the_current_revision(self) -> None:
        """Naming no revision means the current one: both presets, and any spec."""
        assert CURRENT_REVISION == max(REVISIONS) == 2
        assert {r.revision for r in PRESETS.values()} == {CURRENT_REVISION}
        assert rules(blocks="none").revision == CURRENT_REVISION

    @pytest.mark.parametrize("revision", sorted(REVISIONS))
    def test_a_pinned_revision_parses_back(self, revision: int) -> None:
        """A ruleset as a match pins it keeps its revision."""
        ruleset = rules("bga", revision=revision)
        assert ruleset.revision == revision
        assert parse_ruleset(ruleset_to_dict(ruleset)) == ruleset

    @pytest.mark.parametrize("value", [0, 3, -1, True, "2", 2.0, None, [2]])
    def test_unknown_revision_is_rejected(self, value: Any) -> None:
        """Only the revisions listed exist."""
        assert TestValidation.field_of({"revision": value}) == "revision"

    def test_settings_refuse_a_revision(self) -> None:
        """A party's settings are options only: a revision, even the current one, is refused
        naming `revision`, since new matches always get the current one."""
        for value in (1, CURRENT_REVISION):
            with pytest.raises(RulesetError) as caught:
                parse_settings({"preset": "standard", "revision": value})
            assert caught.value.field == "revision"
        assert parse_settings({"preset": "bga"}) == PRESETS["bga"]

    def test_only_revision_2_on_ends_the_tries_at_an_entering_value(self) -> None:
        """The one rule the revisions part on is keyed on the revision alone."""
        assert [entering_value_ends_tries(rules(revision=r)) for r in (1, 2)] == [False, True]


class TestValidation:
    """parse_ruleset and Board reject bad input with a RulesetError naming the field."""

    @staticmethod
    def field_of(spec: Any) -> str:
        with pytest.raises(RulesetError) as caught:
            parse_ruleset(spec)
        assert caught.value.message and caught.value.field in str(caught.value)
        return caught.value.field

    @pytest.mark.parametrize("key", ["colour", "Board", "enter", "three_six", ""])
    def test_unknown_key_is_rejected(self, key: str) -> None:
        """A key that is no option is refused, named by itself."""
        assert self.field_of({key: True}) == key

    @pytest.mark.parametrize("preset", ["BGA", "classic", "", None, 3])
    def test_unknown_preset_is_rejected(self, preset: Any) -> None:
        """Only the presets of docs/rules.md#presets exist."""
        assert self.field_of({"preset": preset}) == "preset"

    @pytest.mark.parametrize("preset", [["standard"], {"name": "bga"}])
    def test_unhashable_preset_is_rejected(self, preset: Any) -> None:
        """A preset given as a list or object is refused with field `preset`, not a crash."""
        assert self.field_of({"preset": preset}) == "preset"

    @pytest.mark.parametrize(
        ("key", "value"),
        [
            ("board", "square"),
            ("board", None),
            ("board", ["cross"]),
            ("empty_course", "auto"),
            ("safe_squares", "star"),
            ("blocks", "single"),
            ("blocks", 2),
            ("three_sixes", "yes"),
            ("capture_bonus", 1),
            ("goal_bonus", None),
            ("exact_finish", "true"),
            ("play_to_end", 0),
            ("rotate_first", []),
            ("quick_start", "ON"),
        ],
    )
    def test_bad_value_is_rejected(self, key: str, value: Any) -> None:
        """A value of the wrong type or outside an option's list is refused, naming the key."""
        assert self.field_of({key: value}) == key

    @pytest.mark.parametrize("value", [[], (), set(), frozenset()])
    def test_empty_enter_on_is_rejected(self, value: Any) -> None:
        """enter_on must name at least one die value."""
        assert self.field_of({"enter_on": value}) == "enter_on"

    @pytest.mark.parametrize(
        "value", [[0], [7], [6, 7], [-1], [1.0], ["6"], [True], [None], 6, "6", {"6": 1}]
    )
    def test_enter_on_outside_die_values_is_rejected(self, value: Any) -> None:
        """enter_on is a list of integers 1-6; anything else is refused."""
        assert self.field_of({"enter_on": value}) == "enter_on"

    @pytest.mark.parametrize("spec", [[], "standard", 3])
    def test_non_mapping_spec_is_rejected(self, spec: Any) -> None:
        """The rules are an object of options."""
        assert self.field_of(spec) == "rules"

    @pytest.mark.parametrize("players", [0, 1, 5, -2, True, False, 2.0, 3.5, "2", None])
    @pytest.mark.parametrize("board", ["cross", "by_players"])
    def test_players_outside_two_to_four_are_rejected(self, board: str, players: Any) -> None:
        """A board seats 2, 3 or 4 players; anything else is a RulesetError on `players`."""
        with pytest.raises(RulesetError) as caught:
            Board(rules(board=board), players)
        assert caught.value.field == "players"

    @pytest.mark.parametrize("players", [0, 1, 5, -2, True, False, 3.5, "2", None])
    def test_board_for_rejects_players_outside_two_to_four(self, players: Any) -> None:
        """The cached constructor rejects the same counts with the same error."""
        with pytest.raises(RulesetError) as caught:
            board_for(rules(), players)
        assert caught.value.field == "players"

    def test_board_for_rejects_a_float_player_count_even_when_cached(self) -> None:
        """board_for(r, 2.0) raises RulesetError("players") like Board(r, 2.0), cache or not."""
        board_for(rules(), 2)
        with pytest.raises(RulesetError):
            board_for(rules(), 2.0)

    def test_ruleset_error_is_a_value_error_with_field_and_message(self) -> None:
        """RulesetError is a ValueError carrying `field` and `message`."""
        error = RulesetError("blocks", "bad")
        assert isinstance(error, ValueError)
        assert (error.field, error.message, str(error)) == ("blocks", "bad", "blocks: bad")
