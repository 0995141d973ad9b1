"""The baseline a bench compares with is a git ref resolved to its commit: the tag
`issue-14-start` names one in this repository, and a ref that names none is refused saying so."""

from __future__ import annotations

import subprocess

import pytest

from benchmarks.common import BASELINE_TAG, ROOT, BenchError, commit_of


def test_a_ref_resolves_to_its_full_commit() -> None:
    """`HEAD` resolves to the commit git names, in full."""
    head = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert commit_of("HEAD") == head and len(head) == 40


def test_the_baseline_tag_names_a_commit() -> None:
    """The repository has the tag the benches default to (docs/benchmarks.md: how to make it)."""
    assert len(commit_of(BASELINE_TAG)) == 40


def test_a_ref_that_names_no_commit_is_refused() -> None:
    """An unknown ref is a `BenchError` naming it and the option."""
    with pytest.raises(BenchError, match=r"no commit 'no-such-ref-27' .*--baseline-ref"):
        commit_of("no-such-ref-27")
