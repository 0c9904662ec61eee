"""Fixtures for tests against the lab: one lab per size for the session, a namespace per test.

A test asks for a lab size with `@pytest.mark.lab(nodes=N)` (default 4). Tests are ordered so that
those wanting the same size run together, and a lab is replaced only when the size changes. Every
lab is stopped in a finalizer, also when a test fails or the run is interrupted.

The agents' tests (`agents_lab`, `cloud`, `ns`, `ota_controller`) run instead on a lab of their
own, one per test module, with an agent on every node.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from edgerollout_lab import cluster
from edgerollout_lab.cluster import Lab
from tests.e2e.support.controller_process import ControllerProcess, controller_for
from tests.e2e.support.lab import LabHandle, fresh_namespace, lab_handle, lab_of_its_own

DEFAULT_NODES = 4


def _wanted_nodes(item: pytest.Item) -> int:
    marker = item.get_closest_marker("lab")
    return int(marker.kwargs.get("nodes", DEFAULT_NODES)) if marker else DEFAULT_NODES


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    e2e = [item for item in items if "tests/e2e/" in str(item.path)]
    others = [item for item in items if item not in e2e]
    # Tests that start labs of their own run first, then one group per session-lab size
    # (sorting is stable: file order holds within a group).
    e2e.sort(
        key=lambda item: _wanted_nodes(item) if "lab" in getattr(item, "fixturenames", ()) else 0
    )
    items[:] = others + e2e


class _Labs:
    """The session's current lab; replaced only when a test needs a different size."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.current: Lab | None = None
        self.size = 0

    def get(self, nodes: int) -> Lab:
        if self.current is not None and self.size == nodes:
            return self.current
        self.close()
        folder = self.root / f"lab-{nodes}"
        self.current = cluster.up(folder, nodes=nodes, say=lambda _: None)
        self.size = nodes
        return self.current

    def close(self) -> None:
        if self.current is not None:
            cluster.down(self.current.folder, say=lambda _: None)
            self.current = None


@pytest.fixture(scope="session")
def _labs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[_Labs]:
    labs = _Labs(tmp_path_factory.mktemp("labs"))
    try:
        yield labs
    finally:
        labs.close()


@pytest.fixture
def lab(_labs: _Labs, request: pytest.FixtureRequest) -> Lab:
    return _labs.get(_wanted_nodes(request.node))


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
    async with controller_for(lab.kubeconfig, namespace, tmp_path / "controller.log", request) as c:
        yield c


@pytest.fixture(scope="module")
def agents_lab(
    tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> Iterator[Lab]:
    """A lab with an agent on every node, for the test module; stopped when its tests are done."""
    module = request.module.__name__.rpartition(".")[2]
    with lab_of_its_own(tmp_path_factory.mktemp(module) / "lab", nodes=3, agents=True) as lab:
        yield lab


@pytest.fixture
async def cloud(agents_lab: Lab) -> AsyncIterator[LabHandle]:
    """The admin's API clients on the agents' lab."""
    async with lab_handle(agents_lab) as handle:
        yield handle


@pytest.fixture
async def ns(cloud: LabHandle) -> AsyncIterator[str]:
    async with fresh_namespace(cloud, prefix="a") as name:
        yield name


@pytest.fixture
async def ota_controller(
    agents_lab: Lab, ns: str, tmp_path: Path, request: pytest.FixtureRequest
) -> AsyncIterator[ControllerProcess]:
    """edgerollout's controller on the agents' lab, scoped to the test's namespace."""
    async with controller_for(agents_lab.kubeconfig, ns, tmp_path / "controller.log", request) as c:
        yield c


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    if report.when == "call":
        item.rep_call = report  # type: ignore[attr-defined]
    return report
