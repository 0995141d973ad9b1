"""`ludo replay …` as a user runs it: exit statuses, what is printed, and the database
round trip (export → verify → import → audit) against a real PostgreSQL."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import msgspec
import pytest

from domain.events import DieRolled, Event, SeedRevealed
from domain.rules import parse_ruleset
from domain.selfplay import play_match
from ludo_cli.main import main
from replays.format import dump_replay, replay_from_events
from tests import paths
from tests.replays.scripted import scripted_match, server_seed

MATCH_ID = "2c4e6a80-1b3d-4f5a-8c7e-9d0f1a2b3c4d"


def write(tmp_path: Path, name: str, events: list[Event], match_id: str = MATCH_ID) -> Path:
    path = tmp_path / name
    path.write_bytes(dump_replay(replay_from_events(match_id, events)))
    return path


def forge_die(events: list[Event], n: int) -> tuple[int, list[Event]]:
    """A copy of `events` whose roll number `n` shows another value, and its index."""
    i = next(i for i, e in enumerate(events) if isinstance(e, DieRolled) and e.n == n)
    roll = events[i]
    assert isinstance(roll, DieRolled)
    forged = events[:]
    forged[i] = msgspec.structs.replace(roll, value=roll.value % 6 + 1)
    return i, forged


@pytest.fixture
def events() -> list[Event]:
    seed = server_seed("cli")
    match = play_match(parse_ruleset({"preset": "bga"}), ["easy"] * 3, server_seed=seed)
    return [*match.events, SeedRevealed(server_seed=seed.hex())]


class TestVerify:
    def test_good_file_exits_zero(
        self, tmp_path: Path, events: list[Event], capsys: pytest.CaptureFixture[str]
    ) -> None:
        """A genuine replay: exit 0 and an OK line with its counts."""
        path = write(tmp_path, "good.json", events)
        assert main(["replay", "verify", str(path)]) == 0
        out = capsys.readouterr().out
        assert out.startswith(f"OK   {path}: {len(events)} events")

    def test_one_bad_file_among_good_exits_one_and_names_it(
        self, tmp_path: Path, events: list[Event], capsys: pytest.CaptureFixture[str]
    ) -> None:
        """Any failing file makes the exit status 1; its line names event and check."""
        i, forged = forge_die(events, 9)
        good, bad = write(tmp_path, "good.json", events), write(tmp_path, "bad.json", forged)
        assert main(["replay", "verify", str(good), str(bad)]) == 1
        lines = capsys.readouterr().out.splitlines()
        assert lines[0].startswith("OK")
        assert lines[1].startswith(f"FAIL {bad}: event {i} (DieRolled): dice: roll 9 shows")

    def test_json_output(
        self, tmp_path: Path, events: list[Event], capsys: pytest.CaptureFixture[str]
    ) -> None:
        """--json prints one verdict object per file."""
        path = write(tmp_path, "good.json", events)
        assert main(["replay", "verify", "--json", str(path)]) == 0
        verdict = msgspec.json.decode(capsys.readouterr().out)
        assert verdict["ok"] is True and verdict["file"] == str(path)
        assert verdict["failure"] is None

    def test_unreadable_and_foreign_files(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """A missing file or a non-replay JSON file fails with a reason, exit 1."""
        other = tmp_path / "other.json"
        other.write_text('{"hello": 1}')
        assert main(["replay", "verify", str(tmp_path / "missing.json"), str(other)]) == 1
        out = capsys.readouterr().out
        assert "missing.json: not a readable replay file: No such file" in out
        assert "other.json: not a readable replay file: `format` must be" in out

    def test_unreadable_file_in_json_is_a_verdict_too(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """--json: an unreadable file gets a JSON line of the same shape as a verdict."""
        missing = tmp_path / "missing.json"
        assert main(["replay", "verify", "--json", str(missing)]) == 1
        verdict = msgspec.json.decode(capsys.readouterr().out)
        assert verdict["ok"] is False and verdict["file"] == str(missing)
        assert verdict["failure"]["check"] == "file"
        assert "No such file" in verdict["failure"]["message"]
        assert {"stream_id", "events", "rolls", "moves", "finished", "placements"} <= set(verdict)

    def test_dash_reads_stdin(
        self,
        tmp_path: Path,
        events: list[Event],
        capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch,
    ) -> None:
        """`verify -` checks the file piped in, as `show -` and `diff` already do."""
        path = write(tmp_path, "good.json", events)
        stdin = io.TextIOWrapper(io.BytesIO(path.read_bytes()))
        monkeypatch.setattr(sys, "stdin", stdin)
        assert main(["replay", "verify", "-"]) == 0
        assert capsys.readouterr().out.startswith(f"OK   -: {len(events)} events")


class TestImport:
    def test_a_file_that_does_not_verify_is_refused_without_a_database(
        self,
        tmp_path: Path,
        events: list[Event],
        capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch,
    ) -> None:
        """`import` checks the file before connecting: with no database reachable at all,
        a forged file is still refused with its failing check (exit 1), not a connection
        error."""
        monkeypatch.setenv("DATABASE_URL", "postgresql://ludo@127.0.0.1:1/ludo")
        _, forged = forge_die(events, 0)
        path = write(tmp_path, "forged.json", forged)
        assert main(["replay", "import", str(path)]) == 1
        err = capsys.readouterr().err
        assert "the file does not verify" in err and "dice" in err


class TestDiff:
    def test_identical_and_extended_files_agree(
        self, tmp_path: Path, events: list[Event], capsys: pytest.CaptureFixture[str]
    ) -> None:
        """An export taken mid-match is a prefix of the final one: exit 0, says how many
        more events the newer file has."""
        early, final = write(tmp_path, "early.json", events[:50]), write(tmp_path, "f.json", events)
        assert main(["replay", "diff", str(early), str(final)]) == 0
        assert f"holds all 50 events of {early} unchanged, and {len(events) - 50} more" in (
            capsys.readouterr().out
        )

    def test_rewritten_history_is_located(
        self, tmp_path: Path, events: list[Event], capsys: pytest.CaptureFixture[str]
    ) -> None:
        """A stream rewritten from event i on (every hash recomputed) parts at event i."""
        i, forged = forge_die(events, 5)
        old, new = write(tmp_path, "old.json", events), write(tmp_path, "new.json", forged)
        assert main(["replay", "diff", str(old), str(new)]) == 1
        assert f"the files part at event {i} (data, hash differ):" in (capsys.readouterr().out)

    def test_edit_without_rehashing_is_found(
        self, tmp_path: Path, events: list[Event], capsys: pytest.CaptureFixture[str]
    ) -> None:
        """An event's data edited in place (its old hash kept) is a difference: the diff
        compares every stored field, not only the hashes."""
        old = write(tmp_path, "old.json", events)
        replay = replay_from_events(MATCH_ID, events)
        i = next(i for i, e in enumerate(events) if isinstance(e, DieRolled))
        replay.events[i].data = replay.events[i].data.replace('"n":', '"n": ', 1)
        new = tmp_path / "new.json"
        new.write_bytes(dump_replay(replay))
        assert main(["replay", "diff", str(old), str(new)]) == 1
        assert f"the files part at event {i} (data differ):" in capsys.readouterr().out

    def test_shorter_new_file_is_reported(
        self, tmp_path: Path, events: list[Event], capsys: pytest.CaptureFixture[str]
    ) -> None:
        """Events missing from the newer file are a difference too."""
        old, new = write(tmp_path, "old.json", events), write(tmp_path, "new.json", events[:9])
        assert main(["replay", "diff", str(old), str(new)]) == 1
        assert "lacks events 9-" in capsys.readouterr().out


class TestShow:
    def test_account_move_by_move(
        self, tmp_path: Path, events: list[Event], capsys: pytest.CaptureFixture[str]
    ) -> None:
        """`show` prints a verification line and one readable line per event, with the
        legal options of each roll when asked."""
        path = write(tmp_path, "good.json", events)
        assert main(["replay", "show", "--options", str(path)]) == 0
        out = capsys.readouterr().out
        assert "verified: every check holds" in out
        assert "yellow (cpu-0) rolls" in out
        assert "options: " in out
        assert "match over:" in out and "server seed revealed" in out

    def test_not_a_replay_is_a_usage_error(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """A file that is not a replay: exit 2 and what is wrong with it."""
        bad = tmp_path / "x.json"
        bad.write_text("[1, 2]")
        assert main(["replay", "show", str(bad)]) == 2
        assert "is not a replay file: a replay file is one JSON object" in capsys.readouterr().err


class TestDatabaseCommands:
    def test_export_import_audit(
        self,
        tmp_path: Path,
        database_url: str,
        monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str],
    ) -> None:
        """import a file, export it again byte-identical in its events, audit it clean;
        a second import is refused; unknown ids and a missing --all are explained."""
        monkeypatch.setenv("DATABASE_URL", database_url)
        seed = server_seed("cli-db")
        events, _actors = scripted_match(parse_ruleset({"preset": "standard"}), 2, seed)
        original = write(tmp_path, "in.json", events)
        assert main(["replay", "import", str(original)]) == 0
        assert f"imported match {MATCH_ID}: {len(events)} events" in capsys.readouterr().out
        assert main(["replay", "import", str(original)]) == 1
        assert "already stored" in capsys.readouterr().err

        exported = tmp_path / "out.json"
        assert main(["replay", "export", MATCH_ID, "-o", str(exported)]) == 0
        assert main(["replay", "verify", str(exported)]) == 0
        capsys.readouterr()

        assert main(["replay", "audit", "--all"]) == 0
        captured = capsys.readouterr()
        assert f"OK   {MATCH_ID}: {len(events)} events, finished" in captured.out
        assert "1 of 1 matches verified" in captured.err

        assert main(["replay", "export", "00000000-0000-0000-0000-000000000000"]) == 2
        assert "no match" in capsys.readouterr().err
        assert main(["replay", "audit"]) == 2
        assert "pass --all" in capsys.readouterr().err


def test_show_into_a_closed_pipe_stops_quietly(tmp_path: Path, events: list[Event]) -> None:
    """`ludo replay show FILE | head`: when the reader has gone, the command stops with
    status 141 (as `cat` does) and prints no BrokenPipeError traceback."""
    path = write(tmp_path, "m.json", events)
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader closed before the first line was written
    try:
        done = subprocess.run(
            [sys.executable, "-m", "ludo_cli.main", "replay", "show", str(path)],
            stdout=write_end,
            stderr=subprocess.PIPE,
            cwd=paths.ROOT,
            timeout=120,
            check=False,
        )
    finally:
        os.close(write_end)
    assert done.returncode == 141, done.stderr.decode()
    assert b"Traceback" not in done.stderr and b"BrokenPipe" not in done.stderr, done.stderr
