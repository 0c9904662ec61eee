"""Durations in Go's syntax (`72h`, `1h30m`, `2h45m0.5s`), read as Go's `time.ParseDuration` does.

Kubernetes users write durations the way Go prints them, and `kubectl`, client-go and every
controller they know read them with `time.ParseDuration`. An annotation such as
`edgerollout.io/ota-deadline` must mean here exactly what it would mean there, so this module
follows `ParseDuration` (`src/time/format.go`) step by step, down to its arithmetic:

- An optional sign, then one or more `<number><unit>` with nothing between them. A number is
  decimal ASCII digits with an optional fraction (`1.5`, `.5`, `5.`, but not `.`); a unit is one
  of `ns`, `us`, `µs` (U+00B5), `μs` (U+03BC), `ms`, `s`, `m`, `h` — case-sensitive, no days.
- Units may repeat and come in any order (`1m1h` is 61 minutes). `0`, `+0` and `-0` need no unit.
- The result is a whole number of nanoseconds that fits in a signed 64-bit integer (up to
  `2562047h47m16.854775807s`). A fraction is converted as Go converts it — through a float64 and
  truncated — so `0.5ns` is 0 and `1.0000000001s` is one second. Go's sum is a uint64, so
  `9223372036854775808ns9223372036854775808ns` wraps around to 0; that is kept too.
- Anything else is an error: surrounding or inner whitespace, `1d`, `1H`, `1h 30m`, `1e3s`, `٣h`.

The PyPI package `durationpy` (the official Kubernetes client's) is not used: it also takes days,
weeks, months and years, non-ASCII digits, and separators between the parts (`1h 30m`, `1h-30m`),
computes in floats (`1ns` is zero) and has no 64-bit limit. `tests/unit/domain/test_go_duration.py`
holds a table of inputs with the results Go 1.26 gives for them.

An error's `str()` is Go's message, byte for byte (`time: unknown unit "d" in duration "1d"`);
`problem` says the same in words for an Event.
"""

from datetime import timedelta
from enum import Enum

_NANOSECONDS = {
    "ns": 1,
    "us": 1_000,
    "\u00b5s": 1_000,  # µs, the micro sign
    "\u03bcs": 1_000,  # μs, the Greek letter mu
    "ms": 1_000_000,
    "s": 1_000_000_000,
    "m": 60_000_000_000,
    "h": 3_600_000_000_000,
}
# Go accumulates in a uint64 and refuses anything above 1<<63 on the way (the magnitude of the
# most negative Duration); a positive result must stay at most 1<<63 - 1.
_LIMIT = 1 << 63
_UINT64 = 1 << 64
LONGEST = _LIMIT - 1
"""The longest duration Go can hold, in nanoseconds: `2562047h47m16.854775807s`."""


class DurationProblem(Enum):
    """What was wrong, as Go classifies it (OUT_OF_RANGE is Go's "invalid duration" too)."""

    INVALID = "invalid duration"
    OUT_OF_RANGE = "out of range"
    MISSING_UNIT = "missing unit in duration"
    UNKNOWN_UNIT = "unknown unit"


class GoDurationError(ValueError):
    """A text `time.ParseDuration` refuses; `str()` is Go's own message."""

    def __init__(self, problem: DurationProblem, text: str, *, unit: str | None = None) -> None:
        self.kind = problem
        self.text = text
        self.unit = unit
        super().__init__(self._go_message())

    def _go_message(self) -> str:
        if self.kind is DurationProblem.UNKNOWN_UNIT:
            what = f"unknown unit {_go_quote(self.unit or '')} in duration"
        elif self.kind is DurationProblem.OUT_OF_RANGE:
            what = DurationProblem.INVALID.value
        else:
            what = self.kind.value
        return f"time: {what} {_go_quote(self.text)}"

    @property
    def problem(self) -> str:
        """What was wrong, in words for whoever wrote the value."""
        if self.kind is DurationProblem.UNKNOWN_UNIT:
            return f'"{self.unit}" is not a unit'
        if self.kind is DurationProblem.MISSING_UNIT:
            return "a number has no unit"
        if self.kind is DurationProblem.OUT_OF_RANGE:
            return "it is longer than Go's longest duration, 2562047h47m16.854775807s"
        return "it is not a duration"


def parse_go_duration(text: str) -> int:
    """The duration `text` stands for, in nanoseconds, as Go's `time.ParseDuration` reads it.

    Raises `GoDurationError` where Go returns an error."""
    rest = text
    negative = False
    if rest[:1] in ("-", "+"):
        negative = rest[0] == "-"
        rest = rest[1:]
    if rest == "0":
        return 0
    if not rest:
        raise GoDurationError(DurationProblem.INVALID, text)
    total = 0
    while rest:
        if not (rest[0] == "." or "0" <= rest[0] <= "9"):
            raise GoDurationError(DurationProblem.INVALID, text)
        whole, rest = _leading_int(rest, text)
        fraction, scale, after_point = 0, 1.0, False
        if rest[:1] == ".":
            rest = rest[1:]
            before = len(rest)
            fraction, scale, rest = _leading_fraction(rest)
            after_point = before != len(rest)
        if whole is None and not after_point:  # no digits at all: ".s", "-.s"
            raise GoDurationError(DurationProblem.INVALID, text)
        end = 0
        while end < len(rest) and not (rest[end] == "." or "0" <= rest[end] <= "9"):
            end += 1
        if end == 0:
            raise GoDurationError(DurationProblem.MISSING_UNIT, text)
        unit_text, rest = rest[:end], rest[end:]
        unit = _NANOSECONDS.get(unit_text)
        if unit is None:
            raise GoDurationError(DurationProblem.UNKNOWN_UNIT, text, unit=unit_text)
        value = whole or 0
        if value > _LIMIT // unit:
            raise GoDurationError(DurationProblem.OUT_OF_RANGE, text)
        value *= unit
        if fraction > 0:
            # Go: v += uint64(float64(f) * (float64(unit) / scale)), truncating toward zero.
            value += int(float(fraction) * (float(unit) / scale))
            if value > _LIMIT:
                raise GoDurationError(DurationProblem.OUT_OF_RANGE, text)
        # A uint64 in Go: 1<<63 + 1<<63 wraps to 0 (and Go accepts the sum).
        total = (total + value) % _UINT64
        if total > _LIMIT:
            raise GoDurationError(DurationProblem.OUT_OF_RANGE, text)
    if negative:
        return -total
    if total > LONGEST:
        raise GoDurationError(DurationProblem.OUT_OF_RANGE, text)
    return total


def _leading_int(rest: str, text: str) -> tuple[int | None, str]:
    """Go's `leadingInt`: the leading ASCII digits as a number (None when there are none)."""
    value = 0
    index = 0
    while index < len(rest) and "0" <= rest[index] <= "9":
        if value > _LIMIT // 10:
            raise GoDurationError(DurationProblem.OUT_OF_RANGE, text)
        value = value * 10 + ord(rest[index]) - ord("0")
        if value > _LIMIT:
            raise GoDurationError(DurationProblem.OUT_OF_RANGE, text)
        index += 1
    return (value if index else None), rest[index:]


def _leading_fraction(rest: str) -> tuple[int, float, str]:
    """Go's `leadingFraction`: the digits after a point as (number, 10**digits kept, the rest).

    Digits beyond what fits in 63 bits are consumed and ignored, as in Go."""
    value = 0
    scale = 1.0
    overflow = False
    index = 0
    while index < len(rest) and "0" <= rest[index] <= "9":
        digit = ord(rest[index]) - ord("0")
        index += 1
        if overflow:
            continue
        if value > (_LIMIT - 1) // 10 or value * 10 + digit > _LIMIT:
            overflow = True
            continue
        value = value * 10 + digit
        scale *= 10
    return value, scale, rest[index:]


def _go_quote(text: str) -> str:
    """Go's `time.quote`: in double quotes, `"` and `\\` escaped, and every byte of a control or
    non-ASCII character written `\\xNN`."""
    parts = ['"']
    for character in text:
        if ord(character) >= 0x80 or character < " ":
            raw = character.encode("utf-8", "surrogatepass")
            parts.extend(f"\\x{byte:02x}" for byte in raw)
        elif character in '"\\':
            parts.append("\\" + character)
        else:
            parts.append(character)
    parts.append('"')
    return "".join(parts)


def positive_duration(text: str) -> timedelta | str:
    """`text` (surrounding whitespace ignored) as a Go duration longer than zero, rounded up to
    whole microseconds; or, when it is not one, what is wrong with it."""
    try:
        nanoseconds = parse_go_duration(text.strip())
    except GoDurationError as error:
        return error.problem
    if nanoseconds > 0:
        return timedelta(microseconds=-(-nanoseconds // 1000))
    return "it is zero" if nanoseconds == 0 else "it is negative"
