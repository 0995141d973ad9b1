"""What tests/test_compiled.py compares: a fingerprint of many whole matches, replay
verdicts and match analyses, computed by whichever `domain` and `replays` are importable
(run as `python3 -m tests.compiled_probe`, it prints it with the engine's form)."""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any

import msgspec

from domain.analysis import analyse
from domain.analysis import encode as encode_analysis
from domain.engine_form import engine_form
from domain.events import encode_event
from domain.rules import parse_ruleset
from domain.selfplay import play_match
from replays.format import load_replay
from replays.verify import verify_replay

GOLDEN = Path(__file__).parent / "golden" / "matches.json"
# (rules, seats): normal and hard CPUs under both presets and a by_players board.
MIXED: list[tuple[dict[str, Any], list[str]]] = [
    ({"preset": "standard"}, ["normal", "hard", "easy", "normal"]),
    ({"preset": "bga"}, ["hard", "normal", "normal"]),
    ({"board": "by_players", "blocks": "no_overtaking"}, ["normal", "easy", "hard"]),
    ({"preset": "standard", "empty_course": "three_tries"}, ["normal", "normal"]),
]


def fingerprint() -> str:
    """sha256 over the verdicts on the golden replay files (as they are, and forged), over
    the encoded events of every golden case and every mixed match, and over the encoded
    analysis (domain/analysis.py) of every mixed match: the network's rules and the
    fallback's."""
    digest = hashlib.sha256()
    matches: list[tuple[dict[str, Any], list[str], bytes, list[str] | None, int, bool]] = [
        (c["rules"], ["easy"] * c["players"], bytes.fromhex(c["server_seed"]),
         c["client_seeds"], c["first_seat"], False)
        for c in json.loads(GOLDEN.read_text())["cases"]
    ]  # fmt: skip
    matches += [
        (rules, seats, hashlib.sha256(f"probe{i}".encode()).digest(), None, i % len(seats), True)
        for i, (rules, seats) in enumerate(MIXED)
    ]
    # The verifier too: every golden replay file, and each with one die changed.
    for path in sorted((GOLDEN.parent / "replays").glob("*.ludo-replay.json")):
        raw = path.read_bytes()
        forged = raw.replace(b'\\"value\\":3', b'\\"value\\":4', 1)
        for data in (raw, forged):
            verdict = verify_replay(load_replay(data))
            digest.update(msgspec.json.encode(verdict))
    for rules, seats, seed, client_seeds, first, analysed in matches:
        match = play_match(
            parse_ruleset(rules),
            seats,  # type: ignore[arg-type]
            server_seed=seed,
            client_seeds=client_seeds,
            first_seat=first,
            cpu_seed="probe",
        )
        for event in match.events:
            digest.update(encode_event(event))
        if analysed:
            digest.update(encode_analysis(analyse(match.events)))
    return digest.hexdigest()


if __name__ == "__main__":
    sys.stdout.write(json.dumps({"form": engine_form(), "fingerprint": fingerprint()}))
