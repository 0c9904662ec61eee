"""Where a rollout's time goes: every node's replacement split into its stages, from one watch.

For each node whose pod is replaced, the times the watch first saw:
- `deleting`: the old pod marked for deletion (the controller's decision, sent and accepted);
- `gone`: the old pod removed (KWOK, as the kubelet, confirmed it);
- `created`: the replacement pod (the native DaemonSet controller created it, in both modes);
- `bound`: the replacement bound to the node (the scheduler);
- `ready`: the replacement Ready (KWOK started it).

The summary gives each stage's median, 90th percentile and maximum, the nodes held unavailable
on average between the first decision and the last replacement Ready (the share of the budget a
controller keeps busy), and how soon after a replacement turns Ready the next deletion comes. Together they tell a controller that decides late (few slots
busy) from a lab that replaces slowly (long stages).
"""

from __future__ import annotations

import bisect
import statistics
from dataclasses import dataclass
from typing import Any

from bench.watch import JSON, live, pod_image
from edgerollout.kube.views import bound_node, pod_node, pod_ready

STAGES = (
    ("deleting", "gone"),
    ("gone", "created"),
    ("created", "bound"),
    ("bound", "ready"),
    ("deleting", "ready"),
)


@dataclass
class NodeTimes:
    deleting: float | None = None
    gone: float | None = None
    created: float | None = None
    bound: float | None = None
    ready: float | None = None

    def mark(self, stage: str, at: float) -> None:
        if getattr(self, stage) is None:
            setattr(self, stage, at)


class StageLog:
    """An `ObjectWatch` listener on one namespace's pods, for a rollout to `image`."""

    def __init__(self, image: str) -> None:
        self.image = image
        self.nodes: dict[str, NodeTimes] = {}
        self._old_pods: dict[str, str] = {}  # pod name -> node, pods of another image

    def _times(self, node: str) -> NodeTimes:
        return self.nodes.setdefault(node, NodeTimes())

    def reset(self, objects: dict[str, JSON], at: float) -> None:
        for name, pod in objects.items():
            node = pod_node(pod)
            if node is not None and pod_image(pod) != self.image:
                self._old_pods[name] = node

    def update(self, name: str, obj: JSON | None, at: float) -> None:
        if obj is None:
            node = self._old_pods.pop(name, None)
            if node is not None:
                self._times(node).mark("gone", at)
            return
        node = pod_node(obj)
        if node is None:
            return
        if pod_image(obj) != self.image:
            self._old_pods[name] = node
            if not live(obj):
                self._times(node).mark("deleting", at)
            return
        times = self._times(node)
        times.mark("created", at)
        if bound_node(obj):
            times.mark("bound", at)
        if live(obj) and pod_ready(obj):
            times.mark("ready", at)

    def summary(self, start: float, *, only: set[str] | None = None) -> dict[str, Any]:
        """Each stage's spread in seconds, and the nodes held unavailable on average, over every
        node or `only` these; `first_deletion` is counted from `start`."""
        chosen = [t for node, t in self.nodes.items() if only is None or node in only]
        stages: dict[str, Any] = {}
        for since, until in STAGES:
            spans = sorted(
                end - begin
                for times in chosen
                if (begin := getattr(times, since)) is not None
                and (end := getattr(times, until)) is not None
            )
            if spans:
                stages[f"{since}_to_{until}"] = _spread(spans)
        decided = [t.deleting for t in chosen if t.deleting is not None]
        finished = [t.ready for t in chosen if t.ready is not None]
        result: dict[str, Any] = {"replaced": len(finished), "stages_seconds": stages}
        if decided and finished:
            first, last = min(decided), max(finished)
            busy = sum(
                t.ready - t.deleting
                for t in chosen
                if t.deleting is not None and t.ready is not None
            )
            result["first_deletion"] = round(first - start, 3)
            result["mean_unavailable"] = round(busy / (last - first), 1) if last > first else 0.0
            result["deletions_per_second"] = (
                round(len(decided) / (max(decided) - first), 1) if max(decided) > first else 0.0
            )
            reuse = _reuse_delays(sorted(decided), sorted(finished))
            if reuse:
                result["slot_reuse_seconds"] = _spread(reuse)
        return result


def _reuse_delays(decided: list[float], finished: list[float]) -> list[float]:
    """For each deletion made after some replacement was Ready: the time since the latest one.

    Once the budget is full, a deletion can only follow a replacement turning Ready (a slot
    freed), so this is how long a controller takes to use a freed slot: the watch event, its
    decision, and the request until the API server has marked the pod."""
    delays = []
    for at in decided:
        index = bisect.bisect_right(finished, at)
        if index:
            delays.append(at - finished[index - 1])
    return sorted(delays)


def _spread(spans: list[float]) -> dict[str, float]:
    p90 = spans[min(len(spans) - 1, int(len(spans) * 0.9))]
    p99 = spans[min(len(spans) - 1, int(len(spans) * 0.99))]
    return {
        "median": round(statistics.median(spans), 3),
        "p90": round(p90, 3),
        "p99": round(p99, 3),
        "max": round(spans[-1], 3),
    }
