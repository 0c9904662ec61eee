"""Log lines carry their structured fields: as JSON keys, or as klog's `key=value` after the text."""

from __future__ import annotations

import datetime
import json
import logging
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from edgerollout.cli import logging_setup
from edgerollout.cli.logging_setup import JsonFormatter, TextFormatter
from edgerollout.logfields import LogFields
from edgerollout.settings import LogLevel

# 2026-11-23 22:45:00.250 UTC
CREATED = datetime.datetime(2026, 11, 23, 22, 45, 0, 250000, tzinfo=datetime.UTC).timestamp()
DELETED = LogFields(
    daemonset="default/agent",
    node="edge-7",
    pod="default/agent-x2x9k",
    revision="6d5f8b7c4d",
    reason="outdated_within_budget",
    unavailable=3,
    budget=10,
)


def _record(
    message: str,
    fields: LogFields | None = None,
    *,
    level: int = logging.INFO,
    with_exception: bool = False,
) -> logging.LogRecord:
    """A record as `logger.log(level, message, extra=fields)` makes it, at a fixed time."""
    logger = logging.getLogger("edgerollout.controller")
    exc_info = sys.exc_info() if with_exception else None
    record = logger.makeRecord(logger.name, level, __file__, 1, message, (), exc_info, extra=fields)
    record.created = CREATED
    record.msecs = 250.0
    return record


@pytest.fixture
def utc_text(monkeypatch: pytest.MonkeyPatch) -> TextFormatter:
    """The text formatter, with its time in UTC so that the lines below hold in any time zone."""
    formatter = TextFormatter()
    monkeypatch.setattr(formatter, "converter", time.gmtime)
    return formatter


def test_json_line_carries_every_structured_field_after_the_message() -> None:
    line = JsonFormatter().format(_record("deleted pod", DELETED))

    assert line == (
        '{"time":"2026-11-23T22:45:00.250000+00:00","level":"info",'
        '"logger":"edgerollout.controller","msg":"deleted pod",'
        '"daemonset":"default/agent","node":"edge-7","pod":"default/agent-x2x9k",'
        '"revision":"6d5f8b7c4d","reason":"outdated_within_budget","unavailable":3,"budget":10}'
    )


def test_json_line_without_fields_is_time_level_logger_and_message() -> None:
    line = JsonFormatter().format(_record("controller stopped", level=logging.WARNING))

    assert line == (
        '{"time":"2026-11-23T22:45:00.250000+00:00","level":"warning",'
        '"logger":"edgerollout.controller","msg":"controller stopped"}'
    )


def test_json_line_writes_a_value_json_cannot_hold_as_its_text() -> None:
    record = _record("saved", None)
    record.path = Path("/var/lib/edgerollout-agent/pods.json")

    assert json.loads(JsonFormatter().format(record))["path"] == (
        "/var/lib/edgerollout-agent/pods.json"
    )


def _fail() -> None:
    raise ValueError("boom")


def test_json_line_puts_a_traceback_under_exception() -> None:
    try:
        _fail()
    except ValueError:
        record = _record("pods cache failed", LogFields(resource="pods"), with_exception=True)

    entry = json.loads(JsonFormatter().format(record))

    assert {key: value for key, value in entry.items() if key != "exception"} == {
        "time": "2026-11-23T22:45:00.250000+00:00",
        "level": "info",
        "logger": "edgerollout.controller",
        "msg": "pods cache failed",
        "resource": "pods",
    }
    lines = entry["exception"].splitlines()
    assert (lines[0], lines[-1]) == ("Traceback (most recent call last):", "ValueError: boom")


def test_text_line_shows_fields_as_klog_key_value_pairs(utc_text: TextFormatter) -> None:
    line = utc_text.format(_record("deleted pod", DELETED))

    assert line == (
        "2026-11-23 22:45:00,250 INFO edgerollout.controller: deleted pod "
        'daemonset="default/agent" node="edge-7" pod="default/agent-x2x9k" '
        'revision="6d5f8b7c4d" reason="outdated_within_budget" unavailable=3 budget=10'
    )


def test_text_line_quotes_a_value_with_spaces_and_quotes_as_json_does(
    utc_text: TextFormatter,
) -> None:
    fields = LogFields(resource="pods", error='410 Gone: "too old"', retry_after=0.5)

    line = utc_text.format(_record("pods watch expired; listing again", fields))

    assert line == (
        "2026-11-23 22:45:00,250 INFO edgerollout.controller: pods watch expired; listing again "
        'resource="pods" error="410 Gone: \\"too old\\"" retry_after=0.5'
    )


def test_text_line_without_fields_is_unchanged(utc_text: TextFormatter) -> None:
    line = utc_text.format(_record("controller stopped"))

    assert line == "2026-11-23 22:45:00,250 INFO edgerollout.controller: controller stopped"


@pytest.fixture
def restored_logging() -> Iterator[None]:
    root, ours = logging.getLogger(), logging.getLogger("edgerollout")
    handlers, root_level, our_level = root.handlers[:], root.level, ours.level
    yield
    root.handlers[:] = handlers
    root.setLevel(root_level)
    ours.setLevel(our_level)


def _written_at(
    level: LogLevel, capsys: pytest.CaptureFixture[str], *logged: tuple[str, int, str]
) -> list[tuple[str, str, str]]:
    """(level, logger, message) of each line written, configured at `level`, of those logged."""
    logging_setup.configure("json", level=level)
    for name, at, message in logged:
        logging.getLogger(name).log(at, message)
    lines = capsys.readouterr().err.splitlines()
    return [(entry["level"], entry["logger"], entry["msg"]) for entry in map(json.loads, lines)]


@pytest.mark.usefixtures("restored_logging")
@pytest.mark.parametrize(
    ("level", "logged", "written"),
    [
        pytest.param(
            "debug",
            [
                ("edgerollout.controller", logging.DEBUG, "skipped pod"),
                ("aiohttp.client", logging.DEBUG, "connection details"),
                ("aiohttp.client", logging.INFO, "retrying"),
            ],
            [
                ("debug", "edgerollout.controller", "skipped pod"),
                ("info", "aiohttp.client", "retrying"),
            ],
            id="debug_level_writes_edgerollout_debug_lines_but_not_other_libraries",
        ),
        pytest.param(
            "warning",
            [
                ("edgerollout.agent", logging.INFO, "agent listening"),
                ("aiohttp.client", logging.INFO, "retrying"),
                ("edgerollout.agent", logging.WARNING, "could not save the pod cache"),
            ],
            [("warning", "edgerollout.agent", "could not save the pod cache")],
            id="warning_level_leaves_out_info_lines_of_everyone",
        ),
    ],
)
def test_the_level_chooses_the_lines_written(
    capsys: pytest.CaptureFixture[str],
    level: LogLevel,
    logged: list[tuple[str, int, str]],
    written: list[tuple[str, str, str]],
) -> None:
    assert _written_at(level, capsys, *logged) == written
