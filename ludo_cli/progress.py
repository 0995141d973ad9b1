"""A small progress bar for long commands, drawn on stderr.

On a terminal it redraws one line in place; elsewhere (CI logs, pipes) it prints a plain line
at every tenth of the work, so logs stay short but still show the command is alive.
"""

from __future__ import annotations

import sys
import time
from types import TracebackType
from typing import TextIO

__all__ = ["Progress"]


class Progress:
    """`with Progress(total, "label") as bar: ... bar.advance()`"""

    def __init__(self, total: int, label: str, stream: TextIO | None = None) -> None:
        self.total = max(total, 1)
        self.label = label
        self.done = 0
        self.stream = stream if stream is not None else sys.stderr
        self.tty = self.stream.isatty()
        self.started = time.perf_counter()
        self._last_draw = 0.0
        self._next_tenth = 1

    def advance(self, step: int = 1) -> None:
        self.done += step
        now = time.perf_counter()
        if self.tty:
            if now - self._last_draw >= 0.1 or self.done >= self.total:
                self._last_draw = now
                self._draw(now, end="\r")
        elif self.done * 10 >= self._next_tenth * self.total:
            while self.done * 10 >= self._next_tenth * self.total:
                self._next_tenth += 1
            self._draw(now, end="\n")

    def _draw(self, now: float, end: str) -> None:
        elapsed = max(now - self.started, 1e-9)
        rate = self.done / elapsed
        eta = (self.total - self.done) / rate if rate > 0 else 0.0
        width = 30
        filled = int(width * min(self.done, self.total) / self.total)
        bar = "#" * filled + "-" * (width - filled)
        self.stream.write(
            f"{self.label} [{bar}] {self.done}/{self.total}  {rate:,.1f}/s  ETA {eta:,.0f}s{end}"
        )
        self.stream.flush()

    def __enter__(self) -> Progress:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self.tty:
            self.stream.write("\n")
            self.stream.flush()
