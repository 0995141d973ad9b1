"""The operator's recurring arenas (`LUDO_ARENA_SCHEDULE`, docs/arenas.md "Where arenas come
from"): the schedule's format, its default, and each entry's occurrences.

An occurrence's arena id is derived from the schedule's name and its start (`arena_id_for`,
a uuid5), so every instance that creates it names the same stream: the second append finds
the stream taken and nothing is created twice.
"""

from __future__ import annotations

import datetime as dt
import re
import uuid
from typing import Annotated, Final, Literal

import msgspec

from domain.settings import ARENA_MINUTES, ARENA_RULES, ARENA_SEATS, ARENA_TURN_LIMITS, one_of

__all__ = ["DEFAULT_SCHEDULE", "Schedule", "ScheduleError", "arena_id_for", "occurrences", "parse"]

_NAMESPACE: Final = uuid.UUID("7d0c5a8e-2f57-4d3a-9a53-6f0e5b1c8a29")


class ScheduleError(ValueError):
    """The schedule's JSON is not one this service can run; the message says what to fix."""


class Schedule(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """One recurring arena: every hour at minute `at` ("MM"), or every day at `at`
    ("HH:MM", UTC); `title` by language (the arena's name is the English one, the page
    shows the reader's)."""

    name: Annotated[str, msgspec.Meta(pattern=r"^[a-z0-9-]{1,40}$")]
    every: Literal["hour", "day"]
    at: str
    seats: int
    minutes: int
    rules: str = ARENA_RULES[0]
    turn_limit: int = ARENA_TURN_LIMITS[0]
    title: dict[str, str] = {}

    def start_in(self, day: dt.datetime) -> list[dt.datetime]:
        """This schedule's starts on the UTC day of `day` (24 for hourly, one for daily)."""
        midnight = day.replace(hour=0, minute=0, second=0, microsecond=0)
        if self.every == "hour":
            minute = int(self.at)
            return [midnight + dt.timedelta(hours=h, minutes=minute) for h in range(24)]
        hour, minute = (int(part) for part in self.at.split(":"))
        return [midnight + dt.timedelta(hours=hour, minutes=minute)]

    @property
    def label(self) -> str:
        """The arena's stored name: the English title, else the schedule's name."""
        return self.title.get("en") or self.name


DEFAULT_SCHEDULE: Final = (
    Schedule(
        name="hourly-2",
        every="hour",
        at="00",
        seats=2,
        minutes=20,
        title={"en": "Hourly 2-player arena", "ja": "毎時 2人アリーナ"},
    ),
    Schedule(
        name="daily-4",
        every="day",
        at="11:00",
        seats=4,
        minutes=60,
        title={"en": "Daily 4-player arena", "ja": "毎日 4人アリーナ"},
    ),
)


def parse(raw: str | None) -> tuple[Schedule, ...]:
    """The schedule of `LUDO_ARENA_SCHEDULE` (None: the default; `[]`: none)."""
    if raw is None:
        return DEFAULT_SCHEDULE
    try:
        entries = msgspec.json.decode(raw, type=tuple[Schedule, ...])
    except (msgspec.DecodeError, msgspec.ValidationError) as error:
        raise ScheduleError(f"LUDO_ARENA_SCHEDULE: {error}") from None
    for entry in entries:
        _check(entry)
    if len({e.name for e in entries}) != len(entries):
        raise ScheduleError("LUDO_ARENA_SCHEDULE: two entries share a name")
    return entries


def _check(entry: Schedule) -> None:
    where = f"LUDO_ARENA_SCHEDULE entry {entry.name!r}"
    if entry.seats not in ARENA_SEATS:
        raise ScheduleError(f"{where}: seats is {one_of(ARENA_SEATS)}")
    if entry.minutes not in ARENA_MINUTES:
        raise ScheduleError(f"{where}: minutes is {one_of(ARENA_MINUTES)}")
    if entry.turn_limit not in ARENA_TURN_LIMITS:
        raise ScheduleError(f"{where}: turn_limit is {one_of(ARENA_TURN_LIMITS)}")
    if entry.rules not in ARENA_RULES:
        raise ScheduleError(f"{where}: rules is {one_of(ARENA_RULES)}")
    pattern = r"^[0-5][0-9]$" if entry.every == "hour" else r"^([01][0-9]|2[0-3]):[0-5][0-9]$"
    if not re.match(pattern, entry.at):
        shape = '"MM" (minute of the hour)' if entry.every == "hour" else '"HH:MM" (UTC)'
        raise ScheduleError(f"{where}: at is {shape}")


def occurrences(entry: Schedule, now: dt.datetime) -> list[dt.datetime]:
    """The starts the service keeps created at `now`: the one running now (if any) and the
    next one, so that the next is always listed with its countdown."""
    starts = [
        start
        for day in (now - dt.timedelta(days=1), now, now + dt.timedelta(days=1))
        for start in entry.start_in(day)
    ]
    length = dt.timedelta(minutes=entry.minutes)
    running = [s for s in starts if s <= now < s + length]
    upcoming = [s for s in starts if s > now][:1]
    return running + upcoming


def arena_id_for(entry: Schedule, start: dt.datetime) -> str:
    """The id of `entry`'s arena starting at `start`: the same on every instance."""
    return str(uuid.uuid5(_NAMESPACE, f"{entry.name}@{start.isoformat()}"))
