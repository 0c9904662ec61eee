"""The same cases played with edgerollout and with OpenYurt's yurt-manager v1.5.1 (design §11.9),
on the same 4-node lab: what each controller does, and how long it takes.

Each test is parametrised by controller and asserts each one's exact outcome, the differences
included; `docs/openyurt-comparison.md` tabulates them. A test starts the controller itself, since
some cases need the DaemonSet in place first or the controller restarted. Timings are printed as
`comparison <case> <controller>: <what> <seconds> s` (run with `-s` to see them).

Who deleted which pod is read from the API server's audit log: edgerollout runs as the lab's
admin, the peer as its own ServiceAccount. The OpenYurt cases are skipped unless the peer is built
(`./dev lab build --peer openyurt`).
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from edgerollout.kube.recorder import COMPONENT as EDGEROLLOUT_COMPONENT
from edgerollout_lab.cluster import Lab
from edgerollout_lab.control_plane import audit_log_path
from edgerollout_lab.kwok_stages import CRASHLOOP_IMAGE
from edgerollout_lab.openyurt import (
    CONTROLLER_NAME,
    SERVICE_ACCOUNT,
    SERVICE_ACCOUNT_NAMESPACE,
    resyncing,
    start_yurt_manager,
)
from tests.e2e.support.audit import audited_pod_deletions
from tests.e2e.support.controller_process import controller_for
from tests.e2e.support.lab import (
    LabHandle,
    by_node,
    condition,
    daemonset,
    hold_for,
    images,
    pod_admission_rule,
    pod_ready,
    restore_node,
    served,
    set_image,
    wait_for,
)
from tests.e2e.support.peer import needs_peer
from tests.e2e.support.seed import (
    NAME,
    NEW,
    OLD,
    ON_DELETE,
    SELECTOR,
    newest_revision_hash,
    running_everywhere,
    running_on,
    seed_daemonset,
)
from tests.e2e.support.unavailability_watcher import UnavailabilityWatcher

pytestmark = pytest.mark.lab(nodes=4)

EDGEROLLOUT, OPENYURT_PEER = "edgerollout", "openyurt"
CONTROLLERS = [
    pytest.param(EDGEROLLOUT, id=EDGEROLLOUT),
    pytest.param(
        OPENYURT_PEER,
        id=OPENYURT_PEER,
        marks=needs_peer,
    ),
]
# Whom the audit log names for each controller's deletions.
DELETING_USER = {
    EDGEROLLOUT: "lab-admin",
    OPENYURT_PEER: f"system:serviceaccount:{SERVICE_ACCOUNT_NAMESPACE}:{SERVICE_ACCOUNT}",
}
NATIVE_DAEMONSET_CONTROLLER = "system:serviceaccount:kube-system:daemon-set-controller"
POD_GARBAGE_COLLECTOR = "system:serviceaccount:kube-system:pod-garbage-collector"
NODES = ["edge-1", "edge-2", "edge-3", "edge-4"]
STRATEGY = "apps.openyurt.io/update-strategy"
MAX_UNAVAILABLE = "apps.openyurt.io/max-unavailable"
NEED_UPGRADE = "PodNeedUpgrade"
# Long enough that a rollout of one node at a time takes seconds: a restart lands in the middle of
# it, and deletions made at once are told apart from deletions made one after another.
MIN_READY_SECONDS = 3


def advanced(max_unavailable: str) -> dict[str, str]:
    return {STRATEGY: "AdvancedRollingUpdate", MAX_UNAVAILABLE: max_unavailable}


def record(case: str, which: str, what: str, since: float) -> float:
    """Print one timing for the comparison document; the seconds since `since`."""
    seconds = time.monotonic() - since
    print(f"comparison {case} {which}: {what} {seconds:.1f} s")
    return seconds


@contextlib.asynccontextmanager
async def running(
    which: str,
    lab: Lab,
    namespace: str,
    log: Path,
    request: pytest.FixtureRequest,
    *,
    resync: bool = True,
) -> AsyncIterator[None]:
    """The controller `which`, started and ready (edgerollout scoped to the namespace; the peer
    watches them all, its DaemonSets resynced unless `resync` is False: `resyncing`); stopped
    when the block ends, and it must exit 0."""
    if which == EDGEROLLOUT:
        async with controller_for(lab, namespace, log, request):
            yield
        return
    handle = await start_yurt_manager(lab)
    try:
        async with resyncing(lab.kubeconfig) if resync else contextlib.nullcontext():
            yield
    except BaseException:
        print(f"--- yurt-manager log ---\n{handle.run_log_text()}")
        raise
    finally:
        code = handle.stop()
        assert code == 0, f"yurt-manager exited {code}:\n{handle.run_log_text()}"


def deletions(lab: Lab, which: str, namespace: str, *, offset: int) -> list[dict[str, Any]]:
    """The pod deletions `which` asked for in the namespace, oldest first."""
    return [
        entry
        for entry in audited_pod_deletions(audit_log_path(lab.folder), namespace, offset=offset)
        if entry["user"]["username"] == DELETING_USER[which]
    ]


def deleted_names(lab: Lab, which: str, namespace: str, *, offset: int) -> list[str]:
    return [str(e["objectRef"]["name"]) for e in deletions(lab, which, namespace, offset=offset)]


async def pod_names(kube: LabHandle, namespace: str) -> dict[str, str]:
    """Node -> the name of the DaemonSet's live pod on it."""
    return {
        pod.spec.node_name: pod.metadata.name
        for pod in await kube.pods(namespace, SELECTOR)
        if pod.metadata.deletion_timestamp is None
    }


async def notices(kube: LabHandle, namespace: str) -> list[tuple[str, str, str]]:
    """(controller, type, reason) of every Event either controller wrote in the namespace except
    its deletions', oldest first."""
    listed = await kube.core.list_namespaced_event(namespace)
    found = []
    for event in listed.items:
        source = event.reporting_component or (event.source.component if event.source else "")
        if source in (EDGEROLLOUT_COMPONENT, CONTROLLER_NAME) and event.reason != (
            "SuccessfulDelete"
        ):
            found.append((event.metadata.creation_timestamp, (source, event.type, event.reason)))
    return [notice for _, notice in sorted(found)]


async def create_daemonset(
    kube: LabHandle, namespace: str, *, image: str, annotations: dict[str, str]
) -> dict[str, str]:
    """The seed's DaemonSet with minReadySeconds; node -> UID of its Ready pod on each node."""
    manifest = daemonset(NAME, image=image, strategy=ON_DELETE, annotations=annotations)
    manifest["spec"]["minReadySeconds"] = MIN_READY_SECONDS
    await kube.apps.create_namespaced_daemon_set(namespace, manifest)
    found = await running_everywhere(kube, namespace, image, NODES)

    # A pod Ready for less than minReadySeconds is not available, and both controllers replace an
    # outdated pod that is not available at once: wait until the native controller counts them.
    async def all_available() -> bool:
        ds = await kube.apps.read_namespaced_daemon_set(NAME, namespace)
        return bool(ds.status.number_available == len(NODES))

    await wait_for(all_available, timeout=MIN_READY_SECONDS + 15, what="every pod available")
    return found


async def unchanged_for(kube: LabHandle, namespace: str, seconds: float, what: str) -> None:
    """Assert that the namespace's pods stay exactly as they are now (same UIDs, none deleted)."""
    before = [p.metadata.uid for p in await kube.pods(namespace, SELECTOR)]

    async def same() -> bool:
        pods = await kube.pods(namespace, SELECTOR)
        return [p.metadata.uid for p in pods] == before and all(
            p.metadata.deletion_timestamp is None for p in pods
        )

    await hold_for(same, seconds=seconds, what=what)


async def touch(kube: LabHandle, namespace: str) -> None:
    """A DaemonSet change that changes nothing a controller reads: an annotation of no meaning."""
    patch = {"metadata": {"annotations": {"e2e.edgerollout.io/touched": str(time.time())}}}
    await kube.apps.patch_namespaced_daemon_set(NAME, namespace, patch)


# --- seed 001 §2, with `auto`: two nodes cut, the image changed, the nodes back ------------------


@pytest.mark.parametrize("which", CONTROLLERS)
async def test_seed_auto_upgrades_the_connected_nodes_then_each_node_back_without_a_change(
    which: str, kube: LabHandle, namespace: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    offset = audit_log_path(kube.lab.folder).stat().st_size
    cut, connected = ["edge-3", "edge-4"], ["edge-1", "edge-2"]
    async with running(which, kube.lab, namespace, tmp_path / "controller.log", request):
        # The seed's manifest: `auto`, no max-unavailable (10 % of 4 nodes: 1 at a time).
        before = await seed_daemonset(kube, namespace, annotations={STRATEGY: "auto"}, nodes=NODES)
        old_names = await pod_names(kube, namespace)
        await kube.cut_off(*cut)
        changed_at = time.monotonic()
        await set_image(kube, namespace, NAME, NEW)
        await running_on(kube, namespace, NEW, connected)
        record("seed-auto", which, "image change -> both connected nodes upgraded", changed_at)

        async def cut_nodes_keep_their_pods() -> bool:
            grouped = by_node(await kube.pods(namespace, SELECTOR))
            return all(
                [p.metadata.uid for p in grouped.get(node, [])] == [before[node]]
                and grouped[node][0].metadata.deletion_timestamp is None
                for node in cut
            )

        await hold_for(cut_nodes_keep_their_pods, seconds=5, what="the cut nodes keeping old pods")
        # The lab's `connect` returns once the nodes' Leases are renewed and their pods touched:
        # both are then Ready again, and nothing of the DaemonSet has changed.
        restored_at = time.monotonic()
        await kube.reconnect(*cut)
        after = await running_everywhere(kube, namespace, NEW, NODES, timeout=60)
        record("seed-auto", which, "links restored -> both upgraded", restored_at)

    assert not set(before.values()) & set(after.values())
    deleted = deleted_names(kube.lab, which, namespace, offset=offset)
    assert sorted(deleted) == sorted(old_names.values())
    # edgerollout runs `auto` as AdvancedRollingUpdate and says the name is deprecated; OpenYurt
    # v1.5 takes it silently.
    assert (
        await notices(kube, namespace)
        == {
            EDGEROLLOUT: [(EDGEROLLOUT_COMPONENT, "Normal", "DeprecatedUpdateStrategy")],
            OPENYURT_PEER: [],
        }[which]
    )


# --- a DaemonSet outdated before the controller started -----------------------------------------


@pytest.mark.parametrize("which", CONTROLLERS)
async def test_a_daemonset_outdated_before_the_controller_started(
    which: str, kube: LabHandle, namespace: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    before = await seed_daemonset(kube, namespace, annotations=advanced("1"), nodes=NODES)
    first_hash = await newest_revision_hash(kube, namespace)
    await set_image(kube, namespace, NAME, NEW)

    async def new_revision() -> bool:
        return await newest_revision_hash(kube, namespace) != first_hash

    await wait_for(new_revision, timeout=15, what="the native controller's new ControllerRevision")
    offset = audit_log_path(kube.lab.folder).stat().st_size
    log = tmp_path / "controller.log"
    async with (
        running(which, kube.lab, namespace, log, request, resync=False),
        contextlib.AsyncExitStack() as resync,
    ):
        started_at = time.monotonic()
        if which == OPENYURT_PEER:
            # It ignores the create events of its first list and reconciles on DaemonSet updates
            # only: an outdated DaemonSet nobody changes is never looked at. Resynced only once
            # it has been changed (a resync is a change).
            await unchanged_for(kube, namespace, 20, "every outdated pod kept after the start")
            assert deleted_names(kube.lab, which, namespace, offset=offset) == []
            started_at = time.monotonic()
            await touch(kube, namespace)
            await resync.enter_async_context(resyncing(kube.lab.kubeconfig))
        after = await running_everywhere(kube, namespace, NEW, NODES, timeout=60)
        record(
            "existing-daemonset",
            which,
            {EDGEROLLOUT: "ready -> all upgraded", OPENYURT_PEER: "a later change -> all upgraded"}[
                which
            ],
            started_at,
        )
    assert not set(before.values()) & set(after.values())
    assert len(deleted_names(kube.lab, which, namespace, offset=offset)) == len(NODES)


# --- a Node object deleted ----------------------------------------------------------------------


@pytest.mark.parametrize("which", CONTROLLERS)
async def test_a_deleted_node_and_its_orphan_pod(
    which: str, kube: LabHandle, namespace: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    remaining, gone = ["edge-1", "edge-2", "edge-3"], "edge-4"
    try:
        async with running(which, kube.lab, namespace, tmp_path / "controller.log", request):
            before = await seed_daemonset(kube, namespace, annotations=advanced("1"), nodes=NODES)
            old_names = await pod_names(kube, namespace)
            await kube.cut_off(gone)
            await kube.core.delete_node(gone)

            async def node_deleted() -> bool:
                listed = await kube.core.list_node()
                return gone not in {node.metadata.name for node in listed.items}

            await wait_for(node_deleted, timeout=30, what=f"Node {gone} deleted")
            offset = audit_log_path(kube.lab.folder).stat().st_size
            changed_at = time.monotonic()
            await set_image(kube, namespace, NAME, NEW)
            after = await running_on(kube, namespace, NEW, remaining, timeout=150)
            record("deleted-node", which, "image change -> remaining nodes upgraded", changed_at)
            grouped = by_node(await kube.pods(namespace, SELECTOR))
            orphan = [p.metadata.uid for p in grouped.get(gone, [])]
    finally:
        await restore_node(kube, gone)

    assert not {before[node] for node in remaining} & set(after.values())
    entries = audited_pod_deletions(audit_log_path(kube.lab.folder), namespace, offset=offset)
    order = [(e["user"]["username"], e["objectRef"]["name"]) for e in entries]
    mine = [name for user, name in order if user == DELETING_USER[which]]
    assert sorted(mine) == sorted(old_names[node] for node in remaining)
    if which == EDGEROLLOUT:
        # The missing node is skipped: the rollout is done while the orphan pod still waits for
        # the pod garbage collector (40 s for a pod on a missing node).
        assert orphan == [before[gone]]
    else:
        # Its reconcile fails on the missing Node (a Get of each pod's node) and deletes nothing
        # until the pod garbage collector has removed the orphan pod.
        assert orphan == []
        collected = order.index((POD_GARBAGE_COLLECTOR, old_names[gone]))
        first = order.index((DELETING_USER[which], mine[0]))
        assert collected < first, order


# --- bad max-unavailable values -----------------------------------------------------------------

# What each controller does with the value, on 4 nodes whose pods are all outdated: `None` for
# nothing deleted at all, else how many pods it deletes at once.
BAD_VALUES = {
    # edgerollout refuses every value that is not a count or a percentage, with a Warning Event.
    ("abc", EDGEROLLOUT): None,
    ("-1", EDGEROLLOUT): None,
    # Above the base: the base, every node at once (as Kubernetes clamps it).
    ("150%", EDGEROLLOUT): 4,
    # OpenYurt fails the reconcile on "abc" (an error in its log, retried, no Event), reads "-1"
    # as a budget of -1 (nothing available to delete), and 150 % of 4 as 6.
    ("abc", OPENYURT_PEER): None,
    ("-1", OPENYURT_PEER): None,
    ("150%", OPENYURT_PEER): 4,
}


@pytest.mark.parametrize("value", ["abc", "-1", "150%"])
@pytest.mark.parametrize("which", CONTROLLERS)
async def test_bad_max_unavailable_values(
    which: str,
    value: str,
    kube: LabHandle,
    namespace: str,
    tmp_path: Path,
    request: pytest.FixtureRequest,
) -> None:
    expected = BAD_VALUES[(value, which)]
    async with running(which, kube.lab, namespace, tmp_path / "controller.log", request):
        await create_daemonset(kube, namespace, image=OLD, annotations=advanced(value))
        old_names = await pod_names(kube, namespace)
        offset = audit_log_path(kube.lab.folder).stat().st_size
        changed_at = time.monotonic()
        await set_image(kube, namespace, NAME, NEW)
        if expected is None:
            await wait_for(new_pods_wanted(kube, namespace), timeout=15, what="a new revision")
            await unchanged_for(kube, namespace, 10, "every outdated pod kept")
        else:
            await running_everywhere(kube, namespace, NEW, NODES, timeout=60)
            record(f"max-unavailable-{value}", which, "image change -> all upgraded", changed_at)

    deleted = deletions(kube.lab, which, namespace, offset=offset)
    found = await notices(kube, namespace)
    if expected is None:
        assert deleted == []
        assert (
            found
            == {
                EDGEROLLOUT: [(EDGEROLLOUT_COMPONENT, "Warning", "InvalidMaxUnavailable")],
                OPENYURT_PEER: [],
            }[which]
        )
        return
    assert found == []
    assert sorted(e["objectRef"]["name"] for e in deleted) == sorted(old_names.values())
    # At once: every deletion before any new pod could be available (minReadySeconds).
    spread = at(deleted[-1]) - at(deleted[0])
    assert spread < MIN_READY_SECONDS, spread


def new_pods_wanted(kube: LabHandle, namespace: str) -> Callable[[], Awaitable[bool]]:
    """A probe: the native controller has seen the DaemonSet's latest change."""

    async def probe() -> bool:
        ds = await kube.apps.read_namespaced_daemon_set(NAME, namespace)
        return bool(ds.status.observed_generation == ds.metadata.generation)

    return probe


def at(entry: dict[str, Any]) -> float:
    """When the API server received the audited request, in seconds since the epoch."""
    return datetime.datetime.fromisoformat(entry["requestReceivedTimestamp"]).timestamp()


# --- a node holding two pods of the DaemonSet ---------------------------------------------------


def native_controller_may_not_delete(
    kube: LabHandle, namespace: str
) -> contextlib.AbstractAsyncContextManager[None]:
    """An admission rule refusing the native DaemonSet controller's pod deletions in the
    namespace, so that a surplus pod stays (it removes surplus daemon pods in milliseconds)."""
    return pod_admission_rule(
        kube,
        namespace,
        name=f"no-native-deletes-{namespace}",
        operation="DELETE",
        expression=f"request.userInfo.username != '{NATIVE_DAEMONSET_CONTROLLER}'",
        message="the test keeps a surplus pod on a node",
    )


async def refused_to_the_native_controller(kube: LabHandle, namespace: str, pod: str) -> bool:
    """Whether a dry-run deletion of `pod` as the native DaemonSet controller is refused."""
    impersonating = client.ApiClient(kube.api.configuration)
    impersonating.set_default_header("Impersonate-User", NATIVE_DAEMONSET_CONTROLLER)
    async with impersonating:
        try:
            await client.CoreV1Api(impersonating).delete_namespaced_pod(
                pod, namespace, dry_run="All"
            )
        except ApiException as error:
            if error.status in (403, 422):
                return True
            raise
    return False


async def second_pod_on(kube: LabHandle, namespace: str, node: str) -> str:
    """A copy of the DaemonSet's pod on `node` (same labels, owner and spec), as a surplus pod the
    native controller has not removed yet; its name, once it is Ready."""
    original = by_node(await kube.pods(namespace, SELECTOR))[node][0]
    spec = served(original.spec)
    manifest: Any = {
        "metadata": {
            "generateName": f"{NAME}-",
            "labels": dict(original.metadata.labels),
            "ownerReferences": served(original.metadata.owner_references),
        },
        "spec": spec,
    }
    created = await kube.core.create_namespaced_pod(namespace, manifest)

    async def ready() -> bool:
        return pod_ready(await kube.core.read_namespaced_pod(created.metadata.name, namespace))

    await wait_for(ready, timeout=30, what=f"the second pod on {node} Ready")
    return str(created.metadata.name)


@pytest.mark.parametrize("which", CONTROLLERS)
async def test_a_node_with_two_pods_is_left_alone_and_counted_unavailable(
    which: str, kube: LabHandle, namespace: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    doubled, others = "edge-1", ["edge-2", "edge-3", "edge-4"]
    async with (
        native_controller_may_not_delete(kube, namespace),
        running(which, kube.lab, namespace, tmp_path / "controller.log", request),
    ):
        await create_daemonset(kube, namespace, image=OLD, annotations=advanced("2"))
        old_names = await pod_names(kube, namespace)
        await wait_for(
            lambda: refused_to_the_native_controller(kube, namespace, old_names[doubled]),
            timeout=15,
            what="the policy refusing the native controller's deletions",
        )
        surplus = await second_pod_on(kube, namespace, doubled)
        doubled_pods = sorted([old_names[doubled], surplus])
        offset = audit_log_path(kube.lab.folder).stat().st_size
        async with UnavailabilityWatcher(
            kube.core,
            namespace,
            selector=SELECTOR,
            nodes=NODES,
            min_ready_seconds=MIN_READY_SECONDS,
        ) as watcher:
            changed_at = time.monotonic()
            await set_image(kube, namespace, NAME, NEW)
            await running_on(kube, namespace, NEW, others, timeout=90)
            record("two-pods", which, "image change -> the other 3 nodes upgraded", changed_at)

            async def doubled_node_untouched() -> bool:
                pods = by_node(await kube.pods(namespace, SELECTOR)).get(doubled, [])
                return sorted(p.metadata.name for p in pods) == doubled_pods and all(
                    p.metadata.deletion_timestamp is None for p in pods
                )

            await hold_for(doubled_node_untouched, seconds=5, what=f"{doubled}'s two pods kept")

    assert sorted(deleted_names(kube.lab, which, namespace, offset=offset)) == sorted(
        old_names[node] for node in others
    )
    # The doubled node counts as unavailable, so a budget of 2 leaves one deletion at a time.
    # OpenYurt groups pods by node and does not see a node between its deleted pod and the
    # replacement: a reconcile in that moment (milliseconds here) deletes one more. It did so in
    # every run on the lab, but it is a race, so both counts are its outcome.
    unavailable = {EDGEROLLOUT: {2}, OPENYURT_PEER: {2, 3}}[which]
    print(
        f"comparison two-pods {which}: nodes unavailable at once, at most {watcher.max_unavailable}"
    )
    assert watcher.max_unavailable in unavailable, watcher.timeline()


# --- OTA: the condition's fields, and on which pods ---------------------------------------------


@pytest.mark.parametrize("which", CONTROLLERS)
async def test_ota_condition_fields_and_the_pods_that_carry_them(
    which: str, kube: LabHandle, namespace: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    cut = "edge-4"
    async with running(which, kube.lab, namespace, tmp_path / "controller.log", request):
        before = await seed_daemonset(kube, namespace, annotations={STRATEGY: "OTA"}, nodes=NODES)
        first_hash = await newest_revision_hash(kube, namespace)

        async def marks() -> dict[str, tuple[str, str, str, str, bool]]:
            """Node -> (pod UID, status, reason, message, terminating) of PodNeedUpgrade."""
            found = {}
            for pod in await kube.pods(namespace, SELECTOR):
                mark = condition(pod, NEED_UPGRADE)
                if mark is not None:
                    found[pod.spec.node_name] = (
                        pod.metadata.uid,
                        str(mark.status),
                        mark.reason,
                        mark.message,
                        pod.metadata.deletion_timestamp is not None,
                    )
            return found

        old_message = {EDGEROLLOUT: f"controllerrevision: {first_hash}", OPENYURT_PEER: ""}[which]

        async def all_false() -> bool:
            return await marks() == {
                node: (uid, "False", "", old_message, False) for node, uid in before.items()
            }

        await wait_for(all_false, timeout=30, what=f"{NEED_UPGRADE}=False on every pod")
        # A pod deleted on a cut node stays Terminating: no kubelet confirms.
        await kube.cut_off(cut)
        await kube.core.delete_namespaced_pod(
            by_node(await kube.pods(namespace, SELECTOR))[cut][0].metadata.name, namespace
        )
        # The deletion and the new revision reach a controller on two watches, in either order:
        # a revision seen first marks the pod as it was before its deletion. The image changes
        # once the deletion has had time to reach the caches (edgerollout reads its watches every
        # 50 ms), so that what is asserted is a terminating pod left alone.
        await asyncio.sleep(2)
        # The test deletes as the lab's admin, as edgerollout does: count from here on.
        offset = audit_log_path(kube.lab.folder).stat().st_size
        changed_at = time.monotonic()
        await set_image(kube, namespace, NAME, NEW)

        async def second_hash() -> str | None:
            found = await newest_revision_hash(kube, namespace)
            return found if found != first_hash else None

        new_hash = await wait_for(second_hash, timeout=15, what="a new ControllerRevision")
        new_message = {EDGEROLLOUT: f"controllerrevision: {new_hash}", OPENYURT_PEER: ""}[which]
        expected = {
            node: (uid, "True", "", new_message, node == cut) for node, uid in before.items()
        }
        if which == EDGEROLLOUT:
            # A terminating pod is going away and is left as it was.
            expected[cut] = (before[cut], "False", "", old_message, True)

        async def all_marked() -> bool:
            return await marks() == expected

        await wait_for(all_marked, timeout=30, what=f"{NEED_UPGRADE} as {expected}")
        record("ota-marks", which, "image change -> every pod marked", changed_at)
        await hold_for(all_marked, seconds=3, what="the marks staying as they are")
    assert deleted_names(kube.lab, which, namespace, offset=offset) == []


# --- a restart in the middle of a rollout -------------------------------------------------------


@pytest.mark.parametrize("which", CONTROLLERS)
async def test_a_restart_mid_rollout_keeps_the_budget(
    which: str, kube: LabHandle, namespace: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    log = tmp_path / "controller.log"
    before = await create_daemonset(kube, namespace, image=OLD, annotations=advanced("1"))
    offset = audit_log_path(kube.lab.folder).stat().st_size
    async with UnavailabilityWatcher(
        kube.core, namespace, selector=SELECTOR, nodes=NODES, min_ready_seconds=MIN_READY_SECONDS
    ) as watcher:
        async with running(which, kube.lab, namespace, log, request):
            changed_at = time.monotonic()
            await set_image(kube, namespace, NAME, NEW)

            async def first_deletion() -> bool:
                return bool(deletions(kube.lab, which, namespace, offset=offset))

            await wait_for(first_deletion, timeout=30, interval=0.05, what="a first deletion")
        # Stopped right after its first deletion, and started again at once.
        async with running(which, kube.lab, namespace, log, request):
            restarted_at = time.monotonic()
            after = await running_everywhere(kube, namespace, NEW, NODES, timeout=90)
            record("restart", which, "restarted -> all upgraded", restarted_at)
            record("restart", which, "image change -> all upgraded", changed_at)

    assert not set(before.values()) & set(after.values())
    assert len(deleted_names(kube.lab, which, namespace, offset=offset)) == len(NODES)
    print(
        f"comparison restart {which}: nodes unavailable at once, at most {watcher.max_unavailable}"
    )
    # edgerollout rebuilds the budget from the API server and holds it. OpenYurt's controller,
    # restarted, may see two replaced pods turn available in one moment and delete one node too
    # many (its cache still shows the next node's old pod available): a race, seen in 2 of 5 runs
    # on a loaded machine (docs/openyurt-comparison.md), so both counts are its outcome.
    unavailable = {EDGEROLLOUT: {1}, OPENYURT_PEER: {1, 2}}[which]
    assert watcher.max_unavailable in unavailable, watcher.timeline()


# --- old pods that are not available ------------------------------------------------------------


@pytest.mark.parametrize("which", CONTROLLERS)
async def test_old_pods_that_are_not_available(
    which: str, kube: LabHandle, namespace: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    broken, healthy = ["edge-1", "edge-2"], ["edge-3", "edge-4"]
    # Before any controller runs: a crash-looping revision reaches edge-1 and edge-2 only (their
    # pods deleted by hand, as OnDelete wants), edge-3 and edge-4 keep the healthy first one.
    await create_daemonset(kube, namespace, image=OLD, annotations=advanced("1"))
    await set_image(kube, namespace, NAME, CRASHLOOP_IMAGE)
    for pod in await kube.pods(namespace, SELECTOR):
        if pod.spec.node_name in broken:
            await kube.core.delete_namespaced_pod(pod.metadata.name, namespace)

    async def two_broken() -> dict[str, str] | None:
        grouped = by_node(await kube.pods(namespace, SELECTOR))
        if sorted(grouped) != NODES or any(len(pods) != 1 for pods in grouped.values()):
            return None
        states = {node: (images(pods[0]), pod_ready(pods[0])) for node, pods in grouped.items()}
        wanted = {node: ([CRASHLOOP_IMAGE], False) for node in broken} | {
            node: ([OLD], True) for node in healthy
        }
        if states != wanted:
            return None
        return {node: pods[0].metadata.name for node, pods in grouped.items()}

    old_names = await wait_for(two_broken, timeout=30, what="edge-1, edge-2 crash-looping")
    offset = audit_log_path(kube.lab.folder).stat().st_size
    async with (
        UnavailabilityWatcher(
            kube.core,
            namespace,
            selector=SELECTOR,
            nodes=NODES,
            min_ready_seconds=MIN_READY_SECONDS,
        ) as watcher,
        running(which, kube.lab, namespace, tmp_path / "controller.log", request),
    ):
        changed_at = time.monotonic()
        await set_image(kube, namespace, NAME, NEW)
        await running_everywhere(kube, namespace, NEW, NODES, timeout=60)
        record("unavailable-old-pods", which, "image change -> all upgraded", changed_at)

    deleted = deletions(kube.lab, which, namespace, offset=offset)
    names = [str(e["objectRef"]["name"]) for e in deleted]
    assert sorted(names) == sorted(old_names.values())
    first_batch = [
        name for e, name in zip(deleted, names, strict=True) if at(e) - at(deleted[0]) < 1
    ]
    if which == EDGEROLLOUT:
        # Both broken pods at once, counted as the unavailable nodes they are: no healthy pod goes
        # until they are replaced (Kubernetes' rule).
        assert sorted(first_batch) == sorted(old_names[node] for node in broken)
        assert watcher.max_unavailable == 2, watcher.timeline()
    else:
        # Both broken pods and, outside the budget they do not count against, one healthy pod. Its
        # next pass may run before the replacements reach its cache: a node with no pod is not
        # counted either (its getNodesToDaemonPods lists only nodes holding one), so the last
        # healthy pod may go in the same second (docs/openyurt-comparison.md).
        assert len(first_batch) in {3, 4}, deleted
        assert set(names[:3]) > {old_names[node] for node in broken}
        assert set(first_batch) > {old_names[node] for node in broken}
        assert watcher.max_unavailable in {3, 4}, watcher.timeline()
        assert watcher.max_unavailable >= len(first_batch), watcher.timeline()
