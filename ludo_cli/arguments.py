"""Argument types shared by `ludo` commands: a bad value is a usage error (exit 2) that
names the option's problem, before any work starts."""

from __future__ import annotations

import argparse
import json
from typing import cast

from domain.rules import RulesetError, parse_ruleset
from domain.settings import CPU_LEVELS, MAX_SEATS, MIN_SEATS, CpuLevel

__all__ = ["LEVELS", "cpu_levels", "positive_float", "positive_int", "rules_json", "seats"]

LEVELS: tuple[CpuLevel, ...] = CPU_LEVELS


def positive_int(text: str) -> int:
    """An integer >= 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value}")
    return value


def positive_float(text: str) -> float:
    """A finite number > 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}") from None
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text}")
    return value


def cpu_levels(text: str) -> tuple[CpuLevel, ...]:
    """One or more comma-separated CPU levels."""
    levels = tuple(part.strip() for part in text.split(","))
    for level in levels:
        if level not in LEVELS:
            raise argparse.ArgumentTypeError(
                f"unknown CPU level {level!r}; choose from {', '.join(LEVELS)}"
            )
    return cast(tuple[CpuLevel, ...], levels)


def seats(text: str) -> tuple[CpuLevel, ...]:
    """2-4 comma-separated CPU levels, one per seat (a party's seats)."""
    levels = cpu_levels(text)
    if not MIN_SEATS <= len(levels) <= MAX_SEATS:
        raise argparse.ArgumentTypeError(f"need {MIN_SEATS}-{MAX_SEATS} seats, got {len(levels)}")
    return levels


def rules_json(text: str) -> str:
    """A ruleset as JSON (`domain.rules.parse_ruleset`); kept as given, to print back."""
    try:
        spec = json.loads(text)
    except json.JSONDecodeError as error:
        raise argparse.ArgumentTypeError(f"not valid JSON: {error}") from None
    try:
        parse_ruleset(spec)
    except RulesetError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    return text
