"""The rules oracle: `ludo rules moves` over JSON Lines, and `answer_query` behind it."""

from __future__ import annotations

import hashlib
import io
import json
import subprocess
import sys
from typing import Any

import pytest

from domain.decider import MatchState, apply
from domain.events import DieRolled, PieceMoved
from domain.notation import answer_query, position_to_json
from domain.rules import PRESETS, RulesetError, ruleset_to_dict
from domain.selfplay import play_match
from ludo_cli.main import main


def _position(pieces: dict[str, list[int]], turn: str = "yellow", **extra: int) -> dict[str, Any]:
    return {
        "players": len(pieces),
        "pieces": pieces,
        "turn": turn,
        "sixes": 0,
        "rolls_left": 1,
        **extra,
    }


NESTS2 = {"yellow": [-1, -1, -1, -1], "red": [-1, -1, -1, -1]}


def _run_cli(lines: list[str], monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    stdin = io.TextIOWrapper(io.BytesIO("\n".join(lines).encode() + b"\n"))
    stdout = io.TextIOWrapper(io.BytesIO(), write_through=True)
    monkeypatch.setattr(sys, "stdin", stdin)
    monkeypatch.setattr(sys, "stdout", stdout)
    assert main(["rules", "moves"]) == 0
    stdout.buffer.seek(0)
    return [json.loads(line) for line in stdout.buffer.read().decode().splitlines()]


class TestAnswerQuery:
    def test_six_enters_each_nest_piece_and_keeps_the_bonus_roll(self) -> None:
        """A 6 with all pieces home lists one entering move per piece; the six earns a roll."""
        answer = answer_query({"rules": {}, "position": _position(NESTS2), "die": 6})
        assert [m["piece"] for m in answer["moves"]] == [0, 1, 2, 3]
        first = answer["moves"][0]
        assert (first["from"], first["to"], first["captures"]) == (-1, 0, [])
        after = first["position"]
        assert after["pieces"]["yellow"] == [0, -1, -1, -1]
        assert (after["turn"], after["sixes"], after["rolls_left"]) == ("yellow", 1, 1)

    def test_a_pinned_ruleset_is_a_query_and_its_revision_changes_no_move(self) -> None:
        """A match's rules as pinned (with `revision`) can be asked about as they are; no
        revision so far changes which moves are legal."""
        blocked = _position({"yellow": [-1] * 4, "red": [26, 26, -1, -1]})  # red blocks square 0
        for revision in (1, 2):
            rules = {**ruleset_to_dict(PRESETS["standard"]), "revision": revision}
            assert answer_query({"rules": rules, "position": blocked, "die": 6}) == {"moves": []}
            got = answer_query({"rules": rules, "position": _position(NESTS2), "die": 6})
            assert [m["piece"] for m in got["moves"]] == [0, 1, 2, 3]

    def test_no_legal_move_gives_an_empty_list(self) -> None:
        """A non-entering die with every piece in the nest has no move."""
        assert answer_query({"rules": {}, "position": _position(NESTS2), "die": 3}) == {"moves": []}

    def test_capture_is_named_by_colour_and_the_turn_goes_on(self) -> None:
        """Landing on a lone opponent captures it, by colour and index, with a bonus roll."""
        # yellow at 10 (square 10); red's piece 2 at progress 36 stands on square (26+36)%52=10
        pieces = {"yellow": [7, -1, -1, -1], "red": [-1, -1, 36, -1]}
        answer = answer_query({"rules": {}, "position": _position(pieces), "die": 3})
        (move,) = answer["moves"]
        assert move["captures"] == [["red", 2]]
        assert move["position"]["pieces"]["red"] == [-1, -1, -1, -1]
        assert move["position"]["turn"] == "yellow"  # capture bonus

    def test_turn_passes_when_no_rolls_remain(self) -> None:
        """After a plain move with no bonus the position shows the next colour to roll."""
        pieces = {"yellow": [7, -1, -1, -1], "red": [-1, -1, -1, -1]}
        (move,) = answer_query({"rules": {}, "position": _position(pieces), "die": 2})["moves"]
        assert move["position"]["turn"] == "red"
        assert move["position"]["rolls_left"] == 1

    def test_third_six_has_no_move(self) -> None:
        """With two sixes already rolled, a third six is not played."""
        pieces = {"yellow": [7, -1, -1, -1], "red": [-1, -1, -1, -1]}
        query = {"rules": {}, "position": _position(pieces, sixes=2), "die": 6}
        assert answer_query(query) == {"moves": []}

    def test_auto_enter_reports_the_entry_without_a_die(self) -> None:
        """Under auto_enter an empty course enters one piece whatever the die, ending the turn."""
        query = {"rules": {"empty_course": "auto_enter"}, "position": _position(NESTS2), "die": 2}
        (move,) = answer_query(query)["moves"]
        assert (move["piece"], move["from"], move["to"]) == (0, -1, 0)
        assert move["position"]["turn"] == "red"

    def test_winning_move_reports_placements(self) -> None:
        """The move that finishes the match adds placements to the position after it."""
        pieces = {"yellow": [56, 56, 56, 53], "red": [10, -1, -1, -1]}
        (move,) = answer_query({"rules": {}, "position": _position(pieces), "die": 3})["moves"]
        assert move["position"]["placements"] == {"yellow": 1, "red": 2}

    @pytest.mark.parametrize(
        ("query", "field"),
        [
            (
                {"rules": {"blocks": "triple"}, "position": _position(NESTS2), "die": 1},
                "rules.blocks",
            ),
            ({"rules": {}, "position": _position(NESTS2), "die": 7}, "die"),
            ({"rules": {"revision": 3}, "position": _position(NESTS2), "die": 6}, "rules.revision"),
            (
                {"rules": {}, "position": {**_position(NESTS2), "players": 5}, "die": 1},
                "position.players",
            ),
            (
                {
                    "rules": {},
                    "position": _position({"yellow": [-1] * 4, "blue": [-1] * 4}),
                    "die": 1,
                },
                "position.pieces",
            ),
            (
                {
                    "rules": {},
                    "position": _position({"yellow": [-1, 99, -1, -1], "red": [-1] * 4}),
                    "die": 1,
                },
                "position.pieces.yellow",
            ),
            ({"rules": {}, "position": _position(NESTS2, turn="green"), "die": 1}, "position.turn"),
            ({"rules": {}, "position": _position(NESTS2), "die": 1, "extra": 1}, "extra"),
            ({"rules": {}, "die": 6}, "position"),
            ({"rules": {}, "position": _position(NESTS2)}, "die"),
            ({"rules": {}, "position": [], "die": 6}, "position"),
            (  # yellow's progress 10 and red's 36 are both track square 10 (not safe)
                {
                    "rules": {},
                    "position": _position({"yellow": [10, -1, -1, -1], "red": [36, -1, -1, -1]}),
                    "die": 1,
                },
                "position.pieces",
            ),
            (  # red already finished: under `standard` the match is over
                {
                    "rules": {},
                    "position": _position({"yellow": [5, -1, -1, -1], "red": [56] * 4}),
                    "die": 1,
                },
                "position.pieces",
            ),
            (  # play_to_end with one player left: over as well
                {
                    "rules": {"play_to_end": True},
                    "position": {
                        "players": 3,
                        "pieces": {"yellow": [56] * 4, "red": [3, -1, -1, -1], "blue": [56] * 4},
                        "turn": "red",
                    },
                    "die": 1,
                },
                "position.pieces",
            ),
        ],
    )
    def test_bad_queries_name_the_field(self, query: dict[str, Any], field: str) -> None:
        """Each malformed part of a query is rejected with its field named."""
        with pytest.raises(RulesetError) as error:
            answer_query(query)
        assert error.value.field == field


class TestCommand:
    def test_one_answer_per_line_and_errors_do_not_stop_the_batch(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Good, malformed and invalid lines each get their own answer, in order."""
        good = json.dumps(
            {
                "rules": {"preset": "bga"},
                "die": 1,
                "position": _position({"yellow": [-1] * 4, "blue": [-1] * 4}),
            }
        )
        bad_rules = json.dumps({"rules": {"enter_on": []}, "position": {}, "die": 1})
        answers = _run_cli([good, "{not json", bad_rules, good], monkeypatch)
        assert len(answers) == 4
        assert len(answers[0]["moves"]) == 4  # bga: any value enters
        assert answers[1]["error"].startswith("malformed JSON") and answers[1]["field"] is None
        assert answers[2]["field"] == "rules.enter_on"
        assert answers[3] == answers[0]

    def test_blank_bom_and_deeply_nested_lines_each_get_their_answer(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A blank line, a byte-order mark and 1,000 nested arrays keep answers aligned."""
        good = json.dumps({"rules": {}, "die": 6, "position": _position(NESTS2)})
        deep = "[" * 1000 + "]" * 1000
        answers = _run_cli([good, "", "\ufeff" + good, deep, good], monkeypatch)
        assert len(answers) == 5
        assert answers[1] == {
            "error": "empty line: expected one query object per line",
            "field": None,
        }
        assert answers[2] == answers[0] and "moves" in answers[0]
        assert answers[3]["error"].startswith("malformed JSON") and answers[3]["field"] is None
        assert answers[4] == answers[0]

    def test_console_script_answers_over_a_pipe(self) -> None:
        """`python -m ludo_cli.main rules moves` works as a real process on stdin/stdout."""
        query = json.dumps({"rules": {}, "position": _position(NESTS2), "die": 6})
        result = subprocess.run(
            [sys.executable, "-m", "ludo_cli.main", "rules", "moves"],
            input=query + "\n",
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
        )
        assert len(json.loads(result.stdout)["moves"]) == 4


class TestAgainstPlay:
    def test_every_roll_of_real_matches_is_answered_and_contains_the_move_played(self) -> None:
        """Positions from self-played matches under both presets (sixes > 2 included when
        three_sixes is off) are all accepted, and each lists the move that was played."""
        checked = 0
        for i, preset in enumerate(("standard", "bga", "bga")):
            record = play_match(
                PRESETS[preset],
                ["easy"] * (2 + i),
                server_seed=hashlib.sha256(f"oracle-{i}".encode()).digest(),
            )
            state = MatchState()
            pending: dict[str, Any] | None = None
            for event in record.events:
                if type(event) is DieRolled:
                    pending = answer_query(
                        {
                            "rules": ruleset_to_dict(PRESETS[preset]),
                            "position": position_to_json(state),
                            "die": event.value,
                        }
                    )
                elif type(event) is PieceMoved and pending is not None:
                    assert [event.piece, event.frm, event.to] in [
                        [m["piece"], m["from"], m["to"]] for m in pending["moves"]
                    ]
                    checked += 1
                    pending = None
                apply(state, event)
        assert checked > 100


@pytest.mark.parametrize("players", [[], {}, [2]])
def test_an_unhashable_player_count_names_the_field(players: Any) -> None:
    """Regression (found by tests/replays/test_fuzz.py): `"players": []` raised TypeError from the
    board cache, not a NotationError naming `position.players`."""
    position = {**_position(NESTS2), "players": players}
    with pytest.raises(RulesetError) as raised:
        answer_query({"rules": {}, "position": position, "die": 6})
    assert raised.value.field == "position.players"
