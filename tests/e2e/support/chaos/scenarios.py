"""The faults of each chaos scenario. Each one is seeded (`chaos.rng`), stays within its window,
and leaves everything it broke restored when it returns."""

from __future__ import annotations

import asyncio
import base64
import json
import time
import urllib.request
from typing import Any

from kubernetes_asyncio.client.exceptions import ApiException

from edgerollout.domain.vocabulary import (
    ADVANCED_ROLLING_UPDATE,
    BATCH_SOAK_ANNOTATION,
    BATCHES_ANNOTATION,
    MAX_HOLD_ANNOTATION,
    OTA,
    PARTITION_ANNOTATION,
    PAUSED_ANNOTATION,
)
from edgerollout_lab import cluster
from edgerollout_lab.control_plane import NODE_MONITOR_GRACE_SECONDS
from tests.e2e.support.chaos.fleet import LEASE, RENEW_DEADLINE
from tests.e2e.support.chaos.harness import (
    NAME,
    NEW,
    NEWER,
    OLD,
    SELECTOR,
    Chaos,
    Scenario,
    manifest,
    opt_in,
)
from tests.e2e.support.chaos.recovery import Outage
from tests.e2e.support.lab import by_node, images, set_image, wait_for


async def controller_sigkill(chaos: Chaos) -> None:
    """SIGKILL the only replica at random moments; its supervisor starts it again."""
    while chaos.remaining() > 1:
        await chaos.pause(0.5, 4.0)
        chaos.fleet.kill("replica-0")
        await chaos.pause(0.0, 1.5)
        chaos.fleet.revive("replica-0")


async def _lease_holder(chaos: Chaos) -> str | None:
    from kubernetes_asyncio import client

    try:
        lease = await client.CoordinationV1Api(chaos.kube.api).read_namespaced_lease(
            LEASE, chaos.namespace
        )
    except ApiException as error:
        if error.status == 404:
            return None
        raise
    holder = lease.spec.holder_identity
    return str(holder) if holder in chaos.fleet.processes else None


async def leader_sigkill(chaos: Chaos) -> None:
    """SIGKILL whichever replica holds the Lease at random moments; a standby takes over."""
    while chaos.remaining() > 1:
        await chaos.pause(1.0, 4.0)
        holder = await _lease_holder(chaos)
        if holder is None:
            continue
        chaos.fleet.kill(holder)
        await chaos.pause(0.5, 2.0)
        chaos.fleet.revive(holder)


async def _served_again(chaos: Chaos, stop: asyncio.Event) -> float | None:
    """The first moment the API server answered a request after it stopped answering (asked
    every 0.1 s); None if it never stopped before `stop`."""
    refused = False
    while not stop.is_set():
        try:
            async with asyncio.timeout(1.0):
                await chaos.kube.core.list_namespace(limit=1)
        except Exception:
            refused = True
        else:
            if refused:
                return time.time()
        await asyncio.sleep(0.1)
    return None


async def _restart(
    chaos: Chaos, component: str, *, outage: bool = True, down_for: float = 0.0
) -> None:
    down = time.time()
    stop = asyncio.Event()
    probe = asyncio.create_task(_served_again(chaos, stop))
    seconds = await asyncio.to_thread(
        cluster.restart, chaos.kube.lab.folder, component, down_for=down_for
    )
    ready = time.time()
    chaos.notes.append(f"{component} down {seconds:.1f} s")
    stop.set()
    answered = await probe
    if outage:
        # etcd: the API server answers throughout; its outage ends when etcd is healthy again.
        back = answered if component == "kube-apiserver" and answered is not None else ready
        chaos.outages.append(Outage(f"{component} restart", down, back))


async def apiserver_restart(chaos: Chaos) -> None:
    await chaos.pause(0.5, 3.0)
    await _restart(chaos, "kube-apiserver")
    await chaos.pause(chaos.remaining(), chaos.remaining())


async def apiserver_restart_past_the_renew_deadline(chaos: Chaos) -> None:
    """The API server stays down past the leader's renew deadline: its Lease lapses."""
    await chaos.pause(0.5, 3.0)
    await _restart(chaos, "kube-apiserver", down_for=RENEW_DEADLINE + 1.0)
    await chaos.pause(chaos.remaining(), chaos.remaining())


async def etcd_restart(chaos: Chaos) -> None:
    await chaos.pause(0.5, 3.0)
    await _restart(chaos, "etcd")
    await chaos.pause(chaos.remaining(), chaos.remaining())


async def watch_cuts(chaos: Chaos) -> None:
    """Cut the controller's connections (its watches with them) for random spells."""
    assert chaos.relay is not None
    while chaos.remaining() > 1:
        await chaos.pause(0.5, 3.0)
        chaos.relay.cut()
        await chaos.pause(0.2, 3.0)
        chaos.relay.restore()


def _etcd(chaos: Chaos, path: str, body: dict[str, Any]) -> dict[str, Any]:
    state = json.loads((chaos.kube.lab.folder / cluster.STATE_FILE).read_text())
    url = f"http://127.0.0.1:{state['ports']['etcd_client']}{path}"
    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310
        answer: dict[str, Any] = json.loads(response.read())
        return answer


def compact_etcd(chaos: Chaos) -> int:
    """Compact etcd's history up to now (etcd's v3 HTTP gateway); returns the revision."""
    key = base64.b64encode(b"/registry").decode()
    revision = int(_etcd(chaos, "/v3/kv/range", {"key": key, "limit": 1})["header"]["revision"])
    _etcd(chaos, "/v3/kv/compaction", {"revision": revision, "physical": True})
    return revision


async def expired_watches(chaos: Chaos) -> None:
    """Cut the controller off while the cluster moves on, compact etcd's history and restart the
    API server (its watch cache then starts at the present): the controller's watches resume from
    versions the server no longer has, and must list again (410 Gone)."""
    assert chaos.relay is not None
    await chaos.pause(0.5, 2.0)
    cut = time.time()
    chaos.relay.cut()
    await asyncio.sleep(chaos.rng.uniform(1.0, 3.0))
    revision = await asyncio.to_thread(compact_etcd, chaos)
    chaos.notes.append(f"etcd compacted at revision {revision}")
    await _restart(chaos, "kube-apiserver", outage=False)
    chaos.relay.restore()
    chaos.outages.append(Outage("controller cut off, API server restart", cut, time.time()))
    await chaos.pause(chaos.remaining(), chaos.remaining())


FLAPPERS = 2


async def nodes_down(chaos: Chaos) -> None:
    """Before the rollout: the flapping nodes lose their links and turn NotReady."""
    flappers = chaos.rng.sample(chaos.nodes, FLAPPERS)
    chaos.notes.append(f"flapped {', '.join(sorted(flappers))}")
    chaos.flappers = flappers
    await chaos.kube.cut_off(*flappers, timeout=NODE_MONITOR_GRACE_SECONDS + 30)


async def node_flapping(chaos: Chaos) -> None:
    """During the rollout the two nodes come back and go again, over and over: Ready seconds
    after reconnecting, NotReady the grace period after a cut; a pod deleted while the link is
    down stays Terminating until it is back."""

    async def flap(node: str, offset: float) -> None:
        await asyncio.sleep(offset)
        while chaos.remaining() > 2:
            await chaos.kube.connect(node)
            await asyncio.sleep(chaos.rng.uniform(1.0, 5.0))
            if chaos.remaining() < NODE_MONITOR_GRACE_SECONDS:
                break
            await chaos.kube.disconnect(node)
            await asyncio.sleep(NODE_MONITOR_GRACE_SECONDS + chaos.rng.uniform(2.0, 6.0))
        await chaos.kube.connect(node)

    await asyncio.gather(
        *(
            flap(node, index * chaos.rng.uniform(1.0, 4.0))
            for index, node in enumerate(chaos.flappers)
        )
    )
    for node in chaos.flappers:
        await chaos.kube.wait_node_ready(node, "True", timeout=60)


async def image_changed_again(chaos: Chaos) -> None:
    """A new revision while the previous rollout is half done."""

    async def half_done() -> bool:
        return await chaos.rollout_progress() >= len(chaos.nodes) // 2

    await wait_for(half_done, timeout=60, what="half the rollout done", interval=0.1)
    await chaos.pause(0.0, 1.0)
    await set_image(chaos.kube, chaos.namespace, NAME, NEWER)
    chaos.target = NEWER
    await chaos.pause(chaos.remaining(), chaos.remaining())


async def daemonset_deleted(chaos: Chaos) -> None:
    """The DaemonSet is deleted mid-rollout (its pods go with it), then created again."""

    async def started() -> bool:
        return await chaos.rollout_progress() >= 1

    await wait_for(started, timeout=60, what="the rollout under way", interval=0.1)
    await chaos.pause(0.0, 3.0)
    await chaos.kube.apps.delete_namespaced_daemon_set(
        NAME, chaos.namespace, propagation_policy="Background"
    )

    async def pods_gone() -> bool:
        return not await chaos.kube.pods(chaos.namespace, SELECTOR)

    await wait_for(pods_gone, timeout=60, what="the deleted DaemonSet's pods gone")
    await chaos.pause(0.0, 2.0)
    await chaos.kube.apps.create_namespaced_daemon_set(
        chaos.namespace, manifest(NEW, min_ready_seconds=chaos.min_ready_seconds)
    )
    chaos.notes.append("recreated")


async def strategy_switched(chaos: Chaos) -> None:
    """The annotation goes AdvancedRollingUpdate -> OTA -> AdvancedRollingUpdate, repeatedly."""
    switches = 0
    while chaos.remaining() > 1:
        await chaos.pause(0.5, 3.0)
        for strategy in (OTA, ADVANCED_ROLLING_UPDATE):
            patch: Any = {"metadata": {"annotations": opt_in(strategy)}}
            await chaos.kube.apps.patch_namespaced_daemon_set(NAME, chaos.namespace, patch)
            switches += 1
            if strategy == OTA:
                await chaos.pause(0.5, 3.0)
    chaos.notes.append(f"{switches} switches")


async def _annotate(chaos: Chaos, annotations: dict[str, str | None]) -> None:
    """Set the DaemonSet's annotations (None removes one)."""
    patch: Any = {"metadata": {"annotations": annotations}}
    await chaos.kube.apps.patch_namespaced_daemon_set(NAME, chaos.namespace, patch)


async def staging_toggled(chaos: Chaos) -> None:
    """At random moments, the rollout is paused or resumed (the annotation removed or "false"),
    or its partition set to a random count of 0 to every node, or removed; at the end both are
    removed, and the rollout goes on to every node."""
    paused = False
    changes: list[str] = []
    await chaos.pause(0.0, 1.5)
    while chaos.remaining() > 1:
        if chaos.rng.random() < 0.5:
            paused = not paused
            value = "true" if paused else chaos.rng.choice([None, "false"])
            await _annotate(chaos, {PAUSED_ANNOTATION: value})
            changes.append("paused" if paused else f"resumed ({value or 'removed'})")
        else:
            count = chaos.rng.randint(0, len(chaos.nodes))
            value = chaos.rng.choice([None, str(count)]) if count == 0 else str(count)
            await _annotate(chaos, {PARTITION_ANNOTATION: value})
            changes.append(f"partition {value or 'removed'}")
        await chaos.pause(0.3, 3.0)
    await _annotate(chaos, {PAUSED_ANNOTATION: None, PARTITION_ANNOTATION: None})
    chaos.notes.append(f"{len(changes)} changes: {', '.join(changes)}")


BATCHINGS: list[tuple[str | None, str | None]] = [
    ("1, 25%, 100%", "2s"),
    ("2, 50%", None),
    ("1, 3", "1s"),
    ("34%", "3s"),
    (None, None),
]
"""(edgerollout.io/batches, edgerollout.io/batch-soak) a run switches between; the first holds
from before the image changes."""
MAX_HOLDS = ("12s", "4s")
"""edgerollout.io/max-hold: a run lowers it at times, ending the holds that outlast it."""


async def _old_pods(chaos: Chaos) -> dict[str, Any]:
    """The node -> its one running pod of the old image, for the nodes that have one."""
    grouped = by_node(await chaos.kube.pods(chaos.namespace, SELECTOR))
    return {
        node: pods[0]
        for node, pods in grouped.items()
        if len(pods) == 1
        and pods[0].metadata.deletion_timestamp is None
        and images(pods[0]) == [OLD]
    }


async def batches_and_a_hold(chaos: Chaos) -> None:
    """Before the rollout: batches with a soak, a max-hold, and one of the first two nodes
    holding its pod."""
    batches, soak = BATCHINGS[0]
    await _annotate(
        chaos,
        {
            BATCHES_ANNOTATION: batches,
            BATCH_SOAK_ANNOTATION: soak,
            MAX_HOLD_ANNOTATION: MAX_HOLDS[0],
        },
    )
    await chaos.holds.take(chaos.kube, await _old_pods(chaos), chaos.rng, longest=10.0)


async def batches_and_holds_toggled(chaos: Chaos) -> None:
    """At random moments the batches change (another slow start, another soak, or none), one of
    the next two nodes on the old image holds its pod for a few seconds or a node lifts its hold,
    or max-hold is lowered below the holds standing (they end then) and raised again; at the end
    every hold standing is lifted and max-hold restored, and the rollout goes on to every node,
    in batches or not."""
    holds = chaos.holds
    changes = holds.changes
    max_hold = MAX_HOLDS[0]
    await chaos.pause(0.5, 2.0)
    while chaos.remaining() > 1:
        draw = chaos.rng.random()
        if draw < 0.35:
            batches, soak = chaos.rng.choice(BATCHINGS)
            await _annotate(chaos, {BATCHES_ANNOTATION: batches, BATCH_SOAK_ANNOTATION: soak})
            changes.append(f"batches {batches or 'removed'}" + (f", soak {soak}" if soak else ""))
        elif draw < 0.7:
            longest = 10.0 if max_hold == MAX_HOLDS[0] else 3.0
            await holds.take(chaos.kube, await _old_pods(chaos), chaos.rng, longest=longest)
        elif draw < 0.9 and holds.standing:
            await holds.lift(chaos.kube, chaos.rng.choice(sorted(holds.standing)))
        else:
            max_hold = MAX_HOLDS[1] if max_hold == MAX_HOLDS[0] else MAX_HOLDS[0]
            await _annotate(chaos, {MAX_HOLD_ANNOTATION: max_hold})
            changes.append(f"max-hold {max_hold}")
        await chaos.pause(0.3, 2.5)
    await holds.lift_all(chaos.kube)
    await _annotate(chaos, {MAX_HOLD_ANNOTATION: MAX_HOLDS[0]})
    chaos.notes.append(f"{len(changes)} changes: {', '.join(changes)}")


SCENARIOS = [
    Scenario("controller-sigkill", "controller SIGKILLed at random moments", controller_sigkill),
    Scenario(
        "leader-sigkill-standby",
        "leader SIGKILLed at random moments, a standby replica takes over",
        leader_sigkill,
        replicas=2,
        window=14.0,
        long_window=24.0,
    ),
    Scenario(
        "apiserver-restart",
        "kube-apiserver restarted mid-rollout",
        apiserver_restart,
        reference=True,
    ),
    Scenario(
        "apiserver-restart-leader-elected",
        "kube-apiserver restarted under a leader-elected pair (one worker each): the leader "
        "cannot renew its Lease in time",
        apiserver_restart_past_the_renew_deadline,
        replicas=2,
        controller_args=("--workers=1",),
        reference=True,
    ),
    Scenario("etcd-restart", "etcd restarted mid-rollout", etcd_restart, reference=True),
    Scenario(
        "watch-cuts",
        "the controller's connections cut by a relay, repeatedly",
        watch_cuts,
        relay=True,
    ),
    Scenario(
        "watch-expired-410",
        "controller cut off, etcd compacted, API server restarted: watches resume with 410 Gone",
        expired_watches,
        relay=True,
        reference=True,
    ),
    Scenario(
        "node-flapping",
        "two nodes flapping Ready/NotReady during the rollout",
        node_flapping,
        window=32.0,
        long_window=45.0,
        prepare=nodes_down,
        min_ready_seconds=5,
    ),
    Scenario("image-changed-again", "a new revision mid-rollout", image_changed_again),
    Scenario(
        "daemonset-deleted",
        "the DaemonSet deleted mid-rollout, then created again",
        daemonset_deleted,
    ),
    Scenario(
        "strategy-switched",
        "the annotation switched AdvancedRollingUpdate <-> OTA mid-rollout",
        strategy_switched,
    ),
    Scenario(
        "staging-toggled",
        "pause and partition toggled at random moments",
        staging_toggled,
        window=20.0,
        long_window=30.0,
        min_ready_seconds=5,  # a rollout of about 15 s: the toggles find nodes waiting for budget
    ),
    Scenario(
        "batches-and-holds-toggled",
        "batches switched, node holds taken and lifted, max-hold lowered, at random moments",
        batches_and_holds_toggled,
        window=20.0,
        long_window=30.0,
        prepare=batches_and_a_hold,
        min_ready_seconds=5,
    ),
]
