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


# The lab tests in two groups of about the same length (16 minutes each on 2026-11-28), one per
# worker: "lab-own" holds every test that starts a lab of its own or real nodes (one real-node lab
# runs at a time on a machine), and the session labs of a few shapes; "lab-simulated" the other
# shapes, all of simulated nodes. Each group keeps the order tests/e2e/conftest.py sets, so that
# a shape's lab starts once per group. The labs wait far more than they compute (the suite uses
# about a third of the 2 cores), so two at a time cost little. Modules not named here are
# "lab-simulated".
LAB_OWN = frozenset(
    {
        "tests/e2e/test_bench_smoke.py",
        "tests/e2e/test_bench_peer_smoke.py",
        "tests/e2e/test_installed.py",
        "tests/e2e/test_real_node.py",
        "tests/e2e/test_demo.py",
        "tests/e2e/test_deploy.py",
        "tests/e2e/test_lab_cli.py",
        "tests/e2e/test_agent_identity_namespace.py",
        "tests/e2e/test_staged_rollout.py",
        "tests/e2e/test_prepull_first.py",
        "tests/e2e/test_controller_resilience.py",
        "tests/e2e/test_agent.py",
        "tests/e2e/test_alerts.py",  # the agents' lab shape, as test_agent.py's
        "tests/e2e/test_node_hold.py",  # the agents' lab shape, as test_agent.py's
        "tests/e2e/reliability/test_agent_faults.py",
    }
)


def lab_group(nodeid: str) -> str:
    """The scheduling group of a test: "unit", "lab-own" or "lab-simulated"."""
    if not nodeid.startswith("tests/e2e/"):
        return "unit"
    return "lab-own" if nodeid.split("::", 1)[0] in LAB_OWN else "lab-simulated"


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """Under `pytest -n 2 --dist loadgroup` (`./dev test`): three groups, each run whole on one
    worker in collection order — the unit tests (on the first worker, then one lab group) and the
    two lab groups (`lab_group`). xdist hands out the groups largest first and the next one to
    the worker that runs out of work. (pytest-xdist 3.8's own `xdist_group` marks no longer reach
    its scheduler under pytest 9.2, so the groups are named here.)"""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling  # type: ignore[import-untyped]

    class LabGroups(LoadScopeScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            return lab_group(nodeid)

    return LabGroups(config, log)
