"""The `ludo` command line itself: bad options are usage errors named by the subcommand's
own parser, an unreachable database is one line saying what to do, not a traceback, and
the offline tools start without the web stack, the database driver or the benches."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from ludo_cli.main import _COMMANDS, main
from tests import paths


class TestUsageErrors:
    @pytest.mark.parametrize(
        ("argv", "message"),
        [
            (["bench", "domain", "--matches", "0"], "--matches: expected a positive integer"),
            (["bench", "domain", "--levels", "foo"], "unknown CPU level 'foo'"),
            (["bench", "domain", "--rules", "{bad"], "--rules: not valid JSON"),
            (["bench", "domain", "--rules", '{"blocks": 2}'], "--rules: blocks:"),
            (["bench", "domain", "--rounds", "0"], "--rounds: expected a positive integer"),
            (["bench", "replay", "--matches", "-1"], "expected a positive integer, got -1"),
            (["bench", "oracle", "--queries", "0"], "--queries: expected a positive integer"),
            (["bench", "service", "--seconds", "0"], "--seconds: expected a positive number"),
            (["bench", "ranking", "--rate", "nan"], "--rate: expected a positive number"),
            (["bench", "store", "--rows", "0"], "--rows: expected a positive integer"),
            (["simulate", "--seats", "easy"], "need 2-4 seats, got 1"),
        ],
    )
    def test_bad_option_values_exit_2_naming_the_option(
        self, argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """A value no run could use is refused before any work, with exit status 2."""
        with pytest.raises(SystemExit) as exit_:
            main(argv)
        assert exit_.value.code == 2
        assert message in capsys.readouterr().err

    @pytest.mark.parametrize(
        ("argv", "usage"),
        [
            (["rules", "moves", "extra"], "usage: ludo rules moves"),
            (["replay", "verify", "--bogus", "x"], "usage: ludo replay verify"),
            (["simulate", "extra"], "usage: ludo simulate"),
        ],
    )
    def test_unknown_arguments_show_the_subcommands_usage(
        self, argv: list[str], usage: str, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """An unrecognised argument is reported with the usage of the command it was given to."""
        with pytest.raises(SystemExit) as exit_:
            main(argv)
        err = capsys.readouterr().err
        assert exit_.value.code == 2
        assert err.startswith(usage) and "unrecognized arguments" in err


class TestDatabaseUnreachable:
    def test_one_line_naming_the_cause_and_the_way_out(
        self, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """No server at DATABASE_URL: exit 1, the driver's reason, what to check; no
        traceback and no password."""
        monkeypatch.setenv("DATABASE_URL", "postgresql://ludo:s3cret@127.0.0.1:1/ludo")
        assert main(["ranking", "hash"]) == 1
        err = capsys.readouterr().err
        assert err.startswith("ludo: cannot reach the database (DATABASE_URL): ")
        assert "unset DATABASE_URL to use the embedded PostgreSQL" in err
        assert "Traceback" not in err and "s3cret" not in err

    def test_db_stop_says_it_only_manages_the_embedded_server(
        self,
        monkeypatch: pytest.MonkeyPatch,
        tmp_path: Path,
        capsys: pytest.CaptureFixture[str],
    ) -> None:
        """With DATABASE_URL set, `ludo db stop` says the URL's server is not its to stop."""
        monkeypatch.setenv("DATABASE_URL", "postgresql://ludo@127.0.0.1:1/ludo")
        monkeypatch.setenv("LUDO_DATA_DIR", str(tmp_path))
        assert main(["db", "stop"]) == 0
        assert "only stops the embedded PostgreSQL" in capsys.readouterr().err


class TestWithoutTheBenchmarks:
    @pytest.fixture(autouse=True)
    def _no_benchmarks(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """An install without the `benchmarks` package, as from the wheel."""
        monkeypatch.setitem(sys.modules, "benchmarks", None)  # None: the import fails
        monkeypatch.delitem(sys.modules, "benchmarks.cmd", raising=False)

    def test_bench_says_where_the_benches_are(self, capsys: pytest.CaptureFixture[str]) -> None:
        """`ludo bench …` without the benches exits 2 saying how a checkout runs them."""
        assert main(["bench", "service", "--matches", "4"]) == 2
        err = capsys.readouterr().err
        assert "the benchmarks are not installed here" in err
        assert "pip install -e '.[test]'" in err and "python3 -m benchmarks" in err

    def test_the_other_commands_still_work(self, capsys: pytest.CaptureFixture[str]) -> None:
        """The rest of `ludo` does not need the benches (`ludo simulate` plays a match)."""
        assert main(["simulate", "--matches", "1", "--seats", "easy,easy", "--jobs", "1"]) == 0
        assert "easy" in capsys.readouterr().out


_REPLAY = str(paths.GOLDEN / "replays" / "v1-bga-3p-cpu.ludo-replay.json")
_TOURNAMENT = str(paths.GOLDEN / "tournaments" / "v1-arena-bga-2p.ludo-tournament.json")
# What the offline tools must not load: they read files and run the rules engine.
_HEAVY = ("litestar", "sqlalchemy", "benchmarks", "services", "psycopg", "alembic", "uvicorn")
# `ludo ARGS` in a process of its own; at its exit, the top-level packages it loaded.
_LOADED = """
import atexit, json, sys
atexit.register(lambda: print(json.dumps(sorted({m.split(".")[0] for m in sys.modules})),
                              file=open(sys.argv[1], "w")))
from ludo_cli.main import main
sys.exit(main(sys.argv[2:]))
"""


class TestOfflineStartUp:
    @pytest.mark.parametrize(
        ("argv", "stdin"),
        [
            (["replay", "verify", _REPLAY], ""),
            (["replay", "analyse", _REPLAY], ""),
            (["replay", "show", _REPLAY], ""),
            (["tournament", "verify", _TOURNAMENT], ""),
            (["rules", "moves"], '{"position": {"players": 2}, "die": 6}\n'),
            (["replay", "analyse", "--help"], ""),
            (["tournament", "verify", "--help"], ""),
            (["rules", "--help"], ""),
            (["--help"], ""),
        ],
        ids=" ".join,
    )
    def test_the_offline_tools_load_neither_the_web_stack_nor_the_database(
        self, argv: list[str], stdin: str, tmp_path: Path
    ) -> None:
        """`ludo replay verify|analyse|show`, `tournament verify` and `rules` (and their
        help) run, and load no module of Litestar, SQLAlchemy, the database driver, the
        services or the benches (what made them start 30x slower than the rules engine)."""
        loaded = tmp_path / "loaded.json"
        done = subprocess.run(
            [sys.executable, "-c", _LOADED, str(loaded), *argv],
            input=stdin,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        packages = set(json.loads(loaded.read_text()))
        assert "domain" in packages or argv[-1] == "--help"
        assert not packages & set(_HEAVY), sorted(packages & set(_HEAVY))

    @pytest.mark.parametrize("command", list(_COMMANDS))
    def test_every_command_has_its_parser(
        self, command: str, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """`ludo COMMAND --help` shows the command's own usage and description (its module
        fills in the parser `ludo` names), and `ludo --help` lists every command."""
        with pytest.raises(SystemExit) as exit_:
            main([command, "--help"])
        assert exit_.value.code == 0
        out = capsys.readouterr().out
        assert out.startswith(f"usage: ludo {command} ")
        assert len(out.splitlines()) > 3
        with pytest.raises(SystemExit):
            main(["--help"])
        listing = capsys.readouterr().out
        assert all(name in listing for name in _COMMANDS)
