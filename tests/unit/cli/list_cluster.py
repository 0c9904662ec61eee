"""A cluster for the tests of `edgerollout list`: opted-in DaemonSets in known states, on the fake
API, as the API server serves them."""

from __future__ import annotations

import copy
from datetime import UTC, datetime

from edgerollout.kube.api import CONTROLLER_REVISIONS, DAEMONSETS, NODES, PODS
from tests.unit.kube.fake_api import FakeApi
from tests.unit.kube.objects import (
    ADVANCED,
    JSON,
    MAX_UNAVAILABLE,
    NEW,
    OLD,
    STRATEGY,
    daemonset_json,
    node_json,
    pod_json,
    revision_json,
)

NOW = datetime(2025, 3, 1, 12, 0, 0, tzinfo=UTC)
PAUSED = {**ADVANCED, "edgerollout.io/paused": "true"}
NODES_OF_THE_LAB = ("edge-1", "edge-2", "edge-3")


class ClosingApi(FakeApi):
    closed = False

    async def close(self) -> None:
        self.closed = True


def in_namespace(obj: JSON, namespace: str) -> JSON:
    moved = copy.deepcopy(obj)
    moved["metadata"]["namespace"] = namespace
    return moved


def put_daemonset(
    api: FakeApi,
    name: str,
    annotations: dict[str, str],
    pods: dict[str, str],
    *,
    created: str = "2025-03-01T11:55:00Z",
    namespace: str = "default",
) -> None:
    """A DaemonSet `name` whose newest ControllerRevision (NEW) was `created`, and one pod of
    the given revision hash on each node of `pods`."""
    uid = f"uid-{namespace}-{name}"
    api.put(
        DAEMONSETS, in_namespace(daemonset_json(name, uid=uid, annotations=annotations), namespace)
    )
    for number, (hash_, when) in enumerate(((OLD, "2025-02-01T00:00:00Z"), (NEW, created)), 1):
        revision = revision_json(
            f"{name}-{hash_}", number=number, revision_hash=hash_, owner_uid=uid
        )
        revision["metadata"]["creationTimestamp"] = when
        revision["metadata"]["labels"]["app"] = name  # the DaemonSet's selector
        api.put(CONTROLLER_REVISIONS, in_namespace(revision, namespace))
    for node, hash_ in pods.items():
        pod = pod_json(f"{name}-{node}", node=node, revision_hash=hash_, owner_uid=uid, app=name)
        api.put(PODS, in_namespace(pod, namespace))


def put_nodes(api: FakeApi, *, not_ready: tuple[str, ...] = ()) -> None:
    for name in NODES_OF_THE_LAB:
        api.put(NODES, node_json(name, ready="False" if name in not_ready else "True"))


def shop(api: FakeApi) -> None:
    """Four opted-in DaemonSets of `default` in four states, and one that is not opted in; edge-3
    is offline."""
    put_nodes(api, not_ready=("edge-3",))
    everywhere_new = dict.fromkeys(NODES_OF_THE_LAB, NEW)
    put_daemonset(
        api,
        "agent",
        PAUSED,
        {"edge-1": NEW, "edge-2": OLD, "edge-3": NEW},
        created="2025-03-01T11:55:00Z",
    )
    put_daemonset(api, "bad", {STRATEGY: "Rolling"}, everywhere_new, created="2025-03-01T09:00:00Z")
    put_daemonset(
        api,
        "logs",
        {**ADVANCED, MAX_UNAVAILABLE: "30%"},
        {"edge-1": NEW, "edge-2": NEW, "edge-3": OLD},
        created="2025-03-01T11:58:30Z",
    )
    put_daemonset(api, "web", ADVANCED, everywhere_new, created="2025-02-27T12:00:00Z")
    put_daemonset(api, "plain", {}, everywhere_new)
    # A pod no DaemonSet controls, which the list reads past.
    api.put(PODS, pod_json("job-x", node="edge-1", owner_uid="uid-job", owner_kind="Job"))
