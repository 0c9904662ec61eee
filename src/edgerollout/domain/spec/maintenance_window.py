"""When the controller may start an upgrade: `edgerollout.io/maintenance-window` (design §13.2).

Edge sites take their downtime at night or at weekends. With the annotation set, the controller
starts AdvancedRollingUpdate deletions and OTA-deadline upgrades only while a window is open; an
upgrade a node asks for through its agent is always allowed (the node decides). Unset, the
controller may start one at any time.

    edgerollout.io/maintenance-window: "Mon-Fri 02:00-04:00, Sat,Sun 22:00-06:00 Europe/Berlin"

The grammar, precisely:

- The value is one or more **windows** separated by commas. A window is **days**, a **time
  range** and an optional **time zone**, separated by whitespace. Whitespace around commas and
  around the whole value is ignored.
- **Days** are `Mon`, `Tue`, `Wed`, `Thu`, `Fri`, `Sat`, `Sun` in any letter case, a range of two
  (`Mon-Fri`; `Fri-Mon` wraps the week: Fri, Sat, Sun, Mon; `Mon-Mon` is Monday), or a list of
  days and ranges: a day or range followed by a comma and no time range belongs to the window
  that follows (`Sat,Sun 22:00-06:00`, `Mon, Wed-Fri 02:00-04:00`). Every day is `Mon-Sun`; a time
  range without days is refused rather than read as "every day". Full day names are not accepted.
- A **time range** is `HH:MM-HH:MM`, two ASCII digits each, from `00:00` to `23:59`; the end may
  also be `24:00`. An end at or before the start crosses midnight: `Fri 22:00-02:00` opens on
  Friday at 22:00 and closes on Saturday at 02:00 — a window belongs to the day it opens on.
  `22:00-00:00` is `22:00-24:00`. An empty range (`02:00-02:00`) is refused; a whole day is
  `00:00-24:00`.
- A **time zone** is an IANA name as the zone database spells it (`Europe/Berlin`, `UTC`,
  `America/Argentina/Buenos_Aires`; case-sensitive), read by `zoneinfo` from the system's
  database or, where the system has none (slim images), from the `tzdata` package. Without one,
  a window is in UTC, and `UTC` written out means the same window. Days and times are those of
  the window's zone; each window has its own.
- Windows may overlap or touch; they open together: an open period lasts until no window is
  open. A window opens at its start (included) and closes at its end (excluded).

Daylight saving time. A window's start and end are wall-clock times in its zone, turned into
instants as iCalendar (RFC 5545) and Python's `zoneinfo` do: a time the clocks skip (spring
forward) is read with the offset before the change — 02:30 in Berlin on the last Sunday of March
is 03:30 summer time —, and a time that occurs twice (fall back) means its first occurrence. So
on such a night `Sun 02:00-04:00 Europe/Berlin` lasts one hour in March (03:00 to 04:00 summer
time) and three in October (02:00 summer time to 04:00 winter time); a window within the skipped
hour (`02:15-02:45`) moves with it, to 03:15-03:45; and one that would then close before it
opens (a start in the skipped hour, an end less than an hour later: `02:30-03:00`) does not open
that night. A window never opens twice in one night for a repeated hour.

A value that cannot be read is one Warning `InvalidMaintenanceWindow` naming the value, the first
problem found and the accepted form. It fails closed, as every unreadable setting does (design
§12.5): the window it meant could be narrower than any reading, so no pod is deleted until it is
fixed.

The domain reads no clock: `now` is passed in, and every instant returned is an aware UTC
datetime (a naive `now` is read as UTC). Zone rules are static data that `zoneinfo` loads once
and caches.
"""

import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta, tzinfo
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from edgerollout.domain.events import EventType, Notice
from edgerollout.domain.timestamps import to_utc
from edgerollout.domain.vocabulary import (
    INVALID_MAINTENANCE_WINDOW,
    MAINTENANCE_WINDOW_ANNOTATION,
)

_DAYS = {
    name: number for number, name in enumerate(("mon", "tue", "wed", "thu", "fri", "sat", "sun"))
}
_TIME_RANGE = re.compile(r"([0-9]{2}):([0-9]{2})-([0-9]{2}):([0-9]{2})")
# IANA names: parts of letters, digits, "_", "-" and "+", each starting with a capital letter
# (which also keeps out the database's other files and a host's `localtime`).
_ZONE = re.compile(r"[A-Z][A-Za-z0-9_+-]*(?:/[A-Z][A-Za-z0-9_+-]*)*")
_MINUTES_A_DAY = 24 * 60
_DEFAULT_ZONE = "UTC"
# Every window occurs on its days every week; a DST change empties at most one occurrence of a
# day in several weeks. Five weeks from two days back always reach the next occurrence.
_SEARCH_DAYS = 2 + 5 * 7
# An open period still going after a year is taken for one that never ends (windows every day,
# all day); `closes_at` then answers None.
_OPEN_FOR_GOOD = timedelta(days=366)
_EXPECTED = (
    "expected windows separated by commas, each days, a time range and an optional time zone, "
    'such as "Mon-Fri 02:00-04:00" or "Sat,Sun 22:00-06:00 Europe/Berlin"'
)


@dataclass(frozen=True, slots=True, kw_only=True)
class MaintenanceWindow:
    """One window: on each of `days` (0 for Monday to 6 for Sunday, in `zone`) it opens at
    `start` and closes at `end`, in minutes after local midnight; `end` at or before `start`
    closes the next day. `end` is 1 to 1440 (`24:00`), `start` 0 to 1439."""

    days: frozenset[int]
    start: int
    end: int
    zone: str = _DEFAULT_ZONE

    def occurrence(self, day: date) -> tuple[datetime, datetime] | None:
        """The instants (UTC) the window opens and closes when it opens on local `day`; None when
        it does not open that day (not one of its days, or emptied by a DST change)."""
        if day.weekday() not in self.days:
            return None
        end = self.end if self.end > self.start else self.end + _MINUTES_A_DAY
        opens = self._instant(day, self.start)
        closes = self._instant(day, end)
        return (opens, closes) if opens < closes else None

    def first_closing_after(self, moment: datetime) -> tuple[datetime, datetime] | None:
        """The first occurrence that closes after `moment` (it may have opened before)."""
        today = moment.astimezone(self.zone_rules).date()
        for offset in range(-2, _SEARCH_DAYS - 2):
            found = self.occurrence(today + timedelta(days=offset))
            if found is not None and found[1] > moment:
                return found
        return None

    @property
    def zone_rules(self) -> tzinfo:
        """The zone's rules (zoneinfo caches them; `UTC` needs no zone database)."""
        return UTC if self.zone == _DEFAULT_ZONE else ZoneInfo(self.zone)

    def _instant(self, day: date, minutes: int) -> datetime:
        # Wall-clock arithmetic, then fold=0: RFC 5545's reading of skipped and repeated times.
        local = datetime.combine(day, time(), tzinfo=self.zone_rules) + timedelta(minutes=minutes)
        return local.astimezone(UTC)


@dataclass(frozen=True, slots=True, kw_only=True)
class MaintenanceWindows:
    """The windows of `edgerollout.io/maintenance-window`, as read (see the module docstring)."""

    windows: tuple[MaintenanceWindow, ...]

    def is_open(self, now: datetime) -> bool:
        """Whether a window is open at `now`."""
        moment = to_utc(now)
        return any(opens <= moment for opens, _ in self._current(moment))

    def next_open(self, now: datetime) -> datetime:
        """The first instant at or after `now` when a window is open: `now` itself while one is.

        What status and `plan` tell as "the next window opens at ..."."""
        moment = to_utc(now)
        openings = [opens for opens, _ in self._current(moment)]
        if not openings:
            # Every window opens within _SEARCH_DAYS (see there): this cannot be reached.
            raise AssertionError(f"no maintenance window opens after {moment}: {self}")
        return max(min(openings), moment)

    def closes_at(self, now: datetime) -> datetime | None:
        """The instant the open period holding `now` ends: when no window is open any more,
        overlapping and touching windows taken together.

        None when no window is open at `now`, and when the period does not end within a year
        (windows that cover every day, all day)."""
        moment = to_utc(now)
        if not self.is_open(moment):
            return None
        end = moment
        extended = True
        while extended:
            if end - moment > _OPEN_FOR_GOOD:
                return None
            extended = False
            for opens, closes in self._current(end):
                if opens <= end < closes:
                    end, extended = closes, True
        return end

    def _current(self, moment: datetime) -> Iterator[tuple[datetime, datetime]]:
        """Each window's first occurrence that closes after `moment`."""
        for window in self.windows:
            found = window.first_closing_after(moment)
            if found is not None:
                yield found


def read_maintenance_window(raw: str | None) -> MaintenanceWindows | Notice | None:
    """The windows `raw` describes (None: the annotation is unset, no window applies); a value
    that cannot be read is a Warning naming the first problem found."""
    return read_windows(
        raw,
        annotation=MAINTENANCE_WINDOW_ANNOTATION,
        reason=INVALID_MAINTENANCE_WINDOW,
        unset="allow upgrades at any time",
    )


def read_windows(
    raw: str | None, *, annotation: str, reason: str, unset: str
) -> MaintenanceWindows | Notice | None:
    """The windows `raw`, the value of `annotation`, describes in this module's grammar (None:
    unset); a value that cannot be read is a Warning `reason` naming the first problem found.
    `unset` says what removing the annotation does, for a value that names no window."""
    if raw is None:
        return None
    read = _read_windows(raw, unset=unset)
    if isinstance(read, MaintenanceWindows):
        return read
    return Notice(
        type=EventType.WARNING,
        reason=reason,
        message=(
            f'{annotation} is "{raw}": {read}; {_EXPECTED}; no pod is deleted until it is fixed'
        ),
        subject=raw,
    )


def _read_windows(raw: str, *, unset: str) -> MaintenanceWindows | str:
    """The windows, or what is wrong with them."""
    if not raw.strip():
        return f"it names no window (remove the annotation to {unset})"
    windows: list[MaintenanceWindow] = []
    listed: set[int] = set()  # days written before a comma, for the window that follows
    listed_text: list[str] = []
    for piece in raw.split(","):
        words = piece.split()
        if not words:
            return "a window between commas is empty"
        days = _read_days(words[0])
        if isinstance(days, str):
            return days
        if len(words) == 1:
            listed |= days
            listed_text.append(words[0])
            continue
        window = _read_window(words, days | listed)
        if isinstance(window, str):
            return window
        windows.append(window)
        listed, listed_text = set(), []
    if listed_text:
        return f'"{",".join(listed_text)}" has no time range'
    return MaintenanceWindows(windows=tuple(windows))


def _read_window(words: list[str], days: set[int]) -> MaintenanceWindow | str:
    times = _read_time_range(words[1])
    if isinstance(times, str):
        return times
    zone = words[2] if len(words) > 2 else _DEFAULT_ZONE
    problem = _zone_problem(zone)
    if problem is not None:
        return problem
    if len(words) > 3:
        return f'"{" ".join(words)}" has more than days, a time range and a time zone'
    start, end = times
    return MaintenanceWindow(days=frozenset(days), start=start, end=end, zone=zone)


def _read_days(word: str) -> set[int] | str:
    if _TIME_RANGE.fullmatch(word):
        return f'"{word}" has no days before it (every day is Mon-Sun)'
    first, dash, last = word.partition("-")
    start, stop = _DAYS.get(first.lower()), _DAYS.get(last.lower() if dash else first.lower())
    if start is None or stop is None:
        return (
            f'"{word}" is not a day or a range of days (Mon, Tue, Wed, Thu, Fri, Sat, Sun, '
            "or two of them such as Mon-Fri or Fri-Mon)"
        )
    return {(start + step) % 7 for step in range((stop - start) % 7 + 1)}


def _read_time_range(word: str) -> tuple[int, int] | str:
    form = _TIME_RANGE.fullmatch(word)
    if form is not None:
        start_hour, start_minute, end_hour, end_minute = (int(part) for part in form.groups())
        start = start_hour * 60 + start_minute
        end = end_hour * 60 + end_minute
        if start_hour < 24 and start_minute < 60 and end_minute < 60 and end <= _MINUTES_A_DAY:
            if end == start:
                return f'"{word}" is empty (a whole day is 00:00-24:00)'
            return start, (end or _MINUTES_A_DAY)
    return f'"{word}" is not a time range HH:MM-HH:MM (00:00 to 23:59, and 24:00 as an end)'


def _zone_problem(name: str) -> str | None:
    if name == _DEFAULT_ZONE:
        return None
    if _ZONE.fullmatch(name):
        try:
            ZoneInfo(name)
        # Not in the database, a file of it that is no zone, a folder, a name too long.
        except (ZoneInfoNotFoundError, ValueError, OSError):
            pass
        else:
            return None
    return f'"{name}" is not a time zone of the IANA database, such as Europe/Berlin or UTC'
