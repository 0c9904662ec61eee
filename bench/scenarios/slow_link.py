"""Scenario 7: a workload's downtime on a real node behind a slow link, with and without pre-pull.

One real node (a kubelet and containerd) pulls the lab's images through its link at a set rate;
each image carries a payload layer of a set size, different in every image, so every first pull
downloads it. One DaemonSet runs on that node only, and is upgraded four times, each time to an
image the node has never pulled:

1. OTA, `imagepull` first: the agent asks for the pre-pull, the pull Job brings the image onto the
   node (`PodImageReady=True`), then `upgrade`;
2. OTA, `upgrade` straight away: the new pod pulls its image after the old one is gone;
3. AdvancedRollingUpdate (the reference): the controller deletes the pod, which then pulls;
4. AdvancedRollingUpdate with `edgerollout.io/prepull: "true"` (design §13.5): the controller asks
   for the pre-pull itself, the pull Job brings the image onto the node, and only then does the
   controller delete the pod;
5. the same with a download window open and the maintenance window closed
   (`edgerollout.io/prepull-window`, `edgerollout.io/maintenance-window`): the image is pulled
   while the pod keeps running; then the maintenance window opens, and its time is the swap.

Downtime is the time with no Ready pod of the DaemonSet on the node: from the `upgrade` request
(OTA; the old container stops at once on SIGTERM) or from the old pod's deletion as the watch sees
it (AdvancedRollingUpdate) to the new pod's Ready as the watch sees it. A pre-pull's time runs
from its request (`imagepull`; for AdvancedRollingUpdate the controller's `PodImageReady=False` as
the watch sees it) to `PodImageReady=True` as the watch sees it. Time in the window (5) runs from
the annotation change that opens the maintenance window to the new pod's Ready.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from typing import Any

import aiohttp

from bench import workload
from bench.controller import Controller
from bench.session import Session
from bench.watch import JSON, ObjectWatch, condition_true, live, pod_image
from edgerollout.domain.vocabulary import (
    ADVANCED_ROLLING_UPDATE,
    MAINTENANCE_WINDOW_ANNOTATION,
    MAX_UNAVAILABLE_ANNOTATION,
    POD_IMAGE_READY,
    POD_NEED_UPGRADE,
    PREPULL_ANNOTATION,
    PREPULL_WINDOW_ANNOTATION,
    UPDATE_STRATEGY_ANNOTATION,
)
from edgerollout.kube.api import DAEMONSETS, PODS
from edgerollout.kube.views import pod_condition, pod_ready

NAME = "slow-link"
NAMESPACE = "bench-slow-link"
REAL_LABEL = "lab.edgerollout.io/real"


def _on_real_node(image: str) -> JSON:
    manifest = workload.ota(NAME, image=image)
    manifest["spec"]["template"]["spec"]["nodeSelector"] = {REAL_LABEL: "true"}
    return manifest


def _ours(pod: JSON) -> bool:
    """A pod of the DaemonSet (not of a pull Job in the same namespace)."""
    return bool(pod["metadata"].get("labels", {}).get("app") == NAME)


def _ready_with(image: str, *, not_uid: str) -> Any:
    def key(pod: JSON) -> str | None:
        if (
            _ours(pod)
            and live(pod)
            and pod_ready(pod)
            and pod_image(pod) == image
            and pod["metadata"]["uid"] != not_uid
        ):
            return str(pod["metadata"]["name"])
        return None

    return key


def _first(changes: list[tuple[float, int]], value: int) -> float | None:
    """When a count first was `value`."""
    return next((at for at, seen in changes if seen == value), None)


def _the_pod(watch: ObjectWatch) -> JSON:
    (pod,) = (p for p in watch.objects.values() if _ours(p) and live(p))
    return pod


async def _agent(session: Session, action: str, pod: str) -> None:
    node = next(node for node in session.lab.nodes if node.real)
    headers = {"Authorization": f"Bearer {node.agent_token}"}
    url = f"{node.agent_url}/openyurt.io/v1/namespaces/{NAMESPACE}/pods/{pod}/{action}"
    async with aiohttp.ClientSession(headers=headers) as http, http.post(url) as answer:
        text = await answer.text()
        if answer.status != 200:
            raise RuntimeError(f"{action} of {pod} answered {answer.status}: {text}")


async def _ota(
    session: Session, watch: ObjectWatch, image: str, *, prepull: bool, timeout: float
) -> dict[str, float]:
    old = _the_pod(watch)
    name, uid = old["metadata"]["name"], old["metadata"]["uid"]
    marked = watch.track(
        lambda p: (
            p["metadata"]["name"]
            if _ours(p) and live(p) and condition_true(POD_NEED_UPGRADE)(p)
            else None
        )
    )
    await workload.set_image(session.api, NAMESPACE, NAME, image)
    await marked.reach(1, timeout=timeout, what=f"{name} marked PodNeedUpgrade=True")
    result: dict[str, float] = {}
    if prepull:
        pulled = watch.track(
            lambda p: (
                p["metadata"]["name"]
                if _ours(p) and live(p) and condition_true(POD_IMAGE_READY)(p)
                else None
            )
        )
        asked = time.monotonic()
        await _agent(session, "imagepull", name)
        done = await pulled.reach(1, timeout=timeout, what=f"{name} PodImageReady=True")
        result["prepull_seconds"] = round(done - asked, 2)
    ready = watch.track(_ready_with(image, not_uid=uid))
    start = time.monotonic()
    await _agent(session, "upgrade", name)
    back = await ready.reach(1, timeout=timeout, what=f"a Ready pod of {image}")
    result["downtime_seconds"] = round(back - start, 2)
    return result


async def _advanced(
    session: Session, watch: ObjectWatch, image: str, *, prepull: bool, timeout: float
) -> dict[str, float]:
    old = _the_pod(watch)
    name, uid = old["metadata"]["name"], old["metadata"]["uid"]
    deleting = watch.track(
        lambda p: name if p["metadata"]["name"] == name and not live(p) else None
    )
    gone = watch.track(lambda p: name if p["metadata"]["name"] == name else None)
    ready = watch.track(_ready_with(image, not_uid=uid))
    asked = watch.track(
        lambda p: (
            name
            if p["metadata"]["name"] == name and pod_condition(p, POD_IMAGE_READY) is not None
            else None
        )
    )
    pulled = watch.track(
        lambda p: (
            name if p["metadata"]["name"] == name and condition_true(POD_IMAGE_READY)(p) else None
        )
    )
    annotations = {
        UPDATE_STRATEGY_ANNOTATION: ADVANCED_ROLLING_UPDATE,
        MAX_UNAVAILABLE_ANNOTATION: "1",
        PREPULL_ANNOTATION: "true" if prepull else "false",
    }
    await session.api.patch(
        DAEMONSETS,
        NAME,
        {"metadata": {"annotations": annotations}},
        namespace=NAMESPACE,
    )
    await workload.set_image(session.api, NAMESPACE, NAME, image)
    back = await ready.reach(1, timeout=timeout, what=f"a Ready pod of {image}")
    # The deletion shows as a deletionTimestamp, or (if the kubelet is quick) only as its removal.
    stopped = _first(deleting.changes, 1) or _first(gone.changes, 0)
    if stopped is None:
        raise RuntimeError(f"{name} was replaced but its deletion was not seen")
    result = {"downtime_seconds": round(back - stopped, 2)}
    if prepull:
        requested, done = _first(asked.changes, 1), _first(pulled.changes, 1)
        if requested is None or done is None or done > stopped:
            raise RuntimeError(f"{name} was deleted before its pre-pull was seen done")
        result["prepull_seconds"] = round(done - requested, 2)
    return result


# Open all day, and one that opens two hours from now: a daily window of one hour.
ALL_DAY = "Mon-Sun 00:00-24:00"


def _closed_window() -> str:
    opens = datetime.now(UTC) + timedelta(hours=2)
    return f"Mon-Sun {opens:%H:%M}-{opens + timedelta(hours=1):%H:%M}"


async def _in_window(
    session: Session, watch: ObjectWatch, image: str, *, timeout: float
) -> dict[str, float]:
    """Step 5: pulled in the download window while the maintenance window is closed; then the
    maintenance window opens and only the swap is left."""
    old = _the_pod(watch)
    name, uid = old["metadata"]["name"], old["metadata"]["uid"]
    deleting = watch.track(
        lambda p: name if p["metadata"]["name"] == name and not live(p) else None
    )
    gone = watch.track(lambda p: name if p["metadata"]["name"] == name else None)
    ready = watch.track(_ready_with(image, not_uid=uid))
    asked = watch.track(
        lambda p: (
            name
            if p["metadata"]["name"] == name and pod_condition(p, POD_IMAGE_READY) is not None
            else None
        )
    )
    pulled = watch.track(
        lambda p: (
            name if p["metadata"]["name"] == name and condition_true(POD_IMAGE_READY)(p) else None
        )
    )
    annotations = {
        UPDATE_STRATEGY_ANNOTATION: ADVANCED_ROLLING_UPDATE,
        MAX_UNAVAILABLE_ANNOTATION: "1",
        PREPULL_ANNOTATION: "true",
        PREPULL_WINDOW_ANNOTATION: ALL_DAY,
        MAINTENANCE_WINDOW_ANNOTATION: _closed_window(),
    }
    await session.api.patch(
        DAEMONSETS, NAME, {"metadata": {"annotations": annotations}}, namespace=NAMESPACE
    )
    await workload.set_image(session.api, NAMESPACE, NAME, image)
    done = await pulled.reach(1, timeout=timeout, what=f"{name} PodImageReady=True")
    requested = _first(asked.changes, 1)
    if requested is None or deleting.value != 0 or gone.value != 1:
        raise RuntimeError(f"{name} went before its maintenance window opened")
    opened = time.monotonic()
    await session.api.patch(
        DAEMONSETS,
        NAME,
        {"metadata": {"annotations": {MAINTENANCE_WINDOW_ANNOTATION: ALL_DAY}}},
        namespace=NAMESPACE,
    )
    back = await ready.reach(1, timeout=timeout, what=f"a Ready pod of {image}")
    stopped = _first(deleting.changes, 1) or _first(gone.changes, 0)
    if stopped is None:
        raise RuntimeError(f"{name} was replaced but its deletion was not seen")
    return {
        "prepull_seconds": round(done - requested, 2),
        "downtime_seconds": round(back - stopped, 2),
        "window_seconds": round(back - opened, 2),
    }


async def run(
    session: Session,
    controller: Controller,
    *,
    payload_bytes: int,
    link_rate: float,
    timeout: float,
) -> dict[str, Any]:
    del controller  # it only has to run: it marks, pre-pulls and (AdvancedRollingUpdate) deletes
    images = session.lab.images
    await workload.create_namespace(session.api, NAMESPACE)
    watch = ObjectWatch(session.api, PODS, namespace=NAMESPACE)
    await watch.start()
    try:
        ready = watch.track(_ready_with(images[0], not_uid=""))
        await workload.create(session.api, NAMESPACE, _on_real_node(images[0]))
        await ready.reach(1, timeout=timeout, what=f"a Ready pod of {images[0]}")
        session.say("slow link: OTA, imagepull then upgrade")
        prepulled = await _ota(session, watch, images[1], prepull=True, timeout=timeout)
        session.say(f"slow link: downtime {prepulled['downtime_seconds']} s; OTA, upgrade only")
        direct = await _ota(session, watch, images[2], prepull=False, timeout=timeout)
        session.say(f"slow link: downtime {direct['downtime_seconds']} s; AdvancedRollingUpdate")
        advanced = await _advanced(session, watch, images[3], prepull=False, timeout=timeout)
        session.say(
            f"slow link: downtime {advanced['downtime_seconds']} s; "
            "AdvancedRollingUpdate, pre-pull first"
        )
        first = await _advanced(session, watch, images[4], prepull=True, timeout=timeout)
        session.say(
            f"slow link: downtime {first['downtime_seconds']} s; "
            "AdvancedRollingUpdate, pulled in a download window"
        )
        windowed = await _in_window(session, watch, images[5], timeout=timeout)
        session.say(
            f"slow link: downtime {windowed['downtime_seconds']} s, "
            f"{windowed['window_seconds']} s in the maintenance window"
        )
    finally:
        await watch.stop()
    return {
        "payload_bytes": payload_bytes,
        "link_rate_bytes_per_second": link_rate,
        "ota_with_imagepull": prepulled,
        "ota_without_imagepull": direct,
        "advanced_rolling_update": advanced,
        "advanced_rolling_update_with_prepull": first,
        "advanced_rolling_update_in_window": windowed,
        # How many times longer the workload is down without the pre-pull.
        "downtime_ratio": round(direct["downtime_seconds"] / prepulled["downtime_seconds"], 1),
        "advanced_downtime_ratio": round(
            advanced["downtime_seconds"] / first["downtime_seconds"], 1
        ),
    }
