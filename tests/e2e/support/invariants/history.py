"""What the invariant watcher recorded of a run: each pod's life (and the hold its node asked for
on it), each node's readiness, the DaemonSet's template, strategy and staging annotations, the
audited deletions and the controller's SuccessfulDelete Events — and when a node was available,
by Kubernetes' own definition, at any moment of it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tests.e2e.support.invariants.timeline import Timeline


@dataclass(frozen=True, slots=True)
class HeldCondition:
    """A pod's `edgerollout.io/UpgradeHeld` condition as written (`holds` reads it)."""

    status: str
    message: str
    since: str | None
    """Its lastTransitionTime as written (RFC 3339), None when it has none."""


@dataclass
class PodLife:
    uid: str
    name: str
    node: str
    images: tuple[str, ...]
    seen: float
    ready: Timeline = field(default_factory=Timeline)
    """None while not Ready; while Ready, the condition's lastTransitionTime (whole seconds)."""
    deleting_at: float | None = None
    deletion_seen: float | None = None
    """When the pod watch delivered the deletion (`deleting_at` may be the audit log's earlier time)."""
    held: Timeline = field(default_factory=Timeline)
    """Its `UpgradeHeld` condition (a `HeldCondition`; None while it has none)."""

    def live_at(self, at: float) -> bool:
        return self.seen <= at and (self.deleting_at is None or at < self.deleting_at)

    def available_at(self, at: float, min_ready_seconds: float) -> bool:
        return self.live_at(at) and self._ready_for(at, min_ready_seconds)

    def _ready_for(self, at: float, min_ready_seconds: float) -> bool:
        # Kubernetes' own definition of available: Ready, and since minReadySeconds at least.
        since = self.ready.at(at)
        return since is not None and since + min_ready_seconds <= at

    def available_before_deletion(
        self, start: float, at: float, grace: float, min_ready_seconds: float
    ) -> bool:
        """Available from `start` until its deletion at `at`, as its own watch tells.

        The watch delivers a pod's changes in the order the API server made them, a moment later
        (the controller may see them sooner): a change delivered before the deletion came before
        it, even if it arrived after `at` (up to `grace` after)."""
        end = at - 0.001
        if self.deletion_seen is not None:
            end = min(max(end, self.deletion_seen - 0.001), at + grace)
        points = [start, end, *self.ready.changes_between(start, end)]
        return (
            self.live_at(start)
            and self.live_at(at - 0.001)
            and all(self._ready_for(point, min_ready_seconds) for point in points)
        )

    def change_points(self, min_ready_seconds: float) -> list[float]:
        points = [self.seen, *self.ready.times]
        points += [v + min_ready_seconds for v in self.ready.values if v is not None]
        if self.deleting_at is not None:
            points.append(self.deleting_at)
        return points


@dataclass(frozen=True, slots=True)
class AuditedDeletion:
    at: float
    namespace: str
    name: str
    user: str
    code: int
    uid_precondition: str | None

    @property
    def accepted(self) -> bool:
        return 200 <= self.code <= 299

    @property
    def maybe_applied(self) -> bool:
        """Accepted, or cut off: the client went away mid-request (the API server logs a 504
        "context canceled") and the deletion may have been applied all the same."""
        return self.accepted or self.code == 504


@dataclass(frozen=True, slots=True)
class AuditedRequest:
    """A controller's list, watch or Lease write, as the audit log has it: `at` is when the API
    server answered (a watch: when its stream started; the rest: when the answer was complete)."""

    at: float
    user: str
    verb: str
    resource: str
    code: int

    @property
    def answered(self) -> bool:
        return 200 <= self.code <= 299


class History:
    """One namespace's rollout and the Nodes, over time, as recorded (or, in tests, as written)."""

    def __init__(self, namespace: str, *, nodes: list[str], controller_user: str) -> None:
        self.namespace = namespace
        self.nodes = sorted(nodes)
        self.controller_user = controller_user
        self.pods: dict[str, PodLife] = {}
        self.node_ready: dict[str, Timeline] = {name: Timeline() for name in self.nodes}
        self.ds_image: Timeline = Timeline()
        self.ds_strategy: Timeline = Timeline()
        self.ds_paused: Timeline = Timeline()
        """`edgerollout.io/paused` as written (None: not set)."""
        self.ds_partition: Timeline = Timeline()
        """`edgerollout.io/partition` as written (None: not set)."""
        self.ds_batches: Timeline = Timeline()
        """`edgerollout.io/batches` as written (None: not set)."""
        self.ds_batch_soak: Timeline = Timeline()
        """`edgerollout.io/batch-soak` as written (None: not set)."""
        self.ds_max_hold: Timeline = Timeline()
        """`edgerollout.io/max-hold` as written (None: not set)."""
        self.ds_unseen: list[tuple[float, float]] = []
        """(from, to): spells when the DaemonSet's watch was down, from the moment it was found
        interrupted until it was listed again; what changed meanwhile is dated at the listing."""
        self.deletions: list[AuditedDeletion] = []
        self.requests: list[AuditedRequest] = []
        """The controllers' lists, watches and Lease writes (see `AuditedRequest`)."""
        self.reported: dict[str, dict[str, Any]] = {}
        """Event name -> (pod, node, count, instance) of each SuccessfulDelete Event."""
        self.started_at = 0.0

    @property
    def controller_deletions(self) -> list[AuditedDeletion]:
        return sorted(
            (d for d in self.deletions if d.user == self.controller_user), key=lambda d: d.at
        )

    def pods_on(self, node: str) -> list[PodLife]:
        return [life for life in self.pods.values() if life.node == node]

    def node_available_at(self, node: str, at: float, min_ready_seconds: float) -> bool:
        live = [life for life in self.pods_on(node) if life.live_at(at)]
        return len(live) == 1 and live[0].available_at(at, min_ready_seconds)

    def unavailable_throughout(
        self, node: str, start: float, end: float, min_ready_seconds: float
    ) -> bool:
        points = [start, end] + [
            p
            for life in self.pods_on(node)
            for p in life.change_points(min_ready_seconds)
            if start < p < end
        ]
        return not any(self.node_available_at(node, p, min_ready_seconds) for p in points)

    def ready_throughout(self, node: str, start: float, end: float) -> bool:
        return bool(self.node_ready[node].throughout(start, end, lambda ready: ready is True))

    def name_of(self, uid: str) -> str:
        life = self.pods.get(uid)
        return life.name if life else ""
