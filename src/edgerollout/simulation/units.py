"""Durations, sizes and link rates as a fleet file writes them, read into plain numbers.

A person describing a fleet thinks in "7d", "200MB" and "10Mbit/s", not in seconds and bytes, so
each value may be a number in the base unit (seconds, bytes, bytes per second) or a string of a
number and a unit. Units are decimal (a MB is 10^6 bytes, as registries and link vendors count);
binary ones are spelled out (MiB). A string may chain durations ("1h30m"), as Go's do.

Every reader raises `UnitError` with what is wrong and what is expected; the fleet reader adds
the key it was reading (`fleet.FleetError`).
"""

import re
from collections.abc import Mapping

DURATION_UNITS: Mapping[str, float] = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
SIZE_UNITS: Mapping[str, float] = {
    "B": 1.0,
    "kB": 1e3,
    "MB": 1e6,
    "GB": 1e9,
    "KiB": 2.0**10,
    "MiB": 2.0**20,
    "GiB": 2.0**30,
}
RATE_UNITS: Mapping[str, float] = {
    "bit/s": 1 / 8,
    "kbit/s": 1e3 / 8,
    "Mbit/s": 1e6 / 8,
    "Gbit/s": 1e9 / 8,
    "B/s": 1.0,
    "kB/s": 1e3,
    "MB/s": 1e6,
    "GB/s": 1e9,
}
_NUMBER = r"[0-9]+(?:\.[0-9]+)?"
_DURATION_PART = re.compile(rf"({_NUMBER})(ms|s|m|h|d)")


class UnitError(ValueError):
    """A value that is not a quantity of the kind expected; the message says why."""


def read_duration(raw: object) -> float:
    """Seconds, from a number of seconds or a string such as "90s", "1h30m" or "7d"."""
    text = _number_or_text(raw, "a duration such as 90s, 1h30m or 7d")
    if isinstance(text, float):
        return text
    parts = list(_DURATION_PART.finditer(text))
    if not text or "".join(part.group(0) for part in parts) != text:
        raise UnitError(
            f"expected a duration such as 90s, 1h30m or 7d (units ms, s, m, h, d), got {raw!r}"
        )
    return sum(float(part.group(1)) * DURATION_UNITS[part.group(2)] for part in parts)


def read_size(raw: object) -> float:
    """Bytes, from a number of bytes or a string such as "200MB" or "1.5GiB"."""
    return _quantity(raw, SIZE_UNITS, "a size such as 200MB or 1.5GiB")


def read_rate(raw: object) -> float:
    """Bytes per second, from a number of bytes per second or a string such as "10Mbit/s"."""
    return _quantity(raw, RATE_UNITS, "a link rate such as 10Mbit/s or 2MB/s")


def _quantity(raw: object, units: Mapping[str, float], expected: str) -> float:
    text = _number_or_text(raw, expected)
    if isinstance(text, float):
        return text
    match = re.fullmatch(rf"({_NUMBER})\s*([A-Za-z/]+)", text)
    if match is None or match.group(2) not in units:
        raise UnitError(f"expected {expected} (units {', '.join(units)}), got {raw!r}")
    return float(match.group(1)) * units[match.group(2)]


def _number_or_text(raw: object, expected: str) -> float | str:
    """A plain number as it is (not negative, finite), or the stripped text of a quantity with
    its unit (not negative); anything else is refused, saying what was `expected`."""
    if _is_number(raw):
        return _not_negative(float(raw))  # type: ignore[arg-type]
    if not isinstance(raw, str):
        raise UnitError(f"expected {expected}, got {raw!r}")
    text = raw.strip()
    if text.startswith("-"):
        raise UnitError(f"must not be negative, got {raw!r}")
    return text


def _is_number(raw: object) -> bool:
    # YAML's true and false are ints to Python; a quantity is never a truth value.
    return isinstance(raw, int | float) and not isinstance(raw, bool)


def _not_negative(value: float) -> float:
    if value < 0:
        raise UnitError(f"must not be negative, got {value:g}")
    if value != value or value in (float("inf"), float("-inf")):
        raise UnitError(f"must be a finite number, got {value}")
    return value
