"""OpenYurt's yurt-manager as the benchmark's peer (`--peer openyurt`), measured as edgerollout's
controller is.

yurt-manager has no namespace scope: it acts on every DaemonSet that carries the strategy
annotations, and edgerollout's DaemonSets carry the same ones. Two controllers on one DaemonSet
would race (it deletes up to 250 pods at once, in random order, without UID preconditions), so it
runs only while one of its own measurements runs, each started and stopped around it, and only
when every other annotated DaemonSet of the lab is settled: the scenarios see to that. edgerollout's
controller, scoped to its own namespace, never sees the peer's DaemonSets.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

from bench.controller import READY_TIMEOUT, Controller
from bench.session import Session
from edgerollout_lab import build, processes
from edgerollout_lab.openyurt import (
    SERVICE_ACCOUNT,
    SERVICE_ACCOUNT_NAMESPACE,
    YurtManager,
    grant,
    resyncing,
)
from edgerollout_lab.versions import OPENYURT

NAME = "openyurt"
NAMESPACE = "bench-openyurt"
# Who the API server's audit log names behind the peer's pod deletions.
USER = f"system:serviceaccount:{SERVICE_ACCOUNT_NAMESPACE}:{SERVICE_ACCOUNT}"


@dataclass
class PeerController(YurtManager, Controller):
    """yurt-manager with what the benchmark reads of a controller: its metrics (controller-runtime
    serves client-go's `rest_client_requests_total`, as edgerollout does), CPU seconds and RSS."""


def missing() -> str | None:
    """Why the peer cannot run here (it is not built), or None."""
    if build.missing_components(OPENYURT):
        return (
            f"OpenYurt's yurt-manager is not built; run `{build.build_command(OPENYURT)}` "
            "first (about 4 minutes on a cold cache)"
        )
    return None


@asynccontextmanager
async def running(session: Session) -> AsyncIterator[PeerController]:
    """yurt-manager against the session's lab, ready (its informers have listed), for the block;
    stopped after it, whatever happens. Every run appends to `DIR/logs/yurt-manager.log`."""
    await grant(session.lab.kubeconfig)
    handle = PeerController.launch(
        session.lab.kubeconfig, processes.log_path(session.folder, YurtManager.what)
    )
    try:
        handle.ready_seconds = await handle.wait_ready(timeout=READY_TIMEOUT)
        # Its lost wake-up would stall a round for good (docs/openyurt-comparison.md).
        async with resyncing(session.lab.kubeconfig):
            yield handle
    finally:
        code = handle.stop()
        if code != 0:
            session.say(f"openyurt: yurt-manager exited {code} (log: {handle.log})")
