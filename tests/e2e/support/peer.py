"""OpenYurt's yurt-manager, the comparison peer: whether it is built, the mark of the tests that
need it (`./dev test` builds it; a plain `pytest` run on a lab without it skips them), and the
resync its tests give it."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections.abc import AsyncIterator

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from edgerollout_lab import build
from edgerollout_lab.api import api_client
from edgerollout_lab.cluster import Lab
from edgerollout_lab.versions import OPENYURT


def peer_built() -> bool:
    """Whether OpenYurt's yurt-manager is built (`./dev lab build --peer openyurt`)."""
    return not build.missing_components(OPENYURT)


needs_peer = pytest.mark.skipif(
    not peer_built(),
    reason="OpenYurt's yurt-manager is not built; run `./dev lab build --peer openyurt`",
)


# How often the peer's DaemonSets are touched while it runs (`resyncing`).
RESYNC_SECONDS = 10.0
RESYNC_ANNOTATION = "lab.edgerollout.io/resync"


@contextlib.asynccontextmanager
async def resyncing(lab: Lab, namespace: str) -> AsyncIterator[None]:
    """While the block runs, touch each DaemonSet of `namespace` every `RESYNC_SECONDS` (an
    annotation of its own), as a resync period would wake yurt-manager.

    yurt-manager reconciles a DaemonSet only on an update that changes its resourceVersion, and
    returns early while the deletions it asked for are not all observed; when the DaemonSet's
    last status update is handled before the last deletion is, nothing wakes it again (no resync:
    its predicate drops updates without a new resourceVersion) and the rollout stalls for good.
    The lab tests are about what the peer decides, not about that lost wake-up, which
    docs/openyurt-comparison.md reports; edgerollout is never touched."""

    async def touch() -> None:
        async with api_client(lab.kubeconfig) as api:
            apps = client.AppsV1Api(api)
            for count in itertools.count(1):
                await asyncio.sleep(RESYNC_SECONDS)
                listed = await apps.list_namespaced_daemon_set(namespace)
                for ds in listed.items:
                    patch = {"metadata": {"annotations": {RESYNC_ANNOTATION: str(count)}}}
                    with contextlib.suppress(ApiException):
                        await apps.patch_namespaced_daemon_set(ds.metadata.name, namespace, patch)

    task = asyncio.create_task(touch(), name="peer-resync")
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
