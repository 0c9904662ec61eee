"""Options of the whole suite (pytest reads `pytest_addoption` only from the top conftest)."""

from __future__ import annotations

from typing import Any

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


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """Under `pytest -n 2 --dist loadgroup` (`./dev test`): every lab test (tests/e2e) on one
    worker, in the order tests/e2e/conftest.py sets (the largest group goes first), and each
    unit test wherever a worker is free, beside them. (pytest-xdist 3.8's own `xdist_group`
    marks no longer reach its scheduler under pytest 9.2, so the group is named here.)"""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling  # type: ignore[import-untyped]

    class LabTestsTogether(LoadScopeScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            return "lab" if nodeid.startswith("tests/e2e/") else nodeid

    return LabTestsTogether(config, log)
