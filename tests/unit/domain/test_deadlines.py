"""The OTA deadline and the progress deadline, read from their annotations (design §13.1, §13.3)."""

from datetime import timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from edgerollout.domain.events import Notice
from edgerollout.domain.spec.deadlines import read_ota_deadline, read_progress_deadline
from edgerollout.domain.vocabulary import (
    INVALID_OTA_DEADLINE,
    INVALID_PROGRESS_DEADLINE,
    OTA_DEADLINE_ANNOTATION,
    PROGRESS_DEADLINE_ANNOTATION,
)

from .builders import assert_refused, refused

OTA_EXPECTED = (
    'expected a Go duration longer than zero, such as "72h", "1h30m" or "90s" '
    "(units h, m, s, ms, us, ns); OTA upgrades stay with the nodes until it is fixed"
)
PROGRESS_EXPECTED = (
    'expected a whole number of seconds from 1 to 2147483647, such as "600" (the default); '
    "no node is upgraded until it is fixed"
)


def progress_refused(raw: str) -> Notice:
    return refused(PROGRESS_DEADLINE_ANNOTATION, raw, INVALID_PROGRESS_DEADLINE, PROGRESS_EXPECTED)


# --- edgerollout.io/ota-deadline ---


def test_no_ota_deadline_annotation_means_no_deadline() -> None:
    assert read_ota_deadline(None) is None


@pytest.mark.parametrize(
    ("raw", "deadline"),
    [
        ("72h", timedelta(hours=72)),
        ("1h30m", timedelta(minutes=90)),
        ("90s", timedelta(seconds=90)),
        ("2h45m0.5s", timedelta(hours=2, minutes=45, seconds=0.5)),
        ("+10m", timedelta(minutes=10)),
        ("1.5h", timedelta(minutes=90)),
        ("30m2h", timedelta(minutes=150)),
        (" 72h\n", timedelta(hours=72)),
        ("1500ms", timedelta(milliseconds=1500)),
        ("1\u00b5s", timedelta(microseconds=1)),
        ("1ns", timedelta(microseconds=1)),
        ("1001ns", timedelta(microseconds=2)),
        ("2562047h47m16.854775807s", timedelta(microseconds=9223372036854776)),
    ],
)
def test_an_ota_deadline_is_a_go_duration_rounded_up_to_the_microsecond(
    raw: str, deadline: timedelta
) -> None:
    assert read_ota_deadline(raw) == deadline


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        ("3d", '"d" is not a unit'),
        ("1h 30m", '"h " is not a unit'),
        ("72H", '"H" is not a unit'),
        ("72", "a number has no unit"),
        ("", "it is not a duration"),
        ("h", "it is not a duration"),
        ("1e3s", '"e" is not a unit'),
        ("2562048h", "it is longer than Go's longest duration, 2562047h47m16.854775807s"),
        ("0", "it is zero"),
        ("0s", "it is zero"),
        ("-0", "it is zero"),
        ("0.5ns", "it is zero"),
        ("-1h", "it is negative"),
        ("-0.5s", "it is negative"),
    ],
)
def test_an_invalid_ota_deadline_is_one_warning_naming_the_value(raw: str, problem: str) -> None:
    assert read_ota_deadline(raw) == refused(
        OTA_DEADLINE_ANNOTATION, raw, INVALID_OTA_DEADLINE, f"{problem}; {OTA_EXPECTED}"
    )


# --- edgerollout.io/progress-deadline-seconds ---


@pytest.mark.parametrize(
    ("raw", "seconds"),
    [(None, 600), ("600", 600), ("1", 1), (" 30 ", 30), ("007", 7), ("3600", 3600),
     ("2147483647", 2147483647), ("0002147483647", 2147483647)],
)  # fmt: skip
def test_a_progress_deadline_is_whole_seconds_and_600_when_unset(
    raw: str | None, seconds: int
) -> None:
    assert read_progress_deadline(raw) == seconds


@pytest.mark.parametrize(
    "raw",
    ["0", "000", "-1", "+600", "600s", "10m", "1.5", "1e3", "", " ", "abc", "\u0666\u0660\u0660",
     "2147483648", "9" * 40, "6 00"],
)  # fmt: skip
def test_an_invalid_progress_deadline_is_one_warning_naming_the_value(raw: str) -> None:
    assert read_progress_deadline(raw) == progress_refused(raw)


# --- whatever is written ---


@settings(max_examples=500, deadline=None)
@given(st.one_of(st.text(), st.from_regex(r"\s?[-+]?[0-9.]{0,4}[a-z]{0,2}\s?", fullmatch=True)))
def test_any_ota_deadline_is_a_positive_duration_or_its_warning(raw: str) -> None:
    result = read_ota_deadline(raw)

    if isinstance(result, timedelta):
        assert result > timedelta(0)
    else:
        assert_refused(result, OTA_DEADLINE_ANNOTATION, raw, INVALID_OTA_DEADLINE, OTA_EXPECTED)


@settings(max_examples=500, deadline=None)
@given(st.one_of(st.text(), st.from_regex(r"\s?[-+]?[0-9]{0,12}\s?", fullmatch=True)))
def test_any_progress_deadline_is_seconds_it_spells_or_its_warning(raw: str) -> None:
    result = read_progress_deadline(raw)

    written = raw.strip()
    spelled = written.isascii() and written.isdigit() and 0 < int(written) < 2**31
    if spelled:
        assert result == int(written)
    else:
        assert result == progress_refused(raw)
