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
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import aiohttp

from bench import api_load, workload
from bench.controller import Controller
from bench.session import Session
from bench.watch import JSON, ObjectWatch, Progress, condition_true, live, pod_image
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
from edgerollout.kube.api import DAEMONSETS, EVENTS, PODS
from edgerollout.kube.views import pod_condition, pod_ready
from edgerollout_lab.control_plane import audit_logs

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


@dataclass
class PullLog:
    """Every `PodImageReady` the watch saw on pod `name`, as "status reason: message", in order:
    what a pre-pull that went wrong did, for the error that says so."""

    name: str
    seen: list[str] = field(default_factory=list)

    def reset(self, objects: dict[str, JSON], at: float) -> None:
        self.update(self.name, objects.get(self.name), at)

    def update(self, name: str, obj: JSON | None, at: float) -> None:
        del at
        if name != self.name or obj is None:
            return
        condition = pod_condition(obj, POD_IMAGE_READY)
        if condition is None:
            return
        entry = f"{condition.status} {condition.reason}: {condition.message}"
        if not live(obj):
            entry += " (pod deleting)"
        if not self.seen or self.seen[-1] != entry:
            self.seen.append(entry)


@dataclass
class Replacement:
    """What the watch sees of the DaemonSet's pod `name` (UID `uid`) being replaced by a pod of
    `image` under AdvancedRollingUpdate: its deletion, its removal, the new pod's Ready, and its
    pre-pull's request and success."""

    name: str
    deleting: Progress
    gone: Progress
    ready: Progress
    asked: Progress
    pulled: Progress
    log: PullLog

    @classmethod
    def watched(cls, watch: ObjectWatch, image: str) -> Replacement:
        old = _the_pod(watch)
        name, uid = old["metadata"]["name"], old["metadata"]["uid"]

        def its(key: Callable[[JSON], bool]) -> Progress:
            return watch.track(lambda p: name if p["metadata"]["name"] == name and key(p) else None)

        replacement = cls(
            name=name,
            deleting=its(lambda p: not live(p)),
            gone=its(lambda p: True),
            ready=watch.track(_ready_with(image, not_uid=uid)),
            asked=its(lambda p: pod_condition(p, POD_IMAGE_READY) is not None),
            pulled=its(lambda p: condition_true(POD_IMAGE_READY)(p) is not None),
            log=PullLog(name),
        )
        watch.listen(replacement.log)
        return replacement

    def stopped(self) -> float:
        """When the old pod went: a deletionTimestamp, or (a quick kubelet) only its removal."""
        stopped = _first(self.deleting.changes, 1) or _first(self.gone.changes, 0)
        if stopped is None:
            raise RuntimeError(f"{self.name} was replaced but its deletion was not seen")
        return stopped

    def pull_seconds(self, *, before: float) -> float:
        """How long the pre-pull took, from its request to its success, both before `before`."""
        requested, done = _first(self.asked.changes, 1), _first(self.pulled.changes, 1)
        if requested is None or done is None or done > before:
            seen = "; ".join(self.log.seen) or "none"
            raise RuntimeError(
                f"{self.name} was deleted before its pre-pull was seen done "
                f"(its {POD_IMAGE_READY} as the watch saw it: {seen})"
            )
        return round(done - requested, 2)


async def _pull_seconds(
    session: Session, replacement: Replacement, *, before: float, since: datetime
) -> float:
    """`replacement.pull_seconds`; if the pod went before its pull was seen done, the error also
    says who deleted it (the audit log) and the Warnings of the namespace since `since`."""
    try:
        return replacement.pull_seconds(before=before)
    except RuntimeError as error:
        logs = audit_logs(session.folder)
        deleters = api_load.audit_deletes(logs, NAMESPACE, since, name=replacement.name)
        events = await session.api.list(EVENTS, namespace=NAMESPACE)
        warnings = [
            f"{event.get('reason')}: {event.get('message')}"
            for event in events.items
            if event.get("type") == "Warning"
        ]
        told = "; ".join(warnings) or "none"
        raise RuntimeError(f"{error}; deleted by {deleters}; Warnings: {told}") from error


async def _annotate(session: Session, annotations: dict[str, str]) -> None:
    patch = {"metadata": {"annotations": annotations}}
    await session.api.patch(DAEMONSETS, NAME, patch, namespace=NAMESPACE)


async def _advanced(
    session: Session, watch: ObjectWatch, image: str, *, prepull: bool, timeout: float
) -> dict[str, float]:
    replacement = Replacement.watched(watch, image)
    since = datetime.now(UTC)
    await _annotate(
        session,
        {
            UPDATE_STRATEGY_ANNOTATION: ADVANCED_ROLLING_UPDATE,
            MAX_UNAVAILABLE_ANNOTATION: "1",
            PREPULL_ANNOTATION: "true" if prepull else "false",
        },
    )
    await workload.set_image(session.api, NAMESPACE, NAME, image)
    back = await replacement.ready.reach(1, timeout=timeout, what=f"a Ready pod of {image}")
    stopped = replacement.stopped()
    result = {"downtime_seconds": round(back - stopped, 2)}
    if prepull:
        result["prepull_seconds"] = await _pull_seconds(
            session, replacement, before=stopped, since=since
        )
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
    replacement = Replacement.watched(watch, image)
    since = datetime.now(UTC)
    await _annotate(
        session,
        {
            UPDATE_STRATEGY_ANNOTATION: ADVANCED_ROLLING_UPDATE,
            MAX_UNAVAILABLE_ANNOTATION: "1",
            PREPULL_ANNOTATION: "true",
            PREPULL_WINDOW_ANNOTATION: ALL_DAY,
            MAINTENANCE_WINDOW_ANNOTATION: _closed_window(),
        },
    )
    await workload.set_image(session.api, NAMESPACE, NAME, image)
    name = replacement.name
    await replacement.pulled.reach(1, timeout=timeout, what=f"{name} PodImageReady=True")
    if replacement.deleting.value != 0 or replacement.gone.value != 1:
        raise RuntimeError(f"{name} went before its maintenance window opened")
    opened = time.monotonic()
    await _annotate(session, {MAINTENANCE_WINDOW_ANNOTATION: ALL_DAY})
    back = await replacement.ready.reach(1, timeout=timeout, what=f"a Ready pod of {image}")
    stopped = replacement.stopped()
    return {
        "prepull_seconds": await _pull_seconds(session, replacement, before=stopped, since=since),
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
