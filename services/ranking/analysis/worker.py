"""The analysis consumer's worker process: what runs there, and nothing more.

The consumer (consumer.py) hands finished matches, and the new events of matches being
played, to one process of its own (spawned, at a lower CPU priority). That process imports
this module to unpickle the functions it is given, so it holds only them and what they
need (the domain's analysis): no database driver, no web framework. A worker then starts
in about a fifth of the CPU a service's imports cost, and each start of the ranking
service (a test's, an operator's restart) pays that rather than the whole service again.
"""

from __future__ import annotations

import os
import signal
import time
from collections import OrderedDict
from collections.abc import Sequence
from typing import Final, NamedTuple

from domain import events as ev
from domain.analysis import Analyser, Analysis, encode

__all__ = ["KEPT", "NICE", "Analysed", "analyse_all", "analyse_match", "progress", "ready", "start"]

NICE: Final = 10  # the worker's CPU priority below the services'
# Matches the worker keeps an `Analyser` of (the least recently fed dropped first: such a
# match is analysed whole at its end).
KEPT: Final = 2000


class Analysed(NamedTuple):
    """What the worker gives back for one match: the stored bytes, the evaluator, each
    seat's sums (`SeatAnalysis` fields the tables keep) and the faces it rolled."""

    body: bytes
    evaluator: str
    players: int
    luck_gap: float
    seats: list[tuple[float, float, int, float, int, list[int]]]
    # How it was made (for the log): the events analysed after the end (the rest had been
    # folded while the match was played) and the worker's CPU seconds for it.
    tail: int = 0
    cpu_s: float = 0.0


def analyse_match(events: Sequence[ev.Event]) -> Analysed:
    """The analysis of one finished match, and the figures its rows keep (pure)."""
    analyser = Analyser()
    analyser.feed(events)
    return _analysed(analyser.result(), events)


def _analysed(analysis: Analysis, events: Sequence[ev.Event]) -> Analysed:
    faces = [[0] * 6 for _ in range(analysis.players)]
    for event in events:
        if isinstance(event, ev.DieRolled):
            faces[event.seat][event.value - 1] += 1
    lucks = [s.luck for s in analysis.seats]
    return Analysed(
        body=encode(analysis),
        evaluator=analysis.evaluator,
        players=analysis.players,
        luck_gap=max(lucks) - min(lucks) if lucks else 0.0,
        seats=[
            (s.luck, s.error, s.choices, s.own_error, s.best_choices, faces[s.seat])
            for s in analysis.seats
        ],
    )


# The worker's own: the `Analyser` of each match it has been fed while it is played, by
# stream. Only the worker (one process, one task at a time) touches it.
_ANALYSERS: OrderedDict[str, Analyser] = OrderedDict()


def progress(feeds: list[tuple[str, int, list[ev.Event]]]) -> dict[str, int]:
    """Folds each match's new events (`stream`, the version of the first, the events) into
    its `Analyser`; how many events of each it has folded now (0: start again from 0)."""
    reached: dict[str, int] = {}
    for stream, start, events in feeds:
        analyser = _ANALYSERS.pop(stream, None)
        if analyser is None and start == 0:
            analyser = Analyser()
        if analyser is None or not start <= analyser.fed <= start + len(events):
            reached[stream] = 0  # this worker has not seen the start: from 0 next time
            continue
        analyser.feed(events[analyser.fed - start :])
        _ANALYSERS[stream] = analyser
        reached[stream] = analyser.fed
    while len(_ANALYSERS) > KEPT:
        _ANALYSERS.popitem(last=False)
    return reached


def analyse_all(matches: list[tuple[str, list[ev.Event]]]) -> list[Analysed]:
    """The analysis of each finished match: carried on from its `Analyser` when the worker
    followed it while it was played, else whole."""
    out = []
    for stream, events in matches:
        cpu = time.process_time()
        analyser = _ANALYSERS.pop(stream, None)
        if analyser is None or analyser.fed > len(events):
            analyser = Analyser()
        tail = len(events) - analyser.fed
        analyser.feed(events[analyser.fed :])
        done = _analysed(analyser.result(), events)
        out.append(done._replace(tail=tail, cpu_s=time.process_time() - cpu))
    return out


def ready() -> int:
    """Nothing: the worker has started and imported the analysis (and the network)."""
    return os.getpid()


def start() -> None:
    """The worker runs below the services' CPU priority, and leaves Ctrl-C (SIGINT, sent
    to the whole process group) to its parent, which shuts it down in order."""
    os.nice(NICE)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
