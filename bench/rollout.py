"""Timing a rollout from the image change to the last pod updated and Ready, by watch."""

from __future__ import annotations

import asyncio
import math
import time
from dataclasses import dataclass
from typing import Any

from bench import workload
from bench.session import Session
from bench.stages import StageLog
from bench.watch import JSON, ObjectWatch, Progress, live, updated_ready
from edgerollout.kube.api import PODS
from edgerollout.kube.views import bound_node, namespaced_name, object_uid, pod_ready

MAX_POINTS = 300


def thin(points: list[tuple[float, int]], limit: int = MAX_POINTS) -> list[list[float]]:
    """At most `limit` points of a step curve, keeping its first and last."""
    if len(points) <= limit:
        return [[t, v] for t, v in points]
    step = math.ceil(len(points) / limit)
    kept = points[::step]
    if kept[-1] != points[-1]:
        kept.append(points[-1])
    return [[t, v] for t, v in kept]


@dataclass
class Rollout:
    """A watch on one namespace's pods with a count of nodes running `image` Ready."""

    watch: ObjectWatch
    progress: Progress
    stages: StageLog
    image: str

    @staticmethod
    async def watching(session: Session, namespace: str, image: str) -> Rollout:
        watch = ObjectWatch(session.api, PODS, namespace=namespace)
        await watch.start()
        stages = StageLog(image)
        watch.listen(stages)
        return Rollout(
            watch=watch, progress=watch.track(updated_ready(image)), stages=stages, image=image
        )

    async def stop(self) -> None:
        await self.watch.stop()


async def wait_running(
    session: Session, namespace: str, image: str, nodes: int, *, timeout: float
) -> None:
    """Wait until `nodes` nodes run a Ready pod of `image` in the namespace."""
    rollout = await Rollout.watching(session, namespace, image)
    try:
        await rollout.progress.reach(
            nodes, timeout=timeout, what=f"{namespace}: nodes running {image} Ready"
        )
    finally:
        await rollout.stop()


async def change_image(
    session: Session, rollout: Rollout, namespace: str, name: str, *, nodes: int, timeout: float
) -> dict[str, Any]:
    """Change the image to the one `rollout` counts and time it until `nodes` nodes run it Ready.

    The watch is started by the caller beforehand, so that its own list is not part of what the
    rollout is seen to cost. Returns the seconds and the curve of nodes updated over time (seconds
    after the change)."""
    start = time.monotonic()
    await workload.set_image(session.api, namespace, name, rollout.image)
    done = await rollout.progress.reach(
        nodes, timeout=timeout, what=f"{namespace}/{name}: nodes updated to {rollout.image}"
    )
    return {
        "seconds": round(done - start, 3),
        "nodes": nodes,
        "curve": thin(rollout.progress.since(start)),
        "replacements": rollout.stages.summary(start),
    }


async def lab_wave(
    session: Session, namespace: str, image: str, *, pods: int, timeout: float
) -> float:
    """The lab's own time for one wave: delete `pods` Ready pods at once (as the admin, no
    controller involved) and wait until each has a Ready replacement. This is what every wave of a
    rollout costs at least — the native DaemonSet controller, the scheduler and KWOK at work."""
    watch = ObjectWatch(session.api, PODS, namespace=namespace)
    await watch.start()
    try:
        before = set(watch.objects)

        def replacement(pod: JSON) -> str | None:
            _, name = namespaced_name(pod)
            if name not in before and live(pod) and pod_ready(pod):
                return str(bound_node(pod))
            return None

        replaced = watch.track(replacement)
        victims = sorted(
            (pod for pod in watch.objects.values() if live(pod) and pod_ready(pod)),
            key=lambda pod: str(bound_node(pod)),
        )[:pods]
        start = time.monotonic()
        await asyncio.gather(
            *(
                session.api.delete(
                    PODS, namespaced_name(pod)[1], namespace=namespace, uid=object_uid(pod)
                )
                for pod in victims
            )
        )
        done = await replaced.reach(len(victims), timeout=timeout, what="lab wave: replacements")
        return round(done - start, 3)
    finally:
        await watch.stop()
