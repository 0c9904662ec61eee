"""The discrete-event simulation of one DaemonSet's rollout over a fleet.

The simulator plays the world and nothing else: nodes and their links (outages, flapping, nodes
never online), each pod's stages (terminating, re-created by the native DaemonSet controller,
pulling its image, starting, Ready or crash-looping), and, for OTA, nodes that ask to upgrade. What
to delete is decided by `edgerollout.domain.planning.reconcile.plan`, the controller's own planner,
and by nothing here: the simulator shows it the world as the controller's caches would (a
`Snapshot` of `PodView`s labelled with the revision hashes the native controller stamps, the
nodes' readiness and labels, `status.desiredNumberScheduled`), carries out the deletions and
condition writes it returns, and asks again when the world changes.

Time jumps from event to event (a heap ordered by time, then by the order events were made). The
planner is asked after an event it could decide differently on (a pod created, Ready, crashing or
gone; a node's readiness; the echo of its own writes), `reconcile_delay` later, so that events
that close together are seen by one plan, as the controller's work queue holds a key once; and
when a plan's `Recheck` asks for it. It keeps one `RolloutBook` and is told the nodes that changed
since its previous plan, as the controller does (`controller.snapshot`), so a plan costs what
changed rather than the fleet's size.

Once nothing left in the world can be deleted (no node that may come back holds an old pod, and
no pod is on its way) or the failure budget paused the rollout (no one in the simulated world
resumes it), the planner is asked no more: a finished rollout ends the simulation there, and
one that cannot finish plays the world on to the horizon, for the time series and the downtime.
Everything random is drawn from `random.Random` streams seeded from the fleet's seed, and nothing
depends on the wall clock or on the order of a set: the same inputs give the same outcome.
"""

import heapq
import math
from collections.abc import Callable, Collection, Iterator, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from enum import IntEnum
from typing import Protocol

from edgerollout.domain.events import EventType
from edgerollout.domain.model import (
    ConditionStatus,
    ContainerFailure,
    DaemonSetView,
    NodeName,
    NodeReadiness,
    PodUID,
    PodView,
    RevisionView,
)
from edgerollout.domain.planning.conditions import ConditionWrite
from edgerollout.domain.planning.decision import Plan, Snapshot
from edgerollout.domain.planning.reconcile import plan
from edgerollout.domain.planning.rollout_book import RolloutBook
from edgerollout.domain.planning.verdicts import Deletion
from edgerollout.domain.vocabulary import PAUSED_ANNOTATION, POD_NEED_UPGRADE
from edgerollout.simulation.fleet import Fleet
from edgerollout.simulation.layout import Layout, lay_out, stream
from edgerollout.simulation.outcome import Outcome, Sample, summarize


class Observer(Protocol):
    """Told of every plan, for tests that hold the simulator to the planner."""

    def planned(self, snapshot: Snapshot, decided: Plan) -> None:
        """`decided` was planned from `snapshot`, with the simulation's book. Called before its
        writes are carried out: the snapshot's collections are the simulator's own, and change
        once this returns."""

    def carried_out(self, deletions: tuple[Deletion, ...]) -> None:
        """The deletions of the plan just told that the simulated API server carried out."""


CRASH_REASON = "CrashLoopBackOff"
# How long before the simulation starts the old pods were created and became Ready.
OLD_PODS_AGE = timedelta(days=1)
DAY = 86400.0
MOST_NOTICES = 20


class Stage(IntEnum):
    """Where a node's pod is: the old revision's running, or the way to the new one."""

    OLD = 0
    TERMINATING = 1
    ABSENT = 2
    PULLING = 3
    STARTING = 4
    READY = 5
    CRASHED = 6


IN_TRANSIT = frozenset({Stage.TERMINATING, Stage.ABSENT, Stage.PULLING, Stage.STARTING})


class Kind(IntEnum):
    """What an event does (see the handlers of `_Simulation`)."""

    PLAN = 0
    DOWN = 1
    UP = 2
    FLAP_DOWN = 3
    FLAP_UP = 4
    DAY = 5
    GONE = 6
    CREATE = 7
    PULLED = 8
    STARTED = 9
    AVAILABLE = 10
    OTA_UPGRADE = 11


@dataclass(frozen=True, slots=True, kw_only=True)
class Rollout:
    """The DaemonSet rolled out: its view as read from a manifest or the cluster, the name of
    the container that crash-loops where the new revision fails, and the hashes of the old and
    new revisions (as the native controller labels pods and ControllerRevisions)."""

    daemonset: DaemonSetView
    container: str = "app"
    old_hash: str = "old"
    new_hash: str = "new"


def simulate(rollout: Rollout, fleet: Fleet, *, observe: Observer | None = None) -> Outcome:
    """Play `rollout` over `fleet` until it finishes or the horizon (see the module docstring)."""
    return _Simulation(rollout, fleet, observe).run()


class _AllPods(Collection[PodView]):
    """Every pod of the DaemonSet, over the pods by node (what `Snapshot.pods` reads)."""

    def __init__(self, by_node: dict[NodeName, tuple[PodView, ...]]) -> None:
        self._by_node = by_node

    def __iter__(self) -> Iterator[PodView]:
        for pods in self._by_node.values():
            yield from pods

    def __len__(self) -> int:
        return sum(len(pods) for pods in self._by_node.values())

    def __contains__(self, item: object) -> bool:
        return any(item in pods for pods in self._by_node.values())


class _Simulation:
    def __init__(self, rollout: Rollout, fleet: Fleet, observe: Observer | None) -> None:
        self.fleet = fleet
        self.rollout = rollout
        self.observe = observe
        self.layout: Layout = lay_out(fleet)
        self.start: datetime = fleet.start
        ds = rollout.daemonset
        self.daemonset = ds
        self.revisions = (
            RevisionView(name=f"{ds.name}-{rollout.old_hash}", revision=1, hash=rollout.old_hash),
            RevisionView(name=f"{ds.name}-{rollout.new_hash}", revision=2, hash=rollout.new_hash),
        )
        self.counted_offline = NodeReadiness.UNKNOWN in ds.counted_while_not_ready
        self.min_ready = max(ds.min_ready_seconds, 0)
        self.book = RolloutBook()
        self.heap: list[tuple[float, int, int, int, int]] = []
        self.seq = 0
        self.now = 0.0
        self.rng_outages = stream(fleet.seed, "outages")
        self.rng_flaps = stream(fleet.seed, "flapping")
        self.rng_ota = stream(fleet.seed, "ota")
        self.rng_stages = stream(fleet.seed, "stages")
        n = fleet.nodes
        names = self.layout.names
        self.index = {name: i for i, name in enumerate(names)}
        self.down = [0] * n
        self.online = [False] * n
        self.ever_online = [False] * n
        self.stage = [Stage.OLD] * n
        self.pods: list[PodView | None] = [None] * n
        self.token = [0] * n
        self.left = [0.0] * n
        self.since = [0.0] * n
        self.pulled = [0.0] * n
        self.avail = [False] * n
        self.bad = [False] * n
        self.bad_since = [0.0] * n
        self.downtime = [0.0] * n
        self.ota_due = [False] * n
        self.updated_times: list[float] = []
        self.updated = [False] * n
        self.pods_by_node: dict[NodeName, tuple[PodView, ...]] = {}
        self.readiness: dict[NodeName, NodeReadiness] = {}
        self.uid_node: dict[PodUID, int] = {}
        self.changed: set[NodeName] = set()
        self.n_ready = 0
        self.n_bad = 0
        self.peak_bad = 0
        self.n_transit = 0
        self.n_old_returnable = 0
        self.n_crashed = 0
        self.pod_counter = 0
        self.plan_due = math.inf
        self.timer_due = math.inf
        self.planner_calls = 0
        self.broken = 0
        self.paused = False
        self.paused_before: bool | None = None
        self.pause_changes = 0
        self.settled_at: float | None = None
        self.notices: dict[tuple[str, str], str] = {}
        self.samples: list[Sample] = []
        self.next_sample = 0.0
        self.budget: int | None = None

    # The world's clock and events.

    def push(self, at: float, kind: Kind, node: int = -1, token: int = 0) -> None:
        self.seq += 1
        heapq.heappush(self.heap, (at, self.seq, kind, node, token))

    def moment(self, at: float) -> datetime:
        return self.start + timedelta(seconds=at)

    def run(self) -> Outcome:
        self._set_up()
        self._request_plan(0.0, delay=0.0)
        horizon = self.fleet.horizon
        handlers = self._handlers()
        end = horizon
        while self.heap:
            at, _, kind, node, token = heapq.heappop(self.heap)
            if at > horizon:
                break
            self._sample_until(at)
            self.now = at
            handlers[kind](node, token)
            if self.settled_at is None and self._settled():
                self.settled_at = at
                if self._finished():
                    end = at
                    break
        self.now = end
        self._sample_until(end, inclusive=True)
        return self._outcome(end)

    def _handlers(self) -> dict[int, Callable[[int, int], None]]:
        return {
            Kind.PLAN: self._on_plan,
            Kind.DOWN: self._on_down,
            Kind.UP: self._on_up,
            Kind.FLAP_DOWN: self._on_flap_down,
            Kind.FLAP_UP: self._on_flap_up,
            Kind.DAY: self._on_day,
            Kind.GONE: self._on_gone,
            Kind.CREATE: self._on_create,
            Kind.PULLED: self._on_pulled,
            Kind.STARTED: self._on_started,
            Kind.AVAILABLE: self._on_available,
            Kind.OTA_UPGRADE: self._on_ota_upgrade,
        }

    # The fleet at the start: every node runs a pod of the old revision, Ready for a day.

    def _set_up(self) -> None:
        layout = self.layout
        for day in (-1, 0):
            self._schedule_outages(day)
        self.push(DAY, Kind.DAY, 0)
        for i in range(self.fleet.nodes):
            if layout.flapping[i] and not layout.always_offline[i]:
                self.push(
                    self.rng_flaps.expovariate(1 / self.fleet.flapping.online), Kind.FLAP_DOWN, i
                )
        created = self.moment(0.0) - OLD_PODS_AGE
        for i, name in enumerate(layout.names):
            online = not layout.always_offline[i] and self.down[i] == 0
            self.online[i] = online
            self.ever_online[i] = online
            self.readiness[name] = NodeReadiness.READY if online else NodeReadiness.UNKNOWN
            self.n_ready += online
            pod = PodView(
                namespace=self.daemonset.namespace,
                name=self._pod_name(),
                uid=self._pod_uid(),
                node_name=name,
                revision_hash=self.rollout.old_hash,
                template_generation=1,
                ready=online,
                ready_since=created if online else None,
                created=created,
                sandbox_since=created,
            )
            self._put_pod(i, pod)
            self.avail[i] = online
            if not layout.always_offline[i]:
                self.n_old_returnable += 1

    def _pod_name(self) -> str:
        self.pod_counter += 1
        return f"{self.daemonset.name}-{self.pod_counter:x}"

    def _pod_uid(self) -> PodUID:
        return PodUID(f"{self.daemonset.uid or self.daemonset.name}-pod-{self.pod_counter}")

    def _put_pod(self, i: int, pod: PodView | None) -> None:
        """Make `pod` node `i`'s pod (None: it holds none), as the API server would show it."""
        name = self.layout.names[i]
        previous = self.pods[i]
        if previous is not None and (pod is None or pod.uid != previous.uid):
            del self.uid_node[previous.uid]
        self.pods[i] = pod
        if pod is None:
            self.pods_by_node.pop(name, None)
        else:
            self.pods_by_node[name] = (pod,)
            self.uid_node[pod.uid] = i
        self.changed.add(name)

    def _set_stage(self, i: int, stage: Stage) -> None:
        before = self.stage[i]
        if before is stage:
            return
        self.n_transit += (stage in IN_TRANSIT) - (before in IN_TRANSIT)
        if not self.layout.always_offline[i]:
            self.n_old_returnable += (stage is Stage.OLD) - (before is Stage.OLD)
        self.n_crashed += (stage is Stage.CRASHED) - (before is Stage.CRASHED)
        self.stage[i] = stage

    def _set_avail(self, i: int, avail: bool) -> None:
        """Record whether node `i` has an available pod, and its downtime (online without one)."""
        self.avail[i] = avail
        if avail and self.stage[i] is Stage.READY and not self.updated[i]:
            self.updated[i] = True
            self.updated_times.append(self.now)
        bad = self.online[i] and not avail
        if bad == self.bad[i]:
            return
        self.bad[i] = bad
        if bad:
            self.bad_since[i] = self.now
            self.n_bad += 1
            self.peak_bad = max(self.peak_bad, self.n_bad)
        else:
            self.downtime[i] += self.now - self.bad_since[i]
            self.n_bad -= 1

    # Outages and flapping links.

    def _schedule_outages(self, day: int) -> None:
        """Draw day `day`'s outages of every pool (UTC days; day 0 holds the start)."""
        offset = self.start.hour * 3600 + self.start.minute * 60 + self.start.second
        day_start = day * DAY - offset
        rng = self.rng_outages
        for pool, members in zip(self.fleet.pools, self.layout.members, strict=True):
            outages = pool.outages
            if outages.fraction <= 0 or outages.duration <= 0:
                continue
            hours = range(len(outages.start_hours))
            for i in members:
                if rng.random() >= outages.fraction:
                    continue
                hour = rng.choices(hours, weights=outages.start_hours)[0]
                begins = day_start + (hour + rng.random()) * 3600
                ends = begins + outages.duration
                if ends <= 0:
                    continue
                if begins <= 0:
                    self.down[i] += 1
                else:
                    self.push(begins, Kind.DOWN, i)
                self.push(ends, Kind.UP, i)

    def _on_day(self, day: int, _: int) -> None:
        self._schedule_outages(day + 1)
        self.push(self.now + DAY, Kind.DAY, day + 1)

    def _on_flap_down(self, i: int, _: int) -> None:
        self._on_down(i, 0)
        self.push(
            self.now + self.rng_flaps.expovariate(1 / self.fleet.flapping.offline), Kind.FLAP_UP, i
        )

    def _on_flap_up(self, i: int, _: int) -> None:
        self._on_up(i, 0)
        self.push(
            self.now + self.rng_flaps.expovariate(1 / self.fleet.flapping.online), Kind.FLAP_DOWN, i
        )

    def _on_down(self, i: int, _: int) -> None:
        self.down[i] += 1
        if self.down[i] == 1 and self.online[i]:
            self._go_offline(i)

    def _on_up(self, i: int, _: int) -> None:
        self.down[i] -= 1
        if self.down[i] == 0 and not self.layout.always_offline[i]:
            self._go_online(i)

    def _go_offline(self, i: int) -> None:
        """The node lifecycle controller marks the node Unknown and its pod not Ready; the
        kubelet's work on the pod stops where it is."""
        now = self.now
        self.online[i] = False
        self.n_ready -= 1
        self.readiness[self.layout.names[i]] = NodeReadiness.UNKNOWN
        self._pause_work(i, now)
        pod = self.pods[i]
        if pod is not None and pod.ready:
            self._put_pod(i, replace(pod, ready=False, ready_since=None))
        else:
            self.changed.add(self.layout.names[i])
        self._set_avail(i, False)
        self._request_plan(now)

    def _go_online(self, i: int) -> None:
        now = self.now
        self.online[i] = True
        self.ever_online[i] = True
        self.n_ready += 1
        name = self.layout.names[i]
        self.readiness[name] = NodeReadiness.READY
        self.changed.add(name)
        stage = self.stage[i]
        if stage in (Stage.OLD, Stage.READY):
            pod = self.pods[i]
            if pod is not None:
                self._put_pod(i, replace(pod, ready=True, ready_since=self.moment(now)))
            self._become_ready(i)
        else:
            self._set_avail(i, False)
            self._resume_work(i, now)
        if self.ota_due[i]:
            self.push(now, Kind.OTA_UPGRADE, i, self.token[i])
        self._request_plan(now)

    def _pause_work(self, i: int, now: float) -> None:
        stage = self.stage[i]
        if stage not in IN_TRANSIT:
            return
        self.token[i] += 1
        elapsed = now - self.since[i]
        if stage is Stage.PULLING:
            self.pulled[i] = min(self.fleet.image_size, self.pulled[i] + elapsed * self._rate(i))
        elif stage is not Stage.ABSENT:
            self.left[i] = max(0.0, self.left[i] - elapsed)

    def _resume_work(self, i: int, now: float) -> None:
        stage = self.stage[i]
        self.since[i] = now
        token = self.token[i]
        if stage is Stage.TERMINATING:
            self.push(now + self.left[i], Kind.GONE, i, token)
        elif stage is Stage.ABSENT:
            self.push(now + self.fleet.recreate.draw(self.rng_stages), Kind.CREATE, i, token)
        elif stage is Stage.PULLING:
            rest = (self.fleet.image_size - self.pulled[i]) / self._rate(i)
            self.push(now + rest, Kind.PULLED, i, token)
        elif stage is Stage.STARTING:
            self.push(now + self.left[i], Kind.STARTED, i, token)

    def _rate(self, i: int) -> float:
        return self.fleet.pools[self.layout.pool[i]].link_rate

    # A pod's way from deletion to the new revision.

    def _delete(self, i: int) -> None:
        """The API server marks the pod Terminating; the kubelet stops it in `termination`."""
        pod = self.pods[i]
        assert pod is not None
        self._put_pod(i, replace(pod, deleting=True, ready=False, ready_since=None))
        self.ota_due[i] = False
        self._set_stage(i, Stage.TERMINATING)
        self.left[i] = self.fleet.termination.draw(self.rng_stages)
        self._set_avail(i, False)
        if self.online[i]:
            self._resume_work(i, self.now)

    def _current(self, i: int, token: int) -> bool:
        return token == self.token[i] and self.online[i]

    def _on_gone(self, i: int, token: int) -> None:
        if not self._current(i, token):
            return
        self._put_pod(i, None)
        self._set_stage(i, Stage.ABSENT)
        self._resume_work(i, self.now)
        self._request_plan(self.now)

    def _on_create(self, i: int, token: int) -> None:
        if not self._current(i, token):
            return
        now = self.moment(self.now)
        pod = PodView(
            namespace=self.daemonset.namespace,
            name=self._pod_name(),
            uid=self._pod_uid(),
            node_name=self.layout.names[i],
            revision_hash=self.rollout.new_hash,
            template_generation=2,
            created=now,
            containers_unready_since=now,
            sandbox_since=now,
        )
        self._put_pod(i, pod)
        if self.pulled[i] >= self.fleet.image_size:
            self._set_stage(i, Stage.STARTING)
            self.left[i] = self.fleet.container_start.draw(self.rng_stages)
        else:
            self._set_stage(i, Stage.PULLING)
        self._resume_work(i, self.now)
        self._request_plan(self.now)

    def _on_pulled(self, i: int, token: int) -> None:
        if not self._current(i, token):
            return
        self.pulled[i] = self.fleet.image_size
        self._set_stage(i, Stage.STARTING)
        self.left[i] = self.fleet.container_start.draw(self.rng_stages)
        self._resume_work(i, self.now)

    def _on_started(self, i: int, token: int) -> None:
        if not self._current(i, token):
            return
        pod = self.pods[i]
        assert pod is not None
        if self.layout.crashes[i]:
            failure = ContainerFailure(container=self.rollout.container, reason=CRASH_REASON)
            self._put_pod(i, replace(pod, failures=(failure,)))
            self._set_stage(i, Stage.CRASHED)
        else:
            ready = replace(
                pod, ready=True, ready_since=self.moment(self.now), containers_unready_since=None
            )
            self._put_pod(i, ready)
            self._set_stage(i, Stage.READY)
            self._become_ready(i)
        self._request_plan(self.now)

    def _become_ready(self, i: int) -> None:
        """A pod turned Ready: available at once, or minReadySeconds later."""
        if self.min_ready <= 0:
            self._set_avail(i, True)
            return
        self._set_avail(i, False)
        self.token[i] += 1
        self.push(self.now + self.min_ready, Kind.AVAILABLE, i, self.token[i])

    def _on_available(self, i: int, token: int) -> None:
        if self._current(i, token):
            self._set_avail(i, True)
            self._request_plan(self.now)

    def _on_ota_upgrade(self, i: int, token: int) -> None:
        """An OTA node asks its agent to upgrade its pod: the agent deletes it (design §8)."""
        if token != self.token[i] or not self.ota_due[i]:
            return
        if not self.online[i]:
            return  # asked again when the node is back
        pod = self.pods[i]
        if self.stage[i] is not Stage.OLD or pod is None or not _marked(pod):
            self.ota_due[i] = False
            return
        self._delete(i)
        self._request_plan(self.now)

    # The controller: plans, and their writes.

    def _request_plan(self, at: float, *, delay: float | None = None) -> None:
        """An event the planner may decide on: a plan `reconcile_delay` later, unless one is
        due sooner already."""
        due = at + (self.fleet.reconcile_delay if delay is None else delay)
        if due < self.plan_due:
            self.plan_due = due
            self.push(due, Kind.PLAN)

    def _on_plan(self, _: int, __: int) -> None:
        if self.now != self.plan_due and self.now != self.timer_due:
            return  # a plan that a sooner one replaced
        if self.now == self.plan_due:
            self.plan_due = math.inf
        if self.now == self.timer_due:
            self.timer_due = math.inf
        if self.settled_at is not None:
            return
        snapshot = self._snapshot()
        decided = plan(snapshot, self.book)
        self.planner_calls += 1
        if self.observe is not None:
            self.observe.planned(snapshot, decided)
        self._note(decided)
        carried = []
        for deletion in decided.deletions:
            i = self.index[deletion.node_name]
            pod = self.pods[i]
            if pod is not None and pod.uid == deletion.uid and not pod.deleting:
                self._delete(i)
                carried.append(deletion)
        if self.observe is not None:
            self.observe.carried_out(tuple(carried))
        self._write_conditions(decided.condition_writes)
        if decided.deletions or decided.condition_writes:
            self._request_plan(self.now)  # their echo
        if decided.pause_rollout and not self.paused:
            self.paused = True
            annotations = {**self.daemonset.annotations, PAUSED_ANNOTATION: "true"}
            self.daemonset = replace(self.daemonset, annotations=annotations)
            self._request_plan(self.now)
        self.timer_due = math.inf
        recheck = decided.recheck
        after = (
            None if recheck is None else recheck.after(deletions_in_flight=0, unechoed_seconds=None)
        )
        if after is not None and self.now + after < self.plan_due:
            self.timer_due = self.now + after
            self.push(self.timer_due, Kind.PLAN)

    def _snapshot(self) -> Snapshot:
        desired = self.n_ready + (self.fleet.nodes - self.n_ready if self.counted_offline else 0)
        view = self.daemonset
        if view.desired_nodes != desired:
            view = self.daemonset = replace(view, desired_nodes=desired)
        changed = frozenset(self.changed)
        self.changed.clear()
        return Snapshot(
            daemonset=view,
            revisions=self.revisions,
            pods=_AllPods(self.pods_by_node),
            pods_by_node=self.pods_by_node,
            readiness=self.readiness,
            node_labels=self.layout.labels,
            changed_nodes=changed,
            paused_before=self.paused_before,
            pause_changes=self.pause_changes,
            now=self.moment(self.now),
        )

    def _note(self, decided: Plan) -> None:
        """Remember what the controller's state would of this plan (`RolloutState`), and what
        the outcome reports: its broken nodes, its budget, its Warnings."""
        paused = decided.paused
        if paused is not None and paused != self.paused_before:
            if self.paused_before is not None or paused:
                self.pause_changes += 1
            self.paused_before = paused
        self.broken = len(decided.broken)
        if decided.budget is not None and self.budget is None:
            self.budget = decided.budget.value
        for notice in decided.notices:
            if notice.type is EventType.WARNING and len(self.notices) < MOST_NOTICES:
                self.notices.setdefault((notice.reason, notice.message), notice.message)

    def _write_conditions(self, writes: Sequence[ConditionWrite]) -> None:
        """Patch the conditions onto their pods, as the API server would (a pod replaced
        meanwhile is left alone: the write names its UID); an OTA pod told to upgrade schedules
        its node's request."""
        for write in writes:
            i = self.uid_node.get(write.uid)
            pod = None if i is None else self.pods[i]
            if i is None or pod is None:
                continue
            conditions = {**pod.conditions, write.condition.type: write.condition}
            pod = replace(pod, conditions=conditions)
            self._put_pod(i, pod)
            if _marked(pod) and self.stage[i] is Stage.OLD and not self.ota_due[i]:
                self.ota_due[i] = True
                wait = (
                    self.rng_ota.expovariate(1 / self.fleet.ota.upgrade_after)
                    if self.fleet.ota.upgrade_after > 0
                    else 0.0
                )
                self.push(self.now + wait, Kind.OTA_UPGRADE, i, self.token[i])

    # When it ends, and what it says.

    def _settled(self) -> bool:
        """Nothing left to delete: no pod on its way, and no node that may come back holds an
        old pod (or the failure budget paused the rollout, and no one resumes it)."""
        return self.n_transit == 0 and (self.n_old_returnable == 0 or self.paused)

    def _finished(self) -> bool:
        return self.n_old_returnable == 0 and self.n_crashed == 0 and any(self.ever_online)

    def _sample_until(self, at: float, *, inclusive: bool = False) -> None:
        """Sample the fleet at every multiple of `sample_every` before `at` (and at `at` itself
        if `inclusive`): a sample shows the fleet once every event at its time has happened."""
        every = self.fleet.sample_every
        while self.next_sample < at or (inclusive and self.next_sample == at):
            self.samples.append(
                Sample(
                    at=self.next_sample,
                    updated=len(self.updated_times),
                    unavailable=self.n_bad,
                    offline=self.fleet.nodes - self.n_ready,
                    broken=self.broken,
                )
            )
            self.next_sample += every

    def _outcome(self, end: float) -> Outcome:
        for i in range(self.fleet.nodes):
            if self.bad[i]:
                self.downtime[i] += end - self.bad_since[i]
            if self.stage[i] is Stage.PULLING and self.online[i]:
                self._pause_work(i, end)
        if not self.samples or self.samples[-1].at < end:
            self.samples.append(
                Sample(
                    at=end,
                    updated=len(self.updated_times),
                    unavailable=self.n_bad,
                    offline=self.fleet.nodes - self.n_ready,
                    broken=self.broken,
                )
            )
        ever = [i for i in range(self.fleet.nodes) if self.ever_online[i]]
        return summarize(
            nodes=self.fleet.nodes,
            end=end,
            finished=self.settled_at is not None and self._finished(),
            reason=self._reason(end),
            updated_times=self.updated_times,
            ever_online=len(ever),
            downtimes=[self.downtime[i] for i in ever],
            peak_unavailable=self.peak_bad,
            pulled_bytes=sum(self.pulled),
            planner_calls=self.planner_calls,
            max_unavailable=self.budget,
            broken=self.n_crashed,
            always_offline=sum(self.layout.always_offline),
            paused=self.paused,
            notices=tuple(self.notices.values()),
            samples=self.samples,
        )

    def _reason(self, end: float) -> str:
        if self.settled_at is not None and self._finished():
            return "every node that was ever online runs the new revision"
        left = self.fleet.nodes - len(self.updated_times)
        why = []
        never = sum(1 for i in range(self.fleet.nodes) if not self.ever_online[i])
        if never:
            why.append(f"{never} never online")
        if self.n_crashed:
            why.append(f"{self.n_crashed} crash-looping on the new revision")
        if self.paused:
            why.append("the rollout paused by its failure budget")
        elif self.n_old_returnable:
            why.append(f"{self.n_old_returnable} still on the old revision")
        if self.n_transit:
            why.append(f"{self.n_transit} on their way")
        return f"stopped at the horizon ({end:g}s): {left} nodes do not run the new revision" + (
            f" ({', '.join(why)})" if why else ""
        )


def _marked(pod: PodView) -> bool:
    condition = pod.conditions.get(POD_NEED_UPGRADE)
    return condition is not None and condition.status is ConditionStatus.TRUE
