"""`ludo rules moves`: the rules oracle over JSON Lines (docs/design.md#public-contracts).

One query per input line, one answer per output line, in order. A bad line (a blank one
too) gets `{"error": ..., "field": ...}` and the oracle goes on with the next, so one typo
never stalls a batch and answer N is always the answer to line N.

A position may leave out `turn` (the first colour), `sixes` (0) and `rolls_left` (1);
`rules` may be left out for the `standard` preset.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

import msgspec

from domain.notation import answer_query
from domain.rules import RulesetError

__all__ = ["register", "run_moves"]


def register(rules: argparse.ArgumentParser) -> None:
    """`ludo rules`'s parser (ludo_cli/main.py names the command)."""
    rules_sub = rules.add_subparsers(dest="rules_command", metavar="SUBCOMMAND", required=True)
    moves = rules_sub.add_parser(
        "moves",
        help="legal moves for positions read as JSON Lines on stdin",
        description="Reads one query per line: "
        '{"rules": {...}, "position": {...}, "die": n}; '
        'writes one line per query: {"moves": [...]} or {"error": "...", "field": ...} '
        "(field: the query's part at fault, null when the line is not JSON). A position may "
        'leave out "turn" (first colour), "sixes" (0) and "rolls_left" (1); without "rules" '
        "the standard preset applies.",
    )
    moves.set_defaults(func=run_moves)


def run_moves(args: argparse.Namespace) -> int:
    encode = msgspec.json.Encoder().encode
    decode = msgspec.json.decode
    out = sys.stdout.buffer
    for line in sys.stdin.buffer:
        out.write(encode(answer_line(line, decode)) + b"\n")
    out.flush()
    return 0


def answer_line(line: bytes, decode: Any = msgspec.json.decode) -> dict[str, Any]:
    """The answer to one input line. Every line gets one, a blank one included, so that
    answer N is always the answer to line N; `field` is null when no field is at fault."""
    text = line.removeprefix(b"\xef\xbb\xbf")  # a UTF-8 byte-order mark some editors write
    if not text.strip():
        return {"error": "empty line: expected one query object per line", "field": None}
    try:
        return answer_query(decode(text))
    except msgspec.DecodeError as error:
        return {"error": f"malformed JSON: {error}", "field": None}
    except RecursionError:
        return {"error": "malformed JSON: nested too deeply", "field": None}
    except RulesetError as error:
        return {"error": str(error), "field": error.field}
