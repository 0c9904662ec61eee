"""Time as the decisions see it: always passed in, always compared in UTC.

The domain never reads a clock; the shell hands `now` in. Kubernetes serialises times as RFC 3339
with second precision (`2024-05-01T12:00:00Z`), so that is the only format written here. A naive
datetime is taken to be UTC rather than rejected: it cannot come from a user, only from a caller
that dropped the zone, and UTC is what the API server meant.
"""

from datetime import UTC, datetime


def to_utc(moment: datetime) -> datetime:
    """The same instant as an aware UTC datetime (naive input is read as UTC)."""
    if moment.tzinfo is None:
        return moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC)


def parse_rfc3339(raw: str) -> datetime:
    """An RFC 3339 time as the API server writes it (`2025-03-01T12:00:00Z`), in UTC."""
    return to_utc(datetime.fromisoformat(raw.replace("Z", "+00:00")))


def format_rfc3339(moment: datetime) -> str:
    """`moment` the way the API server writes a `metav1.Time`: UTC, whole seconds, `Z`."""
    return to_utc(moment).strftime("%Y-%m-%dT%H:%M:%SZ")
