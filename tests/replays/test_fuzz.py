"""Fuzzing the inputs that come from outside without a schema in front of them: the rules
oracle's queries (`ludo rules moves`, `answer_query`) and replay files (`load_replay`, then
`verify_replay` on whatever loads). Arbitrary and mutated-valid inputs get an answer or the
one typed error of each, never another exception. The WebSocket messages are fuzzed in
tests/services/match/test_socket_fuzz.py (they need the service running).
"""

from __future__ import annotations

import copy
import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from domain.notation import NotationError, answer_query
from domain.rules import PRESETS, ruleset_to_dict
from replays.format import ReplayFormatError, load_replay
from replays.verify import Verdict, verify_replay
from tests import paths

GOLDEN = sorted((paths.GOLDEN / "replays").glob("*.ludo-replay.json"))
FILES = [path.read_bytes() for path in GOLDEN]

FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=12)
    | st.sampled_from(["yellow", "red", "green", "blue", "bga", "cross", "standard", ""])
)
json_values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=8), inner, max_size=5)
    ),
    max_leaves=20,
)


def _valid_queries() -> list[dict[str, Any]]:
    """Queries the oracle answers: each preset's rules, a few positions, every die."""
    out = []
    positions = [
        {"yellow": [-1, -1, -1, -1], "red": [-1, -1, -1, -1]},
        {"yellow": [7, -1, 0, 55], "red": [10, -1, 36, -1]},
        {"yellow": [56, 56, 56, 53], "red": [10, -1, -1, -1]},
    ]
    for preset in PRESETS:
        for pieces in positions:
            for die in (1, 3, 6):
                position = {"players": 2, "pieces": pieces, "turn": "yellow", "sixes": 0}
                out.append({"rules": {"preset": preset}, "position": position, "die": die})
    out.append(
        {
            "rules": ruleset_to_dict(PRESETS["bga"]),
            "position": {"players": 2, "pieces": positions[0]},
            "die": 6,
        }
    )
    return out


VALID = _valid_queries()


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path to a sub-value of a JSON value (the root is `()`)."""
    out = [prefix]
    if isinstance(value, dict):
        for key, sub in value.items():
            out += _paths(sub, (*prefix, key))
    elif isinstance(value, list):
        for i, sub in enumerate(value):
            out += _paths(sub, (*prefix, i))
    return out


@st.composite
def mutated(draw: st.DrawFn, originals: list[Any]) -> Any:
    """One of `originals` with one to three sub-values replaced, dropped or extended."""
    value = copy.deepcopy(draw(st.sampled_from(originals)))
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(_paths(value)))
        if not path:
            value = draw(json_values)
            continue
        parent = value
        for step in path[:-1]:
            parent = parent[step]
        action = draw(st.sampled_from(["replace", "drop", "add"]))
        if action == "replace" or (action == "drop" and isinstance(parent, list)):
            parent[path[-1]] = draw(json_values)
        elif action == "drop":
            del parent[path[-1]]
        elif isinstance(parent, dict):
            parent[draw(st.text(max_size=8))] = draw(json_values)
        else:
            parent.append(draw(json_values))
    return value


def _oracle(query: Any) -> None:
    try:
        answer = answer_query(query)
    except NotationError as error:
        assert isinstance(error.field, str)  # an unknown key is named as given, even ""
        return
    assert isinstance(answer["moves"], list)


@FUZZ
@given(query=json_values)
def test_the_oracle_answers_or_names_a_field_for_any_json(query: Any) -> None:
    """Any JSON value as a query: moves, or a NotationError naming the field; nothing else."""
    _oracle(query)


@FUZZ
@given(query=mutated(VALID))
def test_the_oracle_answers_or_names_a_field_for_mutated_queries(query: Any) -> None:
    """Valid queries with parts replaced, dropped or added: moves or a NotationError only."""
    _oracle(query)


def _load(raw: bytes) -> None:
    try:
        replay = load_replay(raw)
    except ReplayFormatError as error:
        assert str(error)
        return
    assert isinstance(verify_replay(replay), Verdict)


@FUZZ
@given(raw=st.binary(max_size=2000))
def test_arbitrary_bytes_are_not_a_replay(raw: bytes) -> None:
    """Arbitrary bytes: a ReplayFormatError (or, were they one, a verdict), never a crash."""
    _load(raw)


@FUZZ
@given(data=st.data())
def test_truncated_and_byte_mutated_replays_fail_cleanly(data: st.DataObject) -> None:
    """Golden replay files cut short or with bytes flipped, dropped or inserted: loading
    raises ReplayFormatError or loads, and verifying answers a verdict."""
    raw = bytearray(data.draw(st.sampled_from(FILES)))
    if data.draw(st.booleans()):
        raw = raw[: data.draw(st.integers(0, len(raw)))]
    for _ in range(data.draw(st.integers(0, 4))):
        if not raw:
            break
        at = data.draw(st.integers(0, len(raw) - 1))
        kind = data.draw(st.sampled_from(["flip", "drop", "insert"]))
        if kind == "flip":
            raw[at] = data.draw(st.integers(0, 255))
        elif kind == "drop":
            del raw[at]
        else:
            raw[at:at] = data.draw(st.binary(min_size=1, max_size=8))
    _load(bytes(raw))


STRUCTURED = [json.loads(raw) for raw in FILES]


@settings(FUZZ, max_examples=150)
@given(value=mutated(STRUCTURED))
def test_structurally_mutated_replays_fail_cleanly(value: Any) -> None:
    """Golden replays with header fields or event fields replaced, dropped or added: a
    ReplayFormatError at load, or a verdict (a failed one, mostly) from the verifier."""
    _load(json.dumps(value).encode())
