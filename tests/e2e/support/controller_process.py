"""The controller as a real process against the lab, as it runs in a cluster, for one test."""

from __future__ import annotations

import contextlib
import urllib.request
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from edgerollout_lab import controller_process
from edgerollout_lab.cluster import Lab


class ControllerProcess(controller_process.ControllerProcess):
    def metric(self, name: str, /, **labels: str) -> float:
        """The current value of one sample from /metrics (0 if absent)."""
        with urllib.request.urlopen(self.metrics_url, timeout=5) as response:  # noqa: S310
            text = response.read().decode()
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                if sample.name == name and sample.labels == labels:
                    return float(sample.value)
        return 0.0


@contextlib.asynccontextmanager
async def controller_for(
    lab: Lab, namespace: str, log: Path, request: pytest.FixtureRequest, *flags: str
) -> AsyncIterator[ControllerProcess]:
    """The controller scoped to one namespace for one test, started and ready (with the lab's
    pre-pull toolbox where the lab has one: real nodes pull it from the lab's registry, and any
    more `flags`); its log is printed if the test failed, and it must stop cleanly (exit 0) when
    asked."""
    toolbox = [f"--prepull-toolbox-image={lab.toolbox_image}"] if lab.toolbox_image else []
    handle = ControllerProcess.launch(
        lab.kubeconfig, log, f"--namespace={namespace}", *toolbox, *flags
    )
    await handle.wait_ready()
    with stopped_cleanly(handle, request, "controller", handle.log_text):
        yield handle


@contextlib.contextmanager
def stopped_cleanly(
    handle: controller_process.ControllerProcess,
    request: pytest.FixtureRequest,
    name: str,
    log_text: Callable[[], str],
) -> Iterator[None]:
    """Stop `handle` when the block ends: its log printed if the test failed, and it must exit 0
    (the controller and OpenYurt's alike)."""
    try:
        yield
    finally:
        code = handle.stop()
        failed = getattr(request.node, "rep_call", None)
        if failed is not None and failed.failed:
            print(f"--- {name} log ---\n{log_text()}")
        assert code == 0, f"{name} exited {code}:\n{log_text()}"
