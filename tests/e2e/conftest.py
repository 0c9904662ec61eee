"""Fixtures for tests against the lab: one lab per shape for the session, a namespace per test.

A test asks for the shape of its lab with `@pytest.mark.lab(nodes=N, agents=..., real_nodes=...)`
(see `Shape`; default: 4 simulated nodes, no agent, no real node), on itself or on its whole
module (`pytestmark`). Tests are ordered so that those wanting the same shape run together, and a
lab is replaced only when the shape changes: each shape starts once per group (`./dev test` runs
two groups side by side, `tests/conftest.py`), one lab at a time in each, and every lab is stopped
in a finalizer, also when a test fails or the run is interrupted.

One chain of fixtures serves every shape: `lab`, then `kube` (the admin's API clients; every link
the test cut is restored when it ends), `namespace` (a fresh one per test, deleted afterwards) and
`controller` (edgerollout's controller scoped to that namespace). A test that changes a lab for
good, or stops it, starts a lab of its own (`lab_of_its_own`); those tests run first, before any
of the session's labs starts.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from edgerollout_lab.cluster import Lab
from tests.e2e.support.bench import Smoke, shared_smoke
from tests.e2e.support.controller_process import ControllerProcess, controller_for
from tests.e2e.support.lab import LabHandle, SessionLabs, Shape, fresh_namespace, lab_handle


def shape_of(item: pytest.Item) -> Shape:
    marker = item.get_closest_marker("lab")
    return Shape(**marker.kwargs) if marker else Shape()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    e2e = [item for item in items if "tests/e2e/" in str(item.path)]
    others = [item for item in items if item not in e2e]

    # Tests that start labs of their own run first, then one group per shape of the session's
    # labs (sorting is stable: file order holds within a group).
    def order(item: pytest.Item) -> tuple[bool, Shape]:
        on_session_lab = "lab" in getattr(item, "fixturenames", ())
        return on_session_lab, shape_of(item) if on_session_lab else Shape()

    e2e.sort(key=order)
    items[:] = others + e2e


@pytest.fixture(scope="session")
def _labs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SessionLabs]:
    labs = SessionLabs(tmp_path_factory.mktemp("labs"))
    try:
        yield labs
    finally:
        labs.close()


@pytest.fixture(scope="session")
def bench_smoke(tmp_path_factory: pytest.TempPathFactory) -> Smoke:
    """One benchmark smoke run (about three and a half minutes, on labs of its own) for the session."""
    return shared_smoke(tmp_path_factory.mktemp("bench"))


@pytest.fixture
def lab(_labs: SessionLabs, request: pytest.FixtureRequest) -> Lab:
    return _labs.get(shape_of(request.node))


@pytest.fixture
async def kube(lab: Lab) -> AsyncIterator[LabHandle]:
    async with lab_handle(lab) as handle:
        yield handle


@pytest.fixture
async def namespace(kube: LabHandle) -> AsyncIterator[str]:
    async with fresh_namespace(kube) as name:
        yield name


@pytest.fixture
async def controller(
    lab: Lab, namespace: str, tmp_path: Path, request: pytest.FixtureRequest
) -> AsyncIterator[ControllerProcess]:
    """edgerollout's controller, running as a process, scoped to the test's namespace."""
    async with controller_for(lab, namespace, tmp_path / "controller.log", request) as c:
        yield c


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    if report.when == "call":
        item.rep_call = report  # type: ignore[attr-defined]
    return report
