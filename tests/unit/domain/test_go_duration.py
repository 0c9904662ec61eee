"""Go durations read exactly as Go's `time.ParseDuration` reads them.

Every row of the two tables below was printed by Go 1.26 (`time.ParseDuration(s)`, then `int64(d)`
or `err.Error()`), from a throwaway program fed these inputs; the parser must give the same
nanoseconds, or refuse with Go's message byte for byte.
"""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from edgerollout.domain.spec.go_duration import (
    LONGEST,
    DurationProblem,
    GoDurationError,
    parse_go_duration,
)

from .builders import returned_or_raised

GO_ACCEPTS = [
    ("72h", 259200000000000),
    ("1h30m", 5400000000000),
    ("90s", 90000000000),
    ("2h45m0.5s", 9900500000000),
    ("0", 0),
    ("+0", 0),
    ("-0", 0),
    ("0s", 0),
    ("-0s", 0),
    ("00h", 0),
    ("01h", 3600000000000),
    ("0.0s", 0),
    ("1.5h", 5400000000000),
    (".5h", 1800000000000),
    ("5.h", 18000000000000),
    ("1.s", 1000000000),
    ("+.5s", 500000000),
    ("1h1h", 7200000000000),
    ("1m1h", 3660000000000),
    ("1ns", 1),
    ("1us", 1000),
    ("1\u00b5s", 1000),
    ("1\u03bcs", 1000),
    ("1ms", 1000000),
    ("1.0000000001s", 1000000000),
    ("0.1s", 100000000),
    ("1.1h", 3960000000000),
    ("0.3333333333333333333h", 1200000000000),
    ("1.00000000000000000000000000000000001s", 1000000000),
    ("0.000000001s", 1),
    ("0.0000000009s", 0),
    ("0.5ns", 0),
    ("1.5ns", 1),
    ("9223372036854775807ns", 9223372036854775807),
    ("2562047h47m16.854775807s", 9223372036854775807),
    ("-9223372036854775808ns", -9223372036854775808),
    ("9223372036.854775807s", 9223372036854775807),
    ("-1h", -3600000000000),
    ("+1h", 3600000000000),
    ("-1.5h", -5400000000000),
    ("9223372036854775808ns9223372036854775808ns", 0),
    ("-9223372036854775808ns9223372036854775808ns", 0),
    ("0.9999999999999999999999h", 3600000000000),
    ("9223372036854775807.9ns", 9223372036854775807),
    ("0000000000000000000000000000001h", 3600000000000),
    ("1.000000000000000000000000000000000000000000000000000000000000000000001h", 3600000000000),
    ("1h0.5m", 3630000000000),
    ("0.25us", 250),
    ("1.5\u00b5s", 1500),
    ("100h30m15.25s", 361815250000000),
    ("1.5m30.5s", 120500000000),
    ("4000h", 14400000000000000),
]
GO_REFUSES = [
    ("00", 'time: missing unit in duration "00"'),
    ("9223372036854775808ns", 'time: invalid duration "9223372036854775808ns"'),
    ("2562047h47m16.854775808s", 'time: invalid duration "2562047h47m16.854775808s"'),
    ("2562048h", 'time: invalid duration "2562048h"'),
    ("3000000h", 'time: invalid duration "3000000h"'),
    ("99999999999999999999h", 'time: invalid duration "99999999999999999999h"'),
    ("-9223372036854775809ns", 'time: invalid duration "-9223372036854775809ns"'),
    ("9223372036.854775808s", 'time: invalid duration "9223372036.854775808s"'),
    ("1", 'time: missing unit in duration "1"'),
    ("h", 'time: invalid duration "h"'),
    ("", 'time: invalid duration ""'),
    ("-", 'time: invalid duration "-"'),
    ("+", 'time: invalid duration "+"'),
    (".", 'time: invalid duration "."'),
    (".s", 'time: invalid duration ".s"'),
    ("-.s", 'time: invalid duration "-.s"'),
    ("1.5.5h", 'time: missing unit in duration "1.5.5h"'),
    ("1..5h", 'time: missing unit in duration "1..5h"'),
    ("1h2", 'time: missing unit in duration "1h2"'),
    ("1d", 'time: unknown unit "d" in duration "1d"'),
    ("1w", 'time: unknown unit "w" in duration "1w"'),
    ("1y", 'time: unknown unit "y" in duration "1y"'),
    ("3d", 'time: unknown unit "d" in duration "3d"'),
    ("1mm", 'time: unknown unit "mm" in duration "1mm"'),
    ("1H", 'time: unknown unit "H" in duration "1H"'),
    ("1Ms", 'time: unknown unit "Ms" in duration "1Ms"'),
    ("1hm", 'time: unknown unit "hm" in duration "1hm"'),
    ("1mus", 'time: unknown unit "mus" in duration "1mus"'),
    ("\u00b5s", 'time: invalid duration "\\xc2\\xb5s"'),
    ("1 h", 'time: unknown unit " h" in duration "1 h"'),
    (" 1h", 'time: invalid duration " 1h"'),
    ("1h ", 'time: unknown unit "h " in duration "1h "'),
    ("1h 30m", 'time: unknown unit "h " in duration "1h 30m"'),
    ("1h-30m", 'time: unknown unit "h-" in duration "1h-30m"'),
    ("1h,30m", 'time: unknown unit "h," in duration "1h,30m"'),
    ("\u0663h", 'time: invalid duration "\\xd9\\xa3h"'),
    ("1e3s", 'time: unknown unit "e" in duration "1e3s"'),
    ("0x10s", 'time: unknown unit "x" in duration "0x10s"'),
    ("1_000s", 'time: unknown unit "_" in duration "1_000s"'),
    ('1s"', 'time: unknown unit "s\\"" in duration "1s\\""'),
    ("1\\s", 'time: unknown unit "\\\\s" in duration "1\\\\s"'),
    ("1\ts", 'time: unknown unit "\\x09s" in duration "1\\x09s"'),
    ("1h\n", 'time: unknown unit "h\\x0a" in duration "1h\\x0a"'),
    ("1\u00e9", 'time: unknown unit "\\xc3\\xa9" in duration "1\\xc3\\xa9"'),
    ("1\ufffds", 'time: unknown unit "\\xef\\xbf\\xbds" in duration "1\\xef\\xbf\\xbds"'),
    ("--1h", 'time: invalid duration "--1h"'),
    ("+-1h", 'time: invalid duration "+-1h"'),
    ("1h+1m", 'time: unknown unit "h+" in duration "1h+1m"'),
    ("1.", 'time: missing unit in duration "1."'),
    ("1.h5", 'time: missing unit in duration "1.h5"'),
    ("9223372036854775808ns1ns", 'time: invalid duration "9223372036854775808ns1ns"'),
    ("2562047h2562047h", 'time: invalid duration "2562047h2562047h"'),
    ("1\u00b5", 'time: unknown unit "\\xc2\\xb5" in duration "1\\xc2\\xb5"'),
    ("1\u00b5h", 'time: unknown unit "\\xc2\\xb5h" in duration "1\\xc2\\xb5h"'),
]


@pytest.mark.parametrize(("text", "nanoseconds"), GO_ACCEPTS)
def test_reads_what_go_reads_to_the_nanosecond(text: str, nanoseconds: int) -> None:
    assert parse_go_duration(text) == nanoseconds


@pytest.mark.parametrize(("text", "go_error"), GO_REFUSES)
def test_refuses_what_go_refuses_with_gos_message(text: str, go_error: str) -> None:
    with pytest.raises(GoDurationError) as raised:
        parse_go_duration(text)

    assert str(raised.value) == go_error


@pytest.mark.parametrize(
    ("text", "kind", "problem"),
    [
        ("3d", DurationProblem.UNKNOWN_UNIT, '"d" is not a unit'),
        ("1h 30m", DurationProblem.UNKNOWN_UNIT, '"h " is not a unit'),
        ("72", DurationProblem.MISSING_UNIT, "a number has no unit"),
        ("2562048h", DurationProblem.OUT_OF_RANGE,
         "it is longer than Go's longest duration, 2562047h47m16.854775807s"),
        ("99999999999999999999h", DurationProblem.OUT_OF_RANGE,
         "it is longer than Go's longest duration, 2562047h47m16.854775807s"),
        ("", DurationProblem.INVALID, "it is not a duration"),
        ("h", DurationProblem.INVALID, "it is not a duration"),
        ("\u0663h", DurationProblem.INVALID, "it is not a duration"),
    ],
)  # fmt: skip
def test_an_error_says_in_words_what_was_wrong(
    text: str, kind: DurationProblem, problem: str
) -> None:
    with pytest.raises(GoDurationError) as raised:
        parse_go_duration(text)

    assert (raised.value.kind, raised.value.problem) == (kind, problem)


def test_the_longest_duration_is_gos() -> None:
    assert LONGEST == 2**63 - 1 == parse_go_duration("2562047h47m16.854775807s")


UNITS = {"ns": 1, "us": 10**3, "\u00b5s": 10**3, "\u03bcs": 10**3, "ms": 10**6, "s": 10**9,
         "m": 60 * 10**9, "h": 3600 * 10**9}  # fmt: skip


@st.composite
def exact_parts(draw: st.DrawFn) -> tuple[str, int]:
    """A part `<number><unit>` and its nanoseconds, with a fraction only as long as the unit
    divides exactly (`1.5us` but not `1.5ns`), so that Go's float step cannot round it."""
    unit = draw(st.sampled_from(sorted(UNITS)))
    size = UNITS[unit]
    whole = draw(st.integers(0, 10**5))
    places = 0
    while size % 10 ** (places + 1) == 0 and places < 9:
        places += 1
    digits = draw(st.text(alphabet="0123456789", max_size=places))
    fraction = int(digits) * (size // 10 ** len(digits)) if digits else 0
    point = draw(st.booleans()) or bool(digits)
    return f"{whole}{'.' if point else ''}{digits}{unit}", whole * size + fraction


@settings(max_examples=300, deadline=None)
@given(st.lists(exact_parts(), min_size=1, max_size=5), st.sampled_from(["", "+", "-"]))
def test_a_sum_of_parts_in_any_order_is_their_total(
    parts: list[tuple[str, int]], sign: str
) -> None:
    total = sum(nanoseconds for _, nanoseconds in parts)
    text = sign + "".join(written for written, _ in parts)

    assert parse_go_duration(text) == (-total if sign == "-" else total)


@settings(max_examples=500, deadline=None)
@given(st.from_regex(r"[-+]?([0-9.]{0,4}[a-zA-Z ,]{0,3}){1,4}", fullmatch=True))
def test_any_text_is_a_duration_within_64_bits_or_one_of_gos_three_errors(text: str) -> None:
    result = returned_or_raised(parse_go_duration, text, GoDurationError)

    if isinstance(result, int):
        assert -(2**63) <= result <= LONGEST
    else:
        assert result.text == text
        assert str(result) in {
            f'time: invalid duration "{text}"',
            f'time: missing unit in duration "{text}"',
            f'time: unknown unit "{result.unit}" in duration "{text}"',
        }
        assert (result.unit is not None) == (result.kind is DurationProblem.UNKNOWN_UNIT)


@settings(max_examples=500, deadline=None)
@given(st.text())
def test_any_unicode_text_gives_a_duration_or_a_go_duration_error(text: str) -> None:
    result = returned_or_raised(parse_go_duration, text, GoDurationError)

    assert isinstance(result, int | GoDurationError)
    if isinstance(result, GoDurationError):
        assert result.text == text
