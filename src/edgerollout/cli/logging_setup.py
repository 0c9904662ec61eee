"""Log lines with their structured fields, as text for people or JSON for log pipelines.

The fields are the `extra=` of each call (`edgerollout.logfields` names them all). Text puts them
after the message as klog does, `key=value` with the value JSON-encoded; JSON makes each one a key
of the line, after `time`, `level`, `logger` and `msg`.
"""

from __future__ import annotations

import datetime
import logging
import sys
from typing import Any

import orjson

from edgerollout.settings import LogFormat, LogLevel

# What every LogRecord carries by itself: anything else on a record came from `extra=`.
_RECORD_ATTRIBUTES = frozenset(
    {*vars(logging.LogRecord("", 0, "", 0, None, None, None)), "message", "asctime", "taskName"}
)
_LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
}


def structured_fields(record: logging.LogRecord) -> dict[str, Any]:
    """The fields passed with `extra=`, in the order they were given."""
    return {key: value for key, value in vars(record).items() if key not in _RECORD_ATTRIBUTES}


def _encode(value: Any) -> bytes:
    return orjson.dumps(value, default=str)


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": datetime.datetime.fromtimestamp(record.created, datetime.UTC).isoformat(),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        for key, value in structured_fields(record).items():
            entry.setdefault(key, value)
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return _encode(entry).decode()


class TextFormatter(logging.Formatter):
    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s: %(message)s")

    def formatMessage(self, record: logging.LogRecord) -> str:  # noqa: N802 - the stdlib's name
        pairs = "".join(
            f" {key}={_encode(value).decode()}" for key, value in structured_fields(record).items()
        )
        return super().formatMessage(record) + pairs


def configure(log_format: LogFormat, *, level: LogLevel) -> None:
    """Send every log line to stderr in `log_format`; edgerollout's own from `level` up.

    Other libraries' lines (aiohttp, the Kubernetes client) stay at info and above even at debug:
    their debug output is about their internals, not about the rollout."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if log_format == "json" else TextFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(max(_LEVELS[level], logging.INFO))
    logging.getLogger("edgerollout").setLevel(_LEVELS[level])
