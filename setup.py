"""Build hooks: `LUDO_COMPILE=1 pip install .` compiles the rules engine's hot modules with
mypyc (the list is `[tool.ludo] compiled-modules` in pyproject.toml), and an editable install
maps the `benchmarks` package, which a wheel leaves out. Everything else about the
distribution is in pyproject.toml.

Compiled modules play the same events as the interpreted ones (tests/test_compiled.py
checks it) and about 2.3x (easy CPUs) to 3x (normal CPUs) faster (docs/benchmarks.md).
Without the variable nothing is compiled: the default, and the only sane choice for an
editable install, where a compiled module would shadow later edits to its `.py` file.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path

from setuptools import find_packages, setup
from setuptools.command.editable_wheel import editable_wheel

HERE = Path(__file__).parent


def compiled_modules() -> list[str]:
    config = tomllib.loads((HERE / "pyproject.toml").read_text("utf-8"))
    modules: list[str] = config["tool"]["ludo"]["compiled-modules"]
    return modules


ext_modules = []
if os.environ.get("LUDO_COMPILE") == "1":
    from mypyc.build import mypycify

    ext_modules = mypycify(compiled_modules(), opt_level="3")


class EditableWithBenchmarks(editable_wheel):
    """`pip install -e .` also maps `benchmarks/` (`ludo bench`, `python -m benchmarks`
    from any directory); the package list of a wheel (pyproject.toml) leaves it out, so the
    product ships without its benches."""

    def run(self) -> None:
        benches = find_packages(str(HERE), include=["benchmarks", "benchmarks.*"])
        self.distribution.packages = [*(self.distribution.packages or []), *benches]
        super().run()


setup(ext_modules=ext_modules, cmdclass={"editable_wheel": EditableWithBenchmarks})
