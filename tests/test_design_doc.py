"""docs/design.md against the code: it names every event type, stream prefix and Decider of
`domain/`; every path it names exists and every link resolves; its layering drawing agrees
with tests/test_layers.py; its dice and hash-chain text is exact (its reference verifier,
run here, derives the dice `domain/dice.py` derives, accepts the golden replay files and
catches their forgeries); and every reference to one of its sections resolves."""

from __future__ import annotations

import copy
import hashlib
import importlib
import inspect
import itertools
import json
import pkgutil
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, cast

import msgspec
import pytest

import domain
from domain import streams
from domain.chain import GENESIS, event_hash
from domain.dice import die_for_roll
from domain.events import EVENT_TYPES, DieRolled, encode_event
from tests import paths
from tests.test_layers import ALLOWED

ROOT = paths.ROOT
DOC = ROOT / "docs" / "design.md"
TEXT = DOC.read_text(encoding="utf-8")
GOLDEN_REPLAYS = sorted((paths.GOLDEN / "replays").glob("*.ludo-replay.json"))

# The folders a path named in the doc may start with.
_TOP = "domain|replays|services|ludo_cli|migrations|tests|benchmarks|tools|deploy|docs|web"
_PATH = re.compile(rf"(?<![\w./-])((?:{_TOP})/[\w./-]*)")
# A file named alone in backticks (`match_reads.py`): it exists somewhere in the tree.
_BARE_FILE = re.compile(r"`([a-z_]+\.(?:py|html|js|css|md))`")
_FENCE = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)
_VERIFIER_MARK = "# The reference verifier"


def _prose(text: str) -> str:
    """The text outside fenced code blocks."""
    return _FENCE.sub("", text)


def anchor(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def headings(text: str) -> list[str]:
    """The headings of a page, code blocks left out."""
    return [m.group(1).strip() for m in re.finditer(r"^#+ (.+)$", _prose(text), re.MULTILINE)]


def _domain_modules() -> Iterator[Any]:
    for info in pkgutil.walk_packages(domain.__path__, "domain."):
        yield importlib.import_module(info.name)


def _event_types() -> dict[str, str]:
    """Event type -> its module, for every stream's events in `domain/`: the tagged msgspec
    Structs that carry a `schema_version`."""
    found: dict[str, str] = {}
    for module in _domain_modules():
        for name, value in vars(module).items():
            if (
                inspect.isclass(value)
                and issubclass(value, msgspec.Struct)
                and value.__module__ == module.__name__
                and not name.startswith("_")
                and value.__struct_config__.tag_field == "type"
                and hasattr(value, "schema_version")
            ):
                found[name] = module.__name__
    return found


def test_names_every_event_type() -> None:
    """Every event type of every stream (`domain/events.py` and the other Deciders) is named."""
    found = _event_types()
    assert set(EVENT_TYPES) <= set(found)  # the search sees the match events at least
    assert {"PartyCreated", "PoolEntered", "ArenaCreated", "ReportFiled", "StampSent"} <= set(found)
    missing = sorted(
        f"{name} ({module})" for name, module in found.items() if f"`{name}`" not in TEXT
    )
    assert missing == []


def test_names_every_stream_prefix() -> None:
    """Every stream prefix of `domain/streams.py` is named, as a stream id in backticks."""
    prefixes = {
        name: value
        for name, value in vars(streams).items()
        if name.endswith("_PREFIX") and isinstance(value, str)
    }
    assert len(prefixes) >= 6
    assert [name for name, prefix in prefixes.items() if f"`{prefix}" not in TEXT] == []


def test_names_every_decider() -> None:
    """Every module of `domain/` with a `decide` function is named by its path."""
    deciders = [
        module.__name__.replace(".", "/") + ".py"
        for module in _domain_modules()
        if inspect.isfunction(getattr(module, "decide", None))
        and module.decide.__module__ == module.__name__
    ]
    assert "domain/decider.py" in deciders
    assert [path for path in deciders if f"`{path}`" not in TEXT] == []


def test_every_path_it_names_exists() -> None:
    """Every repository path the page names, and every file it names alone, exists."""
    named = {match.rstrip(".") for match in _PATH.findall(TEXT)}
    assert len(named) > 50
    missing = sorted(path for path in named if not (ROOT / path).exists())
    assert missing == []
    everywhere = {p.name for top in _TOP.split("|") for p in (ROOT / top).rglob("*")}
    assert sorted(set(_BARE_FILE.findall(TEXT)) - everywhere) == []


def test_every_link_resolves() -> None:
    """Every Markdown link goes to a heading of the page or to a file that exists."""
    anchors = {anchor(h) for h in headings(TEXT)}
    broken = []
    for target in re.findall(r"\]\(([^)\s]+)\)", _prose(TEXT)):
        if target.startswith("#"):
            ok = target[1:] in anchors
        else:
            ok = (DOC.parent / target.split("#")[0]).exists()
        if not ok:
            broken.append(target)
    assert broken == []


def test_names_no_file_outside_the_repository() -> None:
    """The page stands on its own: no specification outside the repository is cited."""
    outside = ("DESIGN" + ".md", "RULES" + ".md", "../" + "shared")
    assert [name for name in outside if name in TEXT] == []


def test_layering_drawing_agrees_with_the_layering_test() -> None:
    """The chain `domain < replays < services < ludo_cli < benchmarks` drawn in the page is
    the order tests/test_layers.py enforces: each folder may import those left of it and
    none right of it."""
    chain = re.search(r"^(domain(?: < \w+)+)$", TEXT, re.MULTILINE)
    assert chain is not None
    folders = chain.group(1).split(" < ")
    assert len(folders) >= 4
    for i, folder in enumerate(folders):
        assert set(folders[: i + 1]) <= ALLOWED[folder], folder
        assert not set(folders[i + 1 :]) & ALLOWED[folder], folder


# --------------------------------------------------------------- the dice and the chain


def _verifier() -> dict[str, Any]:
    """The page's reference verifier, run as written."""
    blocks = re.findall(r"^```python\n(.*?)^```", TEXT, re.MULTILINE | re.DOTALL)
    code = [block for block in blocks if block.startswith(_VERIFIER_MARK)]
    assert len(code) == 1, "one reference verifier block"
    namespace: dict[str, Any] = {}
    exec(compile(code[0], str(DOC), "exec"), namespace)  # the page's own code, to run as written
    return namespace


VERIFIER = _verifier()
die = cast(Callable[[bytes, str, int], int], VERIFIER["die"])
check_replay = cast(Callable[[dict[str, Any]], str | None], VERIFIER["check_replay"])
doc_event_hash = cast(Callable[[bytes, str, int, str, int, bytes], bytes], VERIFIER["event_hash"])


def test_the_derivation_as_written_is_the_code_s() -> None:
    """The page's `die` gives the die `domain.dice.die_for_roll` gives, for many seeds,
    client seeds and roll numbers (about one in 64 past a first byte of 252 or more)."""
    seeds = [bytes(32), bytes(range(32)), b"\xff" * 32, hashlib.sha256(b"ludo").digest()]
    clients = ["", "alice", "alice|bob", "a b|~!|x y z|"]
    for seed, client in itertools.product(seeds, clients):
        rolls = range(400)
        assert [die(seed, client, n) for n in rolls] == [
            die_for_roll(seed, client, n) for n in rolls
        ], (seed.hex(), client)


@pytest.mark.parametrize(
    ("seed", "client"), [(bytes(range(32)), ""), (bytes(32), "alice|bob")], ids=["bytes", "zeros"]
)
def test_the_known_answers_are_the_code_s(seed: bytes, client: str) -> None:
    """The known answers printed for implementers are the first 20 dice of their seeds."""
    answers = " ".join(str(die_for_roll(seed, client, n)) for n in range(20))
    assert f"server seed {seed.hex()}, client seed {json.dumps(client)}:\n{answers}\n" in TEXT


def test_the_hash_example_is_the_chain_s() -> None:
    """The worked hash of the page is `domain.chain`'s, and the page's `event_hash` too."""
    data = encode_event(DieRolled(seat=0, n=0, value=6))
    expected = event_hash(GENESIS, "match-1", 0, "DieRolled", 1, data)
    assert f"`{data.decode()}`" in TEXT
    assert f"the {len(data)} bytes" in TEXT
    assert expected.hex() in TEXT
    assert doc_event_hash(GENESIS, "match-1", 0, "DieRolled", 1, data) == expected


def _replay(path: Path) -> dict[str, Any]:
    replay: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return replay


def _rechain(replay: dict[str, Any], start: int) -> None:
    """Recompute the hashes from event `start` on with `domain.chain`, as a forger who
    knows the chain would."""
    events = replay["events"]
    prev = bytes.fromhex(events[start]["prev_hash"])
    for event in events[start:]:
        event["prev_hash"] = prev.hex()
        prev = event_hash(
            prev,
            replay["stream_id"],
            event["version"],
            event["type"],
            event["schema_version"],
            event["data"].encode(),
        )
        event["hash"] = prev.hex()


def _first(replay: dict[str, Any], kind: str) -> int:
    return next(i for i, e in enumerate(replay["events"]) if e["type"] == kind)


@pytest.mark.parametrize("path", GOLDEN_REPLAYS, ids=lambda p: p.name.split(".")[0])
def test_the_verifier_accepts_every_golden_replay(path: Path) -> None:
    """Every replay file of every released format passes the page's verifier."""
    assert check_replay(_replay(path)) is None


@pytest.mark.parametrize("path", GOLDEN_REPLAYS[:2], ids=lambda p: p.name.split(".")[0])
def test_the_verifier_catches_a_forged_die(path: Path) -> None:
    """A die changed and the chain recomputed after it is named at its event; the same
    change without recomputing is named as a broken hash."""
    replay = _replay(path)
    at = _first(replay, "DieRolled")
    event = replay["events"][at]
    value = json.loads(event["data"])["value"]
    forged = copy.deepcopy(replay)
    forged["events"][at]["data"] = event["data"].replace(
        f'"value":{value}', f'"value":{value % 6 + 1}'
    )
    assert check_replay(forged) == f"event {at}: hash does not match"
    _rechain(forged, at)
    verdict = check_replay(forged)
    assert verdict is not None and verdict.startswith(f"event {at}: roll 0 shows {value % 6 + 1}")


def test_the_verifier_catches_a_forged_seed_and_a_missing_one() -> None:
    """A revealed seed that is not the committed one fails; a match whose seed is not
    revealed yet is said to be uncheckable, not passed."""
    replay = _replay(GOLDEN_REPLAYS[0])
    at = _first(replay, "SeedRevealed")
    forged = copy.deepcopy(replay)
    forged["events"][at]["data"] = json.dumps(
        {"type": "SeedRevealed", "server_seed": bytes(32).hex()}, separators=(",", ":")
    )
    _rechain(forged, at)
    assert check_replay(forged) == "the revealed seed does not match the commitment"
    live = copy.deepcopy(replay)
    live["events"] = live["events"][:at]
    assert check_replay(live) == "the seed is not revealed yet: the dice cannot be checked"


def test_the_verifier_catches_a_dropped_event() -> None:
    """An event taken out of the middle breaks the sequence at its place."""
    replay = _replay(GOLDEN_REPLAYS[0])
    del replay["events"][5]
    assert check_replay(replay) == "event 5: out of sequence"


# ------------------------------------------------------------ references to this page

_SOURCES = (".py", ".md", ".html", ".js", ".css", ".yaml", ".yml", ".sh", ".toml")
_REFERENCE = re.compile(r"docs/design\.md(?:#([\w-]*)|, ([^\n]{1,80}))")


def unresolved(text: str, page: str = TEXT) -> list[str]:
    """The references in `text` to a section the page does not have: the page's path then
    `#` and an anchor, or then `, ` and a heading (what follows must begin with one)."""
    titles = headings(page)
    anchors = {anchor(title) for title in titles}
    bad = []
    for match in _REFERENCE.finditer(text):
        by_anchor, by_title = match.groups()
        if by_anchor is not None and by_anchor not in anchors:
            bad.append(match.group(0))
        if by_title is not None and not any(by_title.startswith(t) for t in titles):
            bad.append(match.group(0))
    return bad


def test_the_reference_check_sees_a_bad_reference() -> None:
    """A reference by anchor or by heading is checked; one to the page alone is not."""
    page = "docs/" + "design.md"
    assert unresolved(f"see {page}#fair-dice and ({page}, Fair dice).") == []
    assert unresolved(f"see {page} for the architecture") == []
    assert unresolved(f"see {page}#dice") == [f"{page}#dice"]
    assert unresolved(f"({page}, The dice)") == [f"{page}, The dice)"]


def test_every_reference_to_a_section_resolves() -> None:
    """Code, tests and docs that cite a section of the page cite one it has."""
    bad = []
    tops = [p for p in sorted(ROOT.iterdir()) if not p.name.startswith(".")]  # no .git, .data
    for path in itertools.chain.from_iterable(p.rglob("*") if p.is_dir() else [p] for p in tops):
        if path.suffix not in _SOURCES or "vendor" in path.parts:
            continue
        text = path.read_text(encoding="utf-8")
        bad += [f"{path.relative_to(ROOT)}: {ref}" for ref in unresolved(text)]
    assert bad == []
