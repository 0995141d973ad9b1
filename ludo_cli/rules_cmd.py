"""`ludo rules moves`: the rules oracle over JSON Lines (DESIGN.md §8).

One query per input line, one answer per output line, in order. A bad line gets
`{"error": ...}` and the oracle goes on with the next, so one typo never stalls a batch.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

import msgspec

from domain.notation import answer_query
from domain.rules import RulesetError

__all__ = ["register", "run_moves"]


def register(subparsers: Any) -> None:
    rules = subparsers.add_parser("rules", help="rules tools (the rules oracle)")
    rules_sub = rules.add_subparsers(dest="rules_command", metavar="SUBCOMMAND", required=True)
    moves = rules_sub.add_parser(
        "moves",
        help="legal moves for positions read as JSON Lines on stdin",
        description="Reads one query per line: "
        '{"rules": {...}, "position": {...}, "die": n}; '
        'writes one line per query: {"moves": [...]} or {"error": "..."}.',
    )
    moves.set_defaults(func=run_moves)


def run_moves(args: argparse.Namespace) -> int:
    encode = msgspec.json.Encoder().encode
    decode = msgspec.json.decode
    out = sys.stdout.buffer
    for line in sys.stdin.buffer:
        if not line.strip():
            continue
        answer: dict[str, Any]
        try:
            answer = answer_query(decode(line))
        except msgspec.DecodeError as error:
            answer = {"error": f"malformed JSON: {error}"}
        except RulesetError as error:
            answer = {"error": str(error), "field": error.field}
        out.write(encode(answer) + b"\n")
    out.flush()
    return 0
