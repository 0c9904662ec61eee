"""Options of the whole suite (pytest reads `pytest_addoption` only from the top conftest)."""

from __future__ import annotations

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("reliability", "the reliability suite (tests/e2e/reliability)")
    group.addoption(
        "--reliability-long",
        action="store_true",
        default=False,
        help="Run every chaos scenario many times (default: once each) and rewrite the results "
        "table in docs/reliability.md.",
    )
    group.addoption(
        "--reliability-runs",
        type=int,
        default=None,
        help="Runs per scenario (default: 1, or 5 with --reliability-long).",
    )
    group.addoption(
        "--reliability-seed",
        type=int,
        default=1,
        help="Seed of the first run; run i uses seed + i (a failing run names its seed).",
    )
