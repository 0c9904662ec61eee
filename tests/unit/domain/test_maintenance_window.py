"""Maintenance windows: the grammar, when a window is open, and DST nights (design §13.2).

Dates are of 2026: 5 January is a Monday; in Europe/Berlin the clocks go forward at 02:00 on
Sunday 29 March (to 03:00 summer time, +02:00) and back at 03:00 on Sunday 25 October (to 02:00
winter time, +01:00).
"""

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from edgerollout.domain.events import Notice
from edgerollout.domain.spec.maintenance_window import (
    MaintenanceWindow,
    MaintenanceWindows,
    read_maintenance_window,
)
from edgerollout.domain.vocabulary import (
    INVALID_MAINTENANCE_WINDOW,
    MAINTENANCE_WINDOW_ANNOTATION,
)

from .builders import assert_refused, refused, warning

EXPECTED = (
    "expected windows separated by commas, each days, a time range and an optional time zone, "
    'such as "Mon-Fri 02:00-04:00" or "Sat,Sun 22:00-06:00 Europe/Berlin"; '
    "no pod is deleted until it is fixed"
)
MONDAY = datetime(2026, 1, 5, tzinfo=UTC)


def windows(raw: str) -> MaintenanceWindows:
    read = read_maintenance_window(raw)
    assert isinstance(read, MaintenanceWindows), read
    return read


def at(text: str) -> datetime:
    """An instant written `2026-03-29T01:00Z`."""
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def window(days: set[int], start: str, end: str, zone: str = "UTC") -> MaintenanceWindow:
    def minutes(hh_mm: str) -> int:
        hours, minutes = hh_mm.split(":")
        return int(hours) * 60 + int(minutes)

    return MaintenanceWindow(
        days=frozenset(days), start=minutes(start), end=minutes(end), zone=zone
    )


# --- the grammar ---


def test_no_annotation_means_no_window() -> None:
    assert read_maintenance_window(None) is None


@pytest.mark.parametrize(
    ("raw", "read"),
    [
        ("Mon-Fri 02:00-04:00", [window({0, 1, 2, 3, 4}, "02:00", "04:00")]),
        ("mon-FRI 02:00-04:00", [window({0, 1, 2, 3, 4}, "02:00", "04:00")]),
        ("Mon-Fri 02:00-04:00 UTC", [window({0, 1, 2, 3, 4}, "02:00", "04:00")]),
        ("Sat 01:00-05:00 Europe/Berlin", [window({5}, "01:00", "05:00", "Europe/Berlin")]),
        ("Fri-Mon 22:00-02:00", [window({4, 5, 6, 0}, "22:00", "02:00")]),
        ("Sun-Sun 00:00-24:00", [window({6}, "00:00", "24:00")]),
        ("Sat,Sun 22:00-00:00", [window({5, 6}, "22:00", "24:00")]),
        ("Mon, Wed-Fri 02:00-04:00", [window({0, 2, 3, 4}, "02:00", "04:00")]),
        ("Mon,Mon-Tue 02:00-04:00", [window({0, 1}, "02:00", "04:00")]),
        ("Tue 23:59-00:00", [window({1}, "23:59", "24:00")]),
        ("Wed 00:01-00:00", [window({2}, "00:01", "24:00")]),
        (" Mon 02:00-04:00 ,\tTue  03:00-05:00   America/New_York\n",
         [window({0}, "02:00", "04:00"), window({1}, "03:00", "05:00", "America/New_York")]),
        ("Mon-Fri 02:00-04:00 Europe/Berlin, Sat,Sun 22:00-06:00",
         [window({0, 1, 2, 3, 4}, "02:00", "04:00", "Europe/Berlin"),
          window({5, 6}, "22:00", "06:00")]),
        ("Mon 02:00-04:00 America/Argentina/Buenos_Aires",
         [window({0}, "02:00", "04:00", "America/Argentina/Buenos_Aires")]),
        ("Mon 02:00-04:00 Etc/GMT-14", [window({0}, "02:00", "04:00", "Etc/GMT-14")]),
    ],
)  # fmt: skip
def test_windows_as_written(raw: str, read: list[MaintenanceWindow]) -> None:
    assert read_maintenance_window(raw) == MaintenanceWindows(windows=tuple(read))


def test_a_window_with_the_zone_utc_is_the_window_without_a_zone() -> None:
    assert windows("Fri-Mon 22:00-02:00 UTC") == windows("Fri-Mon 22:00-02:00")


def test_an_invalid_window_is_one_warning_naming_the_value_and_the_form() -> None:
    raw = "Monday-Friday 02:00-04:00"

    assert read_maintenance_window(raw) == warning(
        INVALID_MAINTENANCE_WINDOW,
        (
            'edgerollout.io/maintenance-window is "Monday-Friday 02:00-04:00": '
            '"Monday-Friday" is not a day or a range of days (Mon, Tue, Wed, Thu, Fri, Sat, '
            "Sun, or two of them such as Mon-Fri or Fri-Mon); expected windows separated by "
            "commas, each days, a time range and an optional time zone, such as "
            '"Mon-Fri 02:00-04:00" or "Sat,Sun 22:00-06:00 Europe/Berlin"; no pod is deleted '
            "until it is fixed"
        ),
        raw,
    )


NOT_A_DAY = (
    "is not a day or a range of days (Mon, Tue, Wed, Thu, Fri, Sat, Sun, or two of them such "
    "as Mon-Fri or Fri-Mon)"
)
NOT_A_TIME_RANGE = "is not a time range HH:MM-HH:MM (00:00 to 23:59, and 24:00 as an end)"
NOT_A_ZONE = "is not a time zone of the IANA database, such as Europe/Berlin or UTC"


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        ("", "it names no window (remove the annotation to allow upgrades at any time)"),
        ("  ", "it names no window (remove the annotation to allow upgrades at any time)"),
        ("Monday 02:00-04:00", f'"Monday" {NOT_A_DAY}'),
        ("Mo 02:00-04:00", f'"Mo" {NOT_A_DAY}'),
        ("Mon- 02:00-04:00", f'"Mon-" {NOT_A_DAY}'),
        ("Mon-Wed-Fri 02:00-04:00", f'"Mon-Wed-Fri" {NOT_A_DAY}'),
        ("M\u043en 02:00-04:00", f'"M\u043en" {NOT_A_DAY}'),
        ("02:00-04:00", '"02:00-04:00" has no days before it (every day is Mon-Sun)'),
        ("Mon", '"Mon" has no time range'),
        ("Mon 02:00-04:00, Sat, Sun", '"Sat,Sun" has no time range'),
        ("Mon 02:00-04:00,", "a window between commas is empty"),
        ("Mon 02:00-04:00,,Tue 02:00-04:00", "a window between commas is empty"),
        ("Mon 2:00-4:00", f'"2:00-4:00" {NOT_A_TIME_RANGE}'),
        ("Mon 02:00 - 04:00", f'"02:00" {NOT_A_TIME_RANGE}'),
        ("Mon 24:00-02:00", f'"24:00-02:00" {NOT_A_TIME_RANGE}'),
        ("Mon 02:00-24:01", f'"02:00-24:01" {NOT_A_TIME_RANGE}'),
        ("Mon 02:60-04:00", f'"02:60-04:00" {NOT_A_TIME_RANGE}'),
        ("Mon 02:00-25:00", f'"02:00-25:00" {NOT_A_TIME_RANGE}'),
        ("Mon 02h-04h", f'"02h-04h" {NOT_A_TIME_RANGE}'),
        ("Mon \u0660\u0662:00-04:00", f'"\u0660\u0662:00-04:00" {NOT_A_TIME_RANGE}'),
        ("Mon 02:00-02:00", '"02:00-02:00" is empty (a whole day is 00:00-24:00)'),
        ("Mon 00:00-00:00", '"00:00-00:00" is empty (a whole day is 00:00-24:00)'),
        ("Mon 02:00-04:00 Mars/Olympus", f'"Mars/Olympus" {NOT_A_ZONE}'),
        ("Mon 02:00-04:00 europe/berlin", f'"europe/berlin" {NOT_A_ZONE}'),
        ("Mon 02:00-04:00 utc", f'"utc" {NOT_A_ZONE}'),
        ("Mon 02:00-04:00 Europe", f'"Europe" {NOT_A_ZONE}'),
        ("Mon 02:00-04:00 localtime", f'"localtime" {NOT_A_ZONE}'),
        ("Mon 02:00-04:00 +02:00", f'"+02:00" {NOT_A_ZONE}'),
        ("Mon 02:00-04:00 ../etc/passwd", f'"../etc/passwd" {NOT_A_ZONE}'),
        ("Mon 02:00-04:00 /etc/localtime", f'"/etc/localtime" {NOT_A_ZONE}'),
        ("Mon 02:00-04:00 Europe/Berlin/", f'"Europe/Berlin/" {NOT_A_ZONE}'),
        (f"Mon 02:00-04:00 {'A' * 300}", f'"{"A" * 300}" {NOT_A_ZONE}'),
        ("Mon 02:00-04:00 UTC weekly",
         '"Mon 02:00-04:00 UTC weekly" has more than days, a time range and a time zone'),
    ],
)  # fmt: skip
def test_an_invalid_window_says_what_is_wrong(raw: str, problem: str) -> None:
    assert read_maintenance_window(raw) == refused(
        MAINTENANCE_WINDOW_ANNOTATION, raw, INVALID_MAINTENANCE_WINDOW, f"{problem}; {EXPECTED}"
    )


# --- open, next open, closes at ---


@pytest.mark.parametrize(
    ("raw", "now", "next_open", "closes_at"),
    [
        # Mon 5 January 2026, UTC.
        ("Mon-Fri 02:00-04:00", "2026-01-05T01:59:59Z", "2026-01-05T02:00Z", None),
        ("Mon-Fri 02:00-04:00", "2026-01-05T02:00Z", "2026-01-05T02:00Z", "2026-01-05T04:00Z"),
        ("Mon-Fri 02:00-04:00", "2026-01-05T03:59:59Z", "2026-01-05T03:59:59Z",
         "2026-01-05T04:00Z"),
        ("Mon-Fri 02:00-04:00", "2026-01-05T04:00Z", "2026-01-06T02:00Z", None),
        ("Mon-Fri 02:00-04:00", "2026-01-09T04:00Z", "2026-01-12T02:00Z", None),
        # A window that crosses midnight belongs to the day it opens on.
        ("Fri 22:00-02:00", "2026-01-09T21:59Z", "2026-01-09T22:00Z", None),
        ("Fri 22:00-02:00", "2026-01-10T01:00Z", "2026-01-10T01:00Z", "2026-01-10T02:00Z"),
        ("Fri 22:00-02:00", "2026-01-10T02:00Z", "2026-01-16T22:00Z", None),
        ("Sat 22:00-02:00", "2026-01-09T23:00Z", "2026-01-10T22:00Z", None),
        ("Sun 22:00-02:00", "2026-01-05T01:00Z", "2026-01-05T01:00Z", "2026-01-05T02:00Z"),
        ("Fri-Mon 22:00-02:00", "2026-01-06T01:00Z", "2026-01-06T01:00Z", "2026-01-06T02:00Z"),
        ("Fri-Mon 22:00-02:00", "2026-01-06T02:00Z", "2026-01-09T22:00Z", None),
        # 24:00 ends at the next midnight; whole days that touch make one open period.
        ("Mon 12:00-24:00", "2026-01-05T23:59:59Z", "2026-01-05T23:59:59Z",
         "2026-01-06T00:00Z"),
        ("Mon 12:00-24:00", "2026-01-06T00:00Z", "2026-01-12T12:00Z", None),
        ("Sat,Sun 00:00-24:00", "2026-01-10T08:00Z", "2026-01-10T08:00Z", "2026-01-12T00:00Z"),
        ("Mon 22:00-24:00, Tue 00:00-02:00", "2026-01-05T23:00Z", "2026-01-05T23:00Z",
         "2026-01-06T02:00Z"),
        ("Mon 01:00-03:00, Mon 02:00-04:00", "2026-01-05T01:30Z", "2026-01-05T01:30Z",
         "2026-01-05T04:00Z"),
        # Windows in different zones open together: Tokyo is UTC+9.
        ("Mon 09:00-10:00 Asia/Tokyo, Mon 00:30-02:00", "2026-01-05T00:15Z",
         "2026-01-05T00:15Z", "2026-01-05T02:00Z"),
        ("Mon 09:00-10:00 Asia/Tokyo", "2026-01-04T23:00Z", "2026-01-05T00:00Z", None),
        # Berlin is UTC+1 in winter, UTC+2 in summer.
        ("Mon-Fri 02:00-04:00 Europe/Berlin", "2026-01-05T00:00Z", "2026-01-05T01:00Z", None),
        ("Mon-Fri 02:00-04:00 Europe/Berlin", "2026-01-05T02:30Z", "2026-01-05T02:30Z",
         "2026-01-05T03:00Z"),
        ("Mon-Fri 02:00-04:00 Europe/Berlin", "2026-07-06T00:00Z", "2026-07-06T00:00Z",
         "2026-07-06T02:00Z"),
    ],
)  # fmt: skip
def test_when_windows_open_and_close(
    raw: str, now: str, next_open: str, closes_at: str | None
) -> None:
    read = windows(raw)
    moment = at(now)

    assert read.is_open(moment) == (closes_at is not None)
    assert read.next_open(moment) == at(next_open)
    assert read.closes_at(moment) == (None if closes_at is None else at(closes_at))


def test_windows_every_day_all_day_never_close() -> None:
    read = windows("Mon-Sun 00:00-24:00 Europe/Berlin")

    assert (read.is_open(MONDAY), read.next_open(MONDAY), read.closes_at(MONDAY)) == (
        True,
        MONDAY,
        None,
    )


def test_an_open_period_of_many_months_closes_when_the_zones_drift_apart() -> None:
    # In winter Berlin's 00:00-12:00 is 23:00-11:00 UTC and meets UTC's 11:00-24:00; on the
    # first day of summer time it ends at 10:00 UTC, an hour before the other opens.
    read = windows("Mon-Sun 00:00-12:00 Europe/Berlin, Mon-Sun 11:00-24:00")

    assert read.closes_at(MONDAY) == at("2026-03-29T10:00Z")
    assert read.next_open(at("2026-03-29T10:00Z")) == at("2026-03-29T11:00Z")


def test_a_naive_now_is_read_as_utc() -> None:
    read = windows("Mon 02:00-04:00")
    naive = datetime(2026, 1, 5, 3)

    assert read.is_open(naive)
    assert read.next_open(naive) == datetime(2026, 1, 5, 3, tzinfo=UTC)
    assert read.closes_at(naive) == datetime(2026, 1, 5, 4, tzinfo=UTC)


def test_any_zone_of_now_gives_the_same_instants() -> None:
    read = windows("Mon 02:00-04:00 Europe/Berlin")
    new_york = at("2026-01-05T01:30Z").astimezone(ZoneInfo("America/New_York"))

    assert read.next_open(new_york) == at("2026-01-05T01:30Z")
    assert read.next_open(new_york).tzinfo is UTC
    assert read.closes_at(new_york) == at("2026-01-05T03:00Z")


# --- DST nights in Europe/Berlin ---


@pytest.mark.parametrize(
    ("raw", "opens", "closes"),
    [
        # Spring forward, Sun 29 March: 02:00-03:00 does not exist and reads as 03:00-04:00.
        ("Sun 02:00-04:00", "2026-03-29T01:00Z", "2026-03-29T02:00Z"),  # one hour
        ("Sun 01:00-04:00", "2026-03-29T00:00Z", "2026-03-29T02:00Z"),  # two hours
        ("Sun 02:15-02:45", "2026-03-29T01:15Z", "2026-03-29T01:45Z"),  # moved to 03:15-03:45
        ("Sun 01:30-02:30", "2026-03-29T00:30Z", "2026-03-29T01:30Z"),
        ("Sat 22:00-02:00", "2026-03-28T21:00Z", "2026-03-29T01:00Z"),  # four hours
        ("Sun 03:00-05:00", "2026-03-29T01:00Z", "2026-03-29T03:00Z"),
        # Saturday's window now closes at 03:30 summer time, after Sunday's opens at 03:00.
        ("Sat,Sun 03:00-02:30", "2026-03-28T02:00Z", "2026-03-30T00:30Z"),
        # Fall back, Sun 25 October: 02:00-03:00 happens twice; a time in it is the first.
        ("Sun 02:00-04:00", "2026-10-25T00:00Z", "2026-10-25T03:00Z"),  # three hours
        ("Sun 02:15-02:45", "2026-10-25T00:15Z", "2026-10-25T00:45Z"),  # once, in summer time
        ("Sun 01:00-02:30", "2026-10-24T23:00Z", "2026-10-25T00:30Z"),
        ("Sun 02:30-03:00", "2026-10-25T00:30Z", "2026-10-25T02:00Z"),  # 1 h 30 min
        ("Sat 22:00-03:00", "2026-10-24T20:00Z", "2026-10-25T02:00Z"),  # six hours
    ],
)
def test_a_window_on_a_dst_night_reads_its_times_as_icalendar_does(
    raw: str, opens: str, closes: str
) -> None:
    read = windows(f"{raw} Europe/Berlin")
    saturday_noon = at(opens) - timedelta(hours=12)

    assert read.next_open(saturday_noon) == at(opens)
    assert read.closes_at(at(opens)) == at(closes)
    assert not read.is_open(at(opens) - timedelta(microseconds=1))
    assert read.is_open(at(closes) - timedelta(microseconds=1))
    assert not read.is_open(at(closes))


def test_a_repeated_hour_does_not_open_a_window_twice() -> None:
    read = windows("Sun 02:15-02:45 Europe/Berlin")

    # 01:20 UTC is 02:20 winter time, the second time the clocks read 02:20 that night.
    assert not read.is_open(at("2026-10-25T01:20Z"))
    assert read.next_open(at("2026-10-25T00:45Z")) == at("2026-11-01T01:15Z")


def test_a_window_that_would_close_before_it_opens_skips_the_spring_night() -> None:
    # 02:30 reads as 03:30 summer time (01:30 UTC), 03:00 is 01:00 UTC: no window that night.
    read = windows("Sun 02:30-03:00 Europe/Berlin")

    assert read.next_open(at("2026-03-28T12:00Z")) == at("2026-04-05T00:30Z")
    assert not any(
        read.is_open(at("2026-03-29T00:00Z") + timedelta(minutes=minute))
        for minute in range(4 * 60)
    )


# --- properties ---

ZONES = [None, "UTC", "Europe/Berlin", "America/New_York", "America/Santiago",
         "Australia/Lord_Howe", "Pacific/Chatham", "Asia/Kolkata", "Asia/Tokyo"]  # fmt: skip
# Zones without DST in 2020-2035, and their offset in minutes: local time is UTC shifted.
FIXED = {"UTC": 0, "Asia/Kolkata": 5 * 60 + 30, "Asia/Tokyo": 9 * 60}
DAY_NAMES = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]
# Near DST changes of the zones above, where mistakes would hide.
DST_NIGHTS = [at(text) for text in ["2026-03-29T01:00Z", "2026-10-25T01:00Z", "2026-03-08T07:00Z",
              "2026-11-01T06:00Z", "2026-04-05T03:00Z", "2026-09-06T04:00Z", "2026-04-04T15:00Z",
              "2026-10-03T16:00Z", "2026-04-05T02:45Z", "2026-09-27T02:45Z"]]  # fmt: skip


def hh_mm(minutes: int) -> str:
    return f"{minutes // 60:02d}:{minutes % 60:02d}"


@st.composite
def specs(draw: st.DrawFn, zones: Sequence[str | None] = ZONES) -> tuple[str, MaintenanceWindow]:
    """A window written in a random spelling (in one of `zones`), and the window it means."""
    if draw(st.booleans()):
        first, last = draw(st.integers(0, 6)), draw(st.integers(0, 6))
        days = {(first + step) % 7 for step in range((last - first) % 7 + 1)}
        written = f"{DAY_NAMES[first]}-{DAY_NAMES[last]}"
    else:
        listed = draw(st.lists(st.integers(0, 6), min_size=1, max_size=4))
        days = set(listed)
        written = ",".join(DAY_NAMES[day] for day in listed)
    written = "".join(draw(st.sampled_from([letter.lower(), letter.upper()])) for letter in written)
    start = draw(st.integers(0, 24 * 60 - 1))
    end = draw(st.integers(0, 24 * 60).filter(lambda end: end != start))
    zone = draw(st.sampled_from(zones))
    text = f"{written} {hh_mm(start)}-{hh_mm(end)}" + ("" if zone is None else f" {zone}")
    meant = MaintenanceWindow(
        days=frozenset(days), start=start, end=end or 24 * 60, zone=zone or "UTC"
    )
    return text, meant


spec_lists = st.lists(specs(), min_size=1, max_size=3)
MICROSECOND = timedelta(microseconds=1)


@st.composite
def instants(draw: st.DrawFn) -> datetime:
    if draw(st.booleans()):
        night = draw(st.sampled_from(DST_NIGHTS))
        return night + timedelta(seconds=draw(st.integers(-2 * 86400, 2 * 86400)))
    return draw(st.datetimes(datetime(2020, 1, 1), datetime(2035, 12, 31), timezones=st.just(UTC)))


def read_specs(drawn: list[tuple[str, MaintenanceWindow]]) -> MaintenanceWindows:
    return windows(", ".join(text for text, _ in drawn))


@settings(max_examples=300, deadline=None)
@given(spec_lists)
def test_every_spelling_reads_as_the_windows_it_means(
    drawn: list[tuple[str, MaintenanceWindow]],
) -> None:
    assert read_specs(drawn) == MaintenanceWindows(windows=tuple(meant for _, meant in drawn))


read_windows = spec_lists.map(read_specs)
fraction_lists = st.lists(st.floats(0, 1, exclude_max=True), max_size=8)


def moments_before(until: datetime, now: datetime, fractions: list[float]) -> list[datetime]:
    """Instants from `now` to just before `until`: at these `fractions` of the way, and the last
    microsecond."""
    return [*(now + (until - now) * fraction for fraction in fractions), until - MICROSECOND]


@settings(max_examples=300, deadline=None)
@given(read_windows, instants(), fraction_lists)
def test_next_open_is_the_first_open_instant_from_now(
    read: MaintenanceWindows, now: datetime, fractions: list[float]
) -> None:
    opens = read.next_open(now)

    assert opens >= now
    assert read.is_open(opens)
    assert (opens == now) == read.is_open(now)
    between = moments_before(opens, now, fractions)
    assert not any(read.is_open(moment) for moment in between if now <= moment < opens)


@settings(max_examples=300, deadline=None)
@given(read_windows, instants(), fraction_lists)
def test_closes_at_ends_the_open_period_around_now(
    read: MaintenanceWindows, now: datetime, fractions: list[float]
) -> None:
    closes = read.closes_at(now)

    if not read.is_open(now):
        assert closes is None
        return
    if closes is None:  # open for more than a year
        assert all(read.is_open(now + timedelta(days=day)) for day in range(0, 366, 7))
        return
    assert closes > now
    assert not read.is_open(closes)
    inside = moments_before(closes, now, fractions)
    assert all(read.is_open(moment) for moment in inside if now <= moment < closes)


@settings(max_examples=300, deadline=None)
@given(spec_lists, instants())
def test_without_dst_a_window_is_open_exactly_on_its_days_and_hours(
    drawn: list[tuple[str, MaintenanceWindow]], now: datetime
) -> None:
    fixed = [(text, meant) for text, meant in drawn if meant.zone in FIXED]
    if not fixed:
        return

    def open_by_the_clock(meant: MaintenanceWindow) -> bool:
        local = now + timedelta(minutes=FIXED[meant.zone])
        seconds = local.hour * 3600 + local.minute * 60 + local.second + local.microsecond / 1e6
        today, yesterday = local.weekday(), (local.weekday() - 1) % 7
        start, end = meant.start * 60, meant.end * 60
        if end > start:
            return today in meant.days and start <= seconds < end
        return (today in meant.days and seconds >= start) or (
            yesterday in meant.days and seconds < end
        )

    assert read_specs(fixed).is_open(now) == any(open_by_the_clock(meant) for _, meant in fixed)


@settings(max_examples=200, deadline=None)
@given(st.lists(specs(zones=[None, "UTC"]), min_size=1, max_size=3))
def test_a_window_with_the_zone_utc_behaves_as_the_window_without_one(
    drawn: list[tuple[str, MaintenanceWindow]],
) -> None:
    bare = ", ".join(text.removesuffix(" UTC") for text, _ in drawn)
    with_utc = ", ".join(text if text.endswith(" UTC") else f"{text} UTC" for text, _ in drawn)

    assert windows(bare) == windows(with_utc)


@settings(max_examples=500, deadline=None)
@given(
    st.one_of(
        st.text(),
        st.from_regex(
            r"[MonTueSat, -]{0,8} [0-9:]{0,6}-[0-9:]{0,6}( [A-Za-z/_]{0,14})?", fullmatch=True
        ),
    )
)
def test_any_value_is_windows_or_one_warning_naming_it(raw: str) -> None:
    read = read_maintenance_window(raw)

    if isinstance(read, Notice):
        assert_refused(
            read, MAINTENANCE_WINDOW_ANNOTATION, raw, INVALID_MAINTENANCE_WINDOW, EXPECTED
        )
    else:
        assert isinstance(read, MaintenanceWindows)
        assert len(read.windows) == sum(1 for piece in raw.split(",") if len(piece.split()) > 1)
