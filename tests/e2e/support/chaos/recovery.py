"""After a control-plane outage: where the seconds to convergence went.

From the moment the API server (or etcd, or the controller's link) was back, the milestones of the
recovery, each from an independent record — the audit log (the controllers' lists, watches and
Lease writes, edgerollout's deletions) and the invariant watcher's history (node readiness, pod
lives) — never from edgerollout's own account:

- each controller's first list or watch answered, and when every kind of object it had followed
  before the outage was answered again (its caches resumed);
- the Lease written again (leader election only);
- the first moment a deletion was allowed, as the watcher saw the cluster (an outdated pod on a
  Ready node, and either that pod unavailable or fewer than max-unavailable Ready nodes
  unavailable): until then, the time is the cluster's (nodes NotReady, pods starting), not
  edgerollout's;
- edgerollout's first deletion: its own part is the time from the later of "back" and "allowed"
  to that deletion;
- the DaemonSet controller's first new pod, and convergence (the last pod Ready for good);
- the same convergence of a native `RollingUpdate` DaemonSet beside it, hit by the same fault.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from edgerollout_lab.control_plane import CONTROLLER_MANAGER_USER
from tests.e2e.support.invariants.history import History
from tests.e2e.support.invariants.timeline import clock

# The kinds kube-controller-manager's DaemonSet controller follows.
DAEMONSET_CONTROLLER_KINDS = frozenset({"pods", "daemonsets", "nodes", "controllerrevisions"})


@dataclass(frozen=True, slots=True)
class Outage:
    what: str
    down: float
    back: float
    """When the fault ended: for the API server, the first moment it answered a request again
    (probed every 0.1 s by the scenario; its readiness check passes a second or two later)."""


@dataclass(frozen=True, slots=True)
class Recovery:
    """Seconds after the outage ended (None: did not happen, or was not needed)."""

    outage: str
    down_seconds: float
    back: float
    """When the outage ended (wall clock); every other time is in seconds after it."""
    controller_first_contact: float | None
    controller_caches_resumed: float | None
    controller_manager_first_contact: float | None
    controller_manager_caches_resumed: float | None
    lease_written: float | None
    deletion_allowed: float | None
    first_deletion: float | None
    own_part: float | None
    """From the later of "back" and "allowed" to edgerollout's first deletion."""
    first_new_pod: float | None
    converged: float | None
    native_converged: float | None

    def as_json(self) -> dict[str, object]:
        return asdict(self)

    def text(self) -> str:
        def at(value: float | None) -> str:
            return "   never" if value is None else f"{value:+8.1f}"

        rows = [
            (self.controller_first_contact, "edgerollout: first list/watch answered"),
            (self.controller_caches_resumed, "edgerollout: every cache listing/watching again"),
            (self.lease_written, "edgerollout: Lease written (renewed or taken)"),
            (self.controller_manager_first_contact, "kube-controller-manager: first list/watch"),
            (
                self.controller_manager_caches_resumed,
                "kube-controller-manager: pods, DaemonSets, nodes, revisions watched again",
            ),
            (self.deletion_allowed, "a deletion allowed (watcher's view)"),
            (self.first_deletion, "edgerollout: first deletion"),
            (self.first_new_pod, "DaemonSet controller: first new pod seen"),
            (self.converged, "converged: the last pod Ready"),
            (self.native_converged, "native RollingUpdate reference converged"),
        ]
        lines = [
            f"recovery after {self.outage} (down {self.down_seconds:.1f} s, back at "
            f"{clock(self.back)}); edgerollout's own part: "
            + ("-" if self.own_part is None else f"{self.own_part:.1f} s")
        ]
        lines += [f"  {at(value)} s  {label}" for value, label in rows if value is not None]
        return "\n".join(lines)


def _first_answer(history: History, user: str, since: float, kinds: frozenset[str]) -> float | None:
    times = [
        r.at
        for r in history.requests
        if r.user == user and r.answered and r.at >= since and r.resource in kinds
    ]
    return min(times, default=None)


def _followed_before(history: History, user: str, moment: float) -> frozenset[str]:
    """The kinds `user` listed or watched before `moment`, as far as the record goes."""
    return frozenset(
        r.resource
        for r in history.requests
        if r.user == user and r.verb in ("list", "watch") and r.at < moment
    )


def _all_resumed(history: History, user: str, back: float, kinds: frozenset[str]) -> float | None:
    """When every one of `kinds` was answered again after `back` (None: some never was)."""
    if not kinds:
        return None
    firsts = [_first_answer(history, user, back, frozenset({kind})) for kind in kinds]
    if any(first is None for first in firsts):
        return None
    return max(first for first in firsts if first is not None)


def _deletion_allowed_at(
    history: History, at: float, *, image: str, budget: int, min_ready_seconds: float
) -> bool:
    ready = [node for node in history.nodes if history.node_ready[node].at(at) is True]
    outdated = [
        life
        for node in ready
        for life in history.pods_on(node)
        if life.live_at(at) and life.images != (image,)
    ]
    if not outdated:
        return False
    if any(not life.available_at(at, min_ready_seconds) for life in outdated):
        return True
    unavailable = sum(
        1 for node in ready if not history.node_available_at(node, at, min_ready_seconds)
    )
    return unavailable < budget


def deletion_allowed(
    history: History, since: float, until: float, *, image: str, budget: int, min_ready: float
) -> float | None:
    """The first moment in [since, until] when the rules allow a deletion, as the watcher saw it."""
    points = {since}
    for life in history.pods.values():
        points.update(p for p in life.change_points(min_ready) if since < p <= until)
    for timeline in history.node_ready.values():
        points.update(t for t in timeline.times if since < t <= until)
    for point in sorted(points):
        if _deletion_allowed_at(
            history, point, image=image, budget=budget, min_ready_seconds=min_ready
        ):
            return point
    return None


def _converged_at(history: History, at: float, image: str) -> bool:
    for node in history.nodes:
        if history.node_ready[node].at(at) is not True:
            return False
        live = [life for life in history.pods_on(node) if life.live_at(at)]
        if len(live) != 1 or live[0].images != (image,) or live[0].ready.at(at) is None:
            return False
    return True


def converged_since(history: History, image: str, until: float) -> float | None:
    """When the last spell of convergence (every node Ready, with one Ready pod of `image`)
    that lasts until `until` began; None if it is not converged at `until`."""
    if not _converged_at(history, until, image):
        return None
    points = {history.started_at}
    for life in history.pods.values():
        points.update(p for p in [life.seen, *life.ready.times] if p <= until)
        if life.deleting_at is not None and life.deleting_at <= until:
            points.add(life.deleting_at)
    for timeline in history.node_ready.values():
        points.update(t for t in timeline.times if t <= until)
    since = until
    for point in sorted(points, reverse=True):
        if point < history.started_at or not _converged_at(history, point, image):
            break
        since = point
    return since


def recovery(
    history: History,
    outage: Outage,
    *,
    image: str,
    budget: int,
    min_ready_seconds: float,
    until: float,
    native: History | None = None,
) -> Recovery:
    back = outage.back
    user = history.controller_user
    every_kind = frozenset(r.resource for r in history.requests)

    def after(moment: float | None) -> float | None:
        return None if moment is None else round(max(0.0, moment - back), 1)

    # No deletion is accepted while the API server (or the controller's link) is away: the first
    # after it went down is the first after it came back, even one the probe had not seen yet.
    deletions = [d.at for d in history.controller_deletions if d.accepted and d.at > outage.down]
    first_deletion = min(deletions, default=None)
    allowed = deletion_allowed(
        history,
        back,
        first_deletion if first_deletion is not None else until,
        image=image,
        budget=budget,
        min_ready=min_ready_seconds,
    )
    own = None
    if first_deletion is not None:
        # The watcher sees a change a moment after the controller may: a deletion made before the
        # watcher saw one allowed took edgerollout no time of its own.
        start = max(back, allowed) if allowed is not None else first_deletion
        own = round(max(0.0, first_deletion - start), 1)
    leases = [
        r.at
        for r in history.requests
        if r.user == user and r.resource == "leases" and r.answered and r.at >= back
    ]
    new_pods = [life.seen for life in history.pods.values() if life.seen >= back]
    converged = converged_since(history, image, until)
    native_converged = converged_since(native, image, until) if native is not None else None
    return Recovery(
        outage=outage.what,
        down_seconds=round(back - outage.down, 1),
        back=back,
        controller_first_contact=after(_first_answer(history, user, back, every_kind)),
        # The watcher starts reading the audit log before the controllers start: every kind
        # they follow is in the record. kube-controller-manager's watches are older than the run.
        controller_caches_resumed=after(
            _all_resumed(history, user, back, _followed_before(history, user, outage.down))
        ),
        controller_manager_first_contact=after(
            _first_answer(history, CONTROLLER_MANAGER_USER, back, DAEMONSET_CONTROLLER_KINDS)
        ),
        controller_manager_caches_resumed=after(
            _all_resumed(history, CONTROLLER_MANAGER_USER, back, DAEMONSET_CONTROLLER_KINDS)
        ),
        lease_written=after(min(leases, default=None)),
        deletion_allowed=after(allowed),
        first_deletion=after(first_deletion),
        own_part=own,
        first_new_pod=after(min(new_pods, default=None)),
        converged=after(converged),
        native_converged=after(native_converged),
    )
