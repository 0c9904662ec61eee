"""A node's hold on its pod's upgrade, as its agent writes it (design §8.4, §13.6): the pod's
`edgerollout.io/UpgradeHeld` condition, patched on `pods/status` with the pod's UID as
precondition. A chaos run writes it with the lab's admin credentials, as the agents of the lab's
simulated nodes would: the controller reads the condition, not who wrote it."""

from __future__ import annotations

import datetime
import math
import random
import time
from dataclasses import dataclass, field
from typing import Any

from kubernetes_asyncio.client.exceptions import ApiException

from edgerollout.domain.vocabulary import HOLD_LIFTED, NODE_ASKED, UPGRADE_HELD
from tests.e2e.support.lab import LabHandle


def rfc3339(at: float) -> str:
    """A moment as the API server writes it: RFC 3339 in UTC, whole seconds."""
    return datetime.datetime.fromtimestamp(at, datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


async def _write(kube: LabHandle, pod: Any, condition: dict[str, str]) -> bool:
    """Patch the pod's `UpgradeHeld` condition; False when the pod was replaced meanwhile."""
    body = {"metadata": {"uid": pod.metadata.uid}, "status": {"conditions": [condition]}}
    try:
        await kube.core.patch_namespaced_pod_status(pod.metadata.name, pod.metadata.namespace, body)
    except ApiException as error:
        if error.status in (404, 409):  # gone, or another pod of that name: the agent's PodChanged
            return False
        raise
    return True


async def hold(kube: LabHandle, pod: Any, *, seconds: float, why: str) -> float | None:
    """Hold the pod from now for `seconds` (rounded up to whole seconds); when it ends (None: the
    pod was replaced meanwhile)."""
    asked = math.floor(time.time())
    until = asked + math.ceil(seconds)
    condition = {
        "type": UPGRADE_HELD,
        "status": "True",
        "reason": NODE_ASKED,
        "message": f"until {rfc3339(until)}, asked at {rfc3339(asked)}: {why}",
        "lastTransitionTime": rfc3339(asked),
    }
    return float(until) if await _write(kube, pod, condition) else None


async def lift(kube: LabHandle, pod: Any) -> bool:
    """Lift the pod's hold; False when the pod was replaced meanwhile."""
    now = rfc3339(time.time())
    condition = {
        "type": UPGRADE_HELD,
        "status": "False",
        "reason": HOLD_LIFTED,
        "message": f"lifted at {now}",
        "lastTransitionTime": now,
    }
    return await _write(kube, pod, condition)


@dataclass
class NodeHolds:
    """The holds a run's nodes took and have not lifted (node -> its held pod), and a note of
    each change."""

    standing: dict[str, Any] = field(default_factory=dict)
    changes: list[str] = field(default_factory=list)

    async def take(
        self,
        kube: LabHandle,
        pods: dict[str, Any],
        rng: random.Random,
        *,
        longest: float,
        first: int = 2,
    ) -> None:
        """One of the first `first` nodes of `pods` (node -> its pod) in name order, the next
        ones a rollout without waves takes, not holding already, holds its pod for 2 s to
        `longest`."""
        free = sorted(node for node in pods if node not in self.standing)[:first]
        if not free:
            return
        node = rng.choice(free)
        seconds = rng.uniform(2.0, longest)
        if await hold(kube, pods[node], seconds=seconds, why="chaos") is not None:
            self.standing[node] = pods[node]
            self.changes.append(f"{node} held {math.ceil(seconds)} s")

    async def lift(self, kube: LabHandle, node: str) -> None:
        if await lift(kube, self.standing.pop(node)):
            self.changes.append(f"{node} lifted")

    async def lift_all(self, kube: LabHandle) -> None:
        for node in sorted(self.standing):
            await self.lift(kube, node)
