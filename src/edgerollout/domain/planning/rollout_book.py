"""The planner's verdicts for one DaemonSet, kept from one reconcile to the next.

Judging every node holding a pod at each plan costs about 2 ms at 1,000 nodes, and a rollout of 1,000 nodes is planned some 450 times, mostly after one or two pods changed. A
`RolloutBook` keeps each node's verdict and its share of the totals (nodes unavailable, nodes
skipped, outdated pods waiting for budget), and at each plan judges again only

- the nodes it is told changed (a pod of the DaemonSet on the node, the node's readiness, or its
  labels, which a staged rollout's waves read), and
- the nodes whose in-flight deletions changed since the previous plan;

so a plan costs what changed, not what exists. What a plan reads over every node is kept as it
changes, too: the skipped nodes in name order and counted by readiness, the outdated nodes in name
order (the budget takes the first of them), and the verdicts in a persistent map that each plan
shares (`FrozenVerdicts`), so that planning a 100,000-node fleet after one change costs neither
a sort nor a copy. Every node is judged again when the target revision, minReadySeconds or the
progress deadline changes, or after `reset`. A node whose verdict the clock alone may change is
judged again once that time has come, no event announcing it: with minReadySeconds > 0, a pod
Ready but not available yet turns available at its Ready transition plus minReadySeconds; with a
progress deadline, a starting or failing pod passes the deadline, or a restart is forgiven
(`health.next_clock_change`).

A book's plans are those of the full planner (every node judged from nothing, the rules of
`verdicts`) for the same inputs, provided every node that changed since the previous plan is
named in `changed`; `tests/unit/domain/test_rollout_book.py` checks this over random histories
against that planner restated as a test oracle. Both strategies plan with the book: an
AdvancedRollingUpdate's deletions, and an OTA rollout's broken nodes, waves and deadline
upgrades. The book holds no reference to the cluster: each `refresh` is handed what the
caches show (the DaemonSet's pods by node, the nodes' readiness) and reads only the nodes it judges.
"""

import heapq
import itertools
from bisect import bisect_left, insort
from collections.abc import Collection, Iterator, Mapping, Sequence, Set
from dataclasses import dataclass
from datetime import datetime, timedelta

import immutables

from edgerollout.domain.model import (
    NO_IN_FLIGHT,
    InFlight,
    NodeName,
    NodeReadiness,
    PodUID,
    PodView,
)
from edgerollout.domain.planning.health import Broken, next_clock_change
from edgerollout.domain.planning.holds import (
    STAGED_HOLDS,
    HoldReason,
    Holds,
    NodeSets,
    WaveIndex,
    hold_nodes,
)
from edgerollout.domain.planning.node_holds import AskedHold
from edgerollout.domain.planning.revisions import TargetRevision, is_current
from edgerollout.domain.planning.verdicts import (
    CLOCK_DEPENDENT,
    HOLDING_AN_OLD_POD,
    Deletion,
    DeletionPlan,
    DeletionReason,
    Labels,
    NodeVerdict,
    deletion_of,
    judge_node,
    no_labels,
    shortfall,
)
from edgerollout.domain.spec.node_hold import read_hold
from edgerollout.domain.spec.staging import NOT_STAGED, Staging
from edgerollout.domain.timestamps import to_utc
from edgerollout.domain.vocabulary import UPGRADE_HELD

# The verdicts of a Ready pod that the clock alone turns available (minReadySeconds).
_NOT_AVAILABLE_YET = frozenset({NodeVerdict.STARTING, NodeVerdict.OUTDATED_UNAVAILABLE})


@dataclass(frozen=True, slots=True)
class _Entry:
    """One node as last judged: skipped (not Ready), or its verdict and the pod that may go."""

    verdict: NodeVerdict | None
    outdated: PodView | None = None
    broken: Broken | None = None
    available_since: datetime | None = None


_SKIPPED = _Entry(verdict=None)


@dataclass(frozen=True, slots=True, kw_only=True)
class Tally:
    """How many of a DaemonSet's nodes stand where, as its book judged them: what a rollout's
    counts and phase are read from (`reporting.rollout_phase`), at a cost of what is held, not
    of what exists.

    - `verdicts`: the Ready nodes by verdict (a verdict no node has may be absent);
    - `not_ready`: the nodes holding a pod of the DaemonSet (or a deletion in flight) that are
      not Ready, and `not_ready_current` those of them whose one live pod is of the newest
      revision (they are updated, whether or not they are back);
    - `held`: the Ready nodes holding an old pod that the plan holds back, and `held_staged`
      those of them held until someone changes the staging (a node selector, a partition, no
      wave), not by what passes on its own (a wave's turn, a window, a pull).
    """

    verdicts: Mapping[NodeVerdict, int]
    not_ready: int = 0
    not_ready_current: int = 0
    held: int = 0
    held_staged: int = 0

    @property
    def tried(self) -> int:
        """The nodes that tried the newest revision (`RolloutBook.tried`)."""
        return sum(self.verdicts.get(v, 0) for v in TRIED) + self.not_ready_current


# The verdicts of a Ready node holding a pod of the newest revision: it tried it.
TRIED = frozenset(
    {NodeVerdict.UP_TO_DATE, NodeVerdict.STARTING, NodeVerdict.BROKEN, NodeVerdict.OLD_AND_NEW}
)


class FrozenVerdicts(Mapping[NodeName, NodeVerdict]):
    """The verdicts of one plan, over a persistent map that nothing changes any more: equal to
    any mapping of the same items, as a dict would be."""

    __slots__ = ("_verdicts",)

    def __init__(self, verdicts: immutables.Map[NodeName, NodeVerdict]) -> None:
        self._verdicts = verdicts

    def __getitem__(self, node: NodeName) -> NodeVerdict:
        return self._verdicts[node]

    def __contains__(self, node: object) -> bool:
        return node in self._verdicts

    def __iter__(self) -> Iterator[NodeName]:
        return iter(self._verdicts)

    def __len__(self) -> int:
        return len(self._verdicts)

    def __repr__(self) -> str:
        return f"FrozenVerdicts({dict(self._verdicts.items())!r})"


class RolloutBook:
    def __init__(self) -> None:
        self._key: tuple[TargetRevision, int, timedelta | None] | None = None
        self._entries: dict[NodeName, _Entry] = {}
        # Persistent: a plan keeps the map it was given while the book goes on.
        self._verdicts: immutables.Map[NodeName, NodeVerdict] = immutables.Map()
        self._verdict_counts: dict[NodeVerdict, int] = {}
        # The Ready nodes whose verdict is one of HOLDING_AN_OLD_POD, and those not up to date
        # (what `holds` asks of each node, kept as sets; `tally`).
        self._holding_old: set[NodeName] = set()
        self._open: set[NodeName] = set()
        # The deletions in flight of the last refresh; a copy of them when they came without
        # what moved (`InFlight.touched`).
        self._in_flight = NO_IN_FLIGHT
        self._in_flight_kept: dict[PodUID, NodeName] | None = None
        self._unavailable = 0
        # Skipped nodes and their readiness (a not-Ready one may still be counted as desired),
        # also in name order and counted by readiness.
        self._skipped: dict[NodeName, NodeReadiness] = {}
        self._skipped_order: list[NodeName] = []
        self._skipped_counts: dict[NodeReadiness, int] = {}
        self._skipped_current: set[NodeName] = set()
        # Nodes whose outdated pod waits for budget, also in name order (the order they go in).
        self._outdated: set[NodeName] = set()
        self._outdated_order: list[NodeName] = []
        self._replace: set[NodeName] = set()
        # Nodes whose verdict the clock alone may change (STARTING, BROKEN, and with
        # minReadySeconds OUTDATED_UNAVAILABLE), by when it may
        # (those only a change of their pod can change are not here), also as a heap of
        # (when, node) whose entries are stale once `_due` says otherwise; and why the broken
        # ones fail.
        self._due: dict[NodeName, datetime] = {}
        self._due_heap: list[tuple[datetime, NodeName]] = []
        self._broken: dict[NodeName, Broken] = {}
        # When the Ready pod of a node judged STARTING turns available (its Ready transition
        # plus minReadySeconds), also as a heap of (when, node) whose entries are stale once
        # `_turns` says otherwise: its top is `next_available`.
        self._turns: dict[NodeName, datetime] = {}
        self._turns_heap: list[tuple[datetime, NodeName]] = []
        # Nodes whose live pod carries its node's own hold (design §13.6), in force or not: the
        # plan judges the few of them against max-hold and the clock.
        self._asked: dict[NodeName, tuple[AskedHold, ...]] = {}
        # Each node's wave (with waves), read again for the nodes that changed.
        self._waves = WaveIndex()

    def reset(self) -> None:
        """Judge every node again at the next plan, and read every node's wave again."""
        self._key = None
        self._waves = WaveIndex()

    @property
    def broken(self) -> Mapping[NodeName, Broken]:
        """The Ready nodes whose current pod is failing, and why, as of the last `refresh`."""
        return dict(self._broken)

    def refresh(
        self,
        *,
        target: TargetRevision,
        min_ready_seconds: int,
        now: datetime,
        pods_by_node: Mapping[NodeName, Sequence[PodView]],
        readiness: Mapping[NodeName, NodeReadiness],
        changed: Set[NodeName] = frozenset(),
        in_flight: InFlight = NO_IN_FLIGHT,
        progress_deadline: timedelta | None = None,
    ) -> None:
        """Judge again the nodes that changed (or all of them, see the module docstring).

        `pods_by_node`: the DaemonSet's pods on each node holding one (terminating pods included);
        `readiness`: the nodes' readiness (a node absent from it is MISSING); `changed`: the nodes
        where a pod of the DaemonSet, the node's readiness or its labels changed since the
        previous refresh (a staged plan keeps each node's wave until then)."""
        key = (target, min_ready_seconds, progress_deadline)
        touched = in_flight.touched
        if touched is None:
            # Nothing said about what moved: compared with a copy of the ones given before.
            kept, self._in_flight_kept = self._in_flight_kept, dict(in_flight.by_uid)
            if kept is not None and key == self._key:
                moved = kept.keys() ^ self._in_flight_kept.keys()
                touched = {kept[uid] if uid in kept else in_flight.by_uid[uid] for uid in moved}
        else:
            self._in_flight_kept = None
        if key != self._key or touched is None:
            self._clear()
            self._key = key
            names: set[NodeName] = set(pods_by_node)
            names.update(in_flight.nodes)
        else:
            names = set(changed)
            names.update(touched)
            names.update(self._due_by(now))
        self._in_flight = in_flight
        # Whether each judged node is still among the nodes, and its wave, may have changed.
        self._waves.forget(names)
        for name in names:
            self._judge(
                name,
                pods_by_node.get(name, ()),
                readiness.get(name, NodeReadiness.MISSING),
                target,
                min_ready_seconds,
                now,
                progress_deadline,
            )

    def _due_by(self, now: datetime) -> set[NodeName]:
        """The nodes whose verdict the clock may have changed by `now` (taken off the heap: they
        are judged again, which puts them back if the clock may still change them)."""
        due, heap = self._due, self._due_heap
        names: set[NodeName] = set()
        while heap and heap[0][0] < now:
            when, name = heapq.heappop(heap)
            if due.get(name) == when:
                names.add(name)
        return names

    def _next_available(self) -> datetime | None:
        """The first moment a Ready pod judged STARTING turns available (stale entries, of nodes
        judged again since, are dropped off the heap on the way)."""
        turns, heap = self._turns, self._turns_heap
        while heap and turns.get(heap[0][1]) != heap[0][0]:
            heapq.heappop(heap)
        return heap[0][0] if heap else None

    def _clear(self) -> None:
        self._entries.clear()
        self._verdicts = immutables.Map()
        self._verdict_counts.clear()
        self._holding_old.clear()
        self._open.clear()
        self._skipped.clear()
        self._skipped_order.clear()
        self._skipped_counts.clear()
        self._skipped_current.clear()
        self._outdated.clear()
        self._outdated_order.clear()
        self._replace.clear()
        self._due.clear()
        self._due_heap.clear()
        self._broken.clear()
        self._turns.clear()
        self._turns_heap.clear()
        self._asked.clear()
        self._unavailable = 0

    def _judge(
        self,
        name: NodeName,
        pods: Sequence[PodView],
        readiness: NodeReadiness,
        target: TargetRevision,
        min_ready_seconds: int,
        now: datetime,
        progress_deadline: timedelta | None,
    ) -> None:
        previous = self._entries.pop(name, None)
        if previous is not None:
            self._withdraw(name, previous)
        if not pods and name not in self._in_flight.nodes:
            return  # the node holds nothing of the DaemonSet any more
        for pod in pods:
            # One lookup per pod in the common case; the holds are read only where one is.
            if UPGRADE_HELD in pod.conditions:
                self._note_holds(name, pods)
                break
        if readiness is not NodeReadiness.READY:
            self._entries[name] = _SKIPPED
            self._skipped[name] = readiness
            insort(self._skipped_order, name)
            self._skipped_counts[readiness] = self._skipped_counts.get(readiness, 0) + 1
            live = [pod for pod in pods if not pod.deleting]
            if target.known and len(live) == 1 and is_current(live[0], target):
                self._skipped_current.add(name)
            return
        if not target.known:
            self._entries[name] = _Entry(verdict=None)
            return
        live = [pod for pod in pods if not pod.deleting and pod.uid not in self._in_flight.by_uid]
        verdict, outdated, broken = judge_node(
            live, target, min_ready_seconds, now, progress_deadline=progress_deadline
        )
        since = due = None
        if verdict is NodeVerdict.UP_TO_DATE and len(live) == 1 and live[0].ready_since:
            since = to_utc(live[0].ready_since) + timedelta(seconds=min_ready_seconds)
        elif verdict in _NOT_AVAILABLE_YET and len(live) == 1 and live[0].ready:
            ready_since = live[0].ready_since
            if ready_since is not None and min_ready_seconds > 0:
                turns = to_utc(ready_since) + timedelta(seconds=min_ready_seconds)
                # Available strictly after `turns` (`availability.is_available`).
                if turns >= now:
                    due = turns
                    if verdict is NodeVerdict.STARTING:
                        self._turns[name] = turns
                        heapq.heappush(self._turns_heap, (turns, name))
        self._entries[name] = _Entry(
            verdict=verdict, outdated=outdated, broken=broken, available_since=since
        )
        self._verdicts = self._verdicts.set(name, verdict)
        self._verdict_counts[verdict] = self._verdict_counts.get(verdict, 0) + 1
        if verdict in HOLDING_AN_OLD_POD:
            self._holding_old.add(name)
        if verdict is not NodeVerdict.UP_TO_DATE:
            self._open.add(name)
        if broken is not None:
            self._broken[name] = broken
        if progress_deadline is not None and verdict in CLOCK_DEPENDENT and len(live) == 1:
            clock = next_clock_change(
                live[0], min_ready_seconds=min_ready_seconds, progress_deadline=progress_deadline
            )
            # The verdict changes at the first moment after `clock`; once past it, the clock
            # changes nothing more (a broken pod stays broken until it changes).
            if clock is not None and clock >= now:
                due = clock if due is None else min(due, clock)
        if due is not None:
            self._due[name] = due
            heapq.heappush(self._due_heap, (due, name))
        if verdict.unavailable:
            self._unavailable += 1
        if outdated is not None:
            if verdict is NodeVerdict.OUTDATED_UNAVAILABLE:
                self._replace.add(name)
            else:
                self._outdated.add(name)
                insort(self._outdated_order, name)

    def _note_holds(self, name: NodeName, pods: Sequence[PodView]) -> None:
        """Keep the holds the live pods of a node carry (design §13.6)."""
        asked = tuple(
            AskedHold(pod=pod, request=request)
            for pod in pods
            if not pod.deleting and (request := read_hold(pod.conditions)) is not None
        )
        if asked:
            self._asked[name] = asked

    def _withdraw(self, name: NodeName, entry: _Entry) -> None:
        """Take a node's previous verdict out of the totals."""
        readiness = self._skipped.pop(name, None)
        if readiness is not None:
            _remove_sorted(self._skipped_order, name)
            self._skipped_counts[readiness] -= 1
            self._skipped_current.discard(name)
        verdict = self._verdicts.get(name)
        if verdict is not None:
            self._verdicts = self._verdicts.delete(name)
            self._verdict_counts[verdict] -= 1
            self._holding_old.discard(name)
            self._open.discard(name)
            if verdict.unavailable:
                self._unavailable -= 1
        if name in self._outdated:
            self._outdated.remove(name)
            _remove_sorted(self._outdated_order, name)
        self._replace.discard(name)
        self._due.pop(name, None)
        self._turns.pop(name, None)
        self._broken.pop(name, None)
        self._asked.pop(name, None)

    def plan(
        self,
        *,
        max_unavailable: int,
        desired_nodes: int | None = None,
        counted_while_not_ready: frozenset[NodeReadiness] = frozenset(),
        staging: Staging = NOT_STAGED,
        labels: Labels = no_labels,
        now: datetime | None = None,
    ) -> DeletionPlan:
        """The deletions to make now, from the verdicts of the last `refresh`.

        A staged rollout (`staging`, with the nodes' `labels`) is held again at every plan, over
        every node: which nodes a wave or a partition holds depends on all of them."""
        skipped = tuple(self._skipped_order)
        key = self._key
        if key is None or not key[0].known:
            return DeletionPlan.newest_unknown(
                max_unavailable=max_unavailable, skipped_nodes=skipped
            )
        unavailable = self._unavailable
        if desired_nodes is not None:
            counted = sum(self._skipped_counts.get(r, 0) for r in counted_while_not_ready)
            unavailable += shortfall(
                desired_nodes, judged=len(self._verdicts), counted_skipped=counted
            )
        room = max(0, max_unavailable - unavailable)
        entries = self._entries
        holds = self.holds(staging, labels, now=now)
        held = holds.held
        chosen: list[Deletion] = [
            deletion_of(entry.outdated, name, DeletionReason.OUTDATED_UNAVAILABLE)
            for name in self._replace
            if (entry := entries[name]).outdated is not None and name not in held
        ]
        if room:
            if staging.active and holds.by_name:
                # The outdated nodes are kept in name order: the rollout's order without waves.
                going = list(
                    itertools.islice(
                        (name for name in self._outdated_order if name not in held), room
                    )
                )
            elif staging.active:
                # Every node of the book is ranked (`holds` covers them all): its rank, looked
                # up at C speed, is its place in the order.
                ready = sorted(self._outdated.difference(held), key=holds.rank.__getitem__)
                going = ready[:room]
            else:
                going = self._outdated_order[:room]
            chosen.extend(
                deletion_of(entry.outdated, name, DeletionReason.OUTDATED_WITHIN_BUDGET)
                for name in going
                if (entry := entries[name]).outdated is not None
            )
        return DeletionPlan(
            deletions=tuple(sorted(chosen, key=lambda d: (d.node_name, d.name, d.uid))),
            max_unavailable=max_unavailable,
            unavailable=unavailable,
            # Shared, not copied (a copy of every verdict was 0.6 ms of each plan at 100,000
            # nodes): the book replaces its map as nodes are judged again.
            verdicts=FrozenVerdicts(self._verdicts),
            verdict_counts={verdict: n for verdict, n in self._verdict_counts.items() if n},
            skipped_nodes=skipped,
            holds=holds,
            broken=self.broken,
            next_available=self._next_available(),
        )

    @property
    def verdicts(self) -> Mapping[NodeName, NodeVerdict]:
        """The Ready nodes' verdicts as of the last `refresh` (shared, not copied)."""
        return FrozenVerdicts(self._verdicts)

    @property
    def asked(self) -> Mapping[NodeName, tuple[AskedHold, ...]]:
        """The nodes whose live pods carry their node's hold, with those pods, as of the last
        `refresh` (a copy of the few there are)."""
        return dict(self._asked)

    @property
    def not_ready(self) -> Collection[NodeName]:
        """The nodes holding a pod that are not Ready, as of the last `refresh` (read only)."""
        return self._skipped.keys()

    def runs_newest(self, name: NodeName) -> bool:
        """Whether a node that is not Ready holds one live pod, of the newest revision."""
        return name in self._skipped_current

    def tried(self) -> int:
        """How many nodes tried the newest revision, as of the last `refresh`: a Ready node with
        a pod of it (available, starting, failing, or beside an old one), a node not Ready whose
        one live pod is of it."""
        counts = self._verdict_counts
        return sum(counts.get(verdict, 0) for verdict in TRIED) + len(self._skipped_current)

    def tally(self, holds: Holds) -> Tally:
        """The nodes counted by where they stand, as of the last `refresh`, with `holds` the
        plan's (see `Tally`)."""
        held_nodes = holds.held
        # The held nodes holding an old pod, by lookups at C speed; only those are asked for
        # their reason, a wave's (never a staged one) told by identity (an Enum's hash is
        # Python code, and a staged plan holds thousands of nodes).
        holding = held_nodes.keys() & self._holding_old
        wave = HoldReason.WAVE
        held = len(holding)
        held_staged = 0
        for name in holding:
            reason = held_nodes[name].reason
            if reason is not wave:
                held_staged += reason in STAGED_HOLDS
        return Tally(
            verdicts={verdict: n for verdict, n in self._verdict_counts.items() if n},
            not_ready=len(self._skipped),
            not_ready_current=len(self._skipped_current),
            held=held,
            held_staged=held_staged,
        )

    def holds(
        self, staging: Staging, labels: Labels = no_labels, *, now: datetime | None = None
    ) -> Holds:
        """The nodes `staging` holds back, and its wave, from the verdicts of the last `refresh`
        (a wave is done when its Ready nodes are up to date, judged as for a deletion)."""
        verdicts, entries = self._verdicts, self._entries
        return hold_nodes(
            staging,
            now=now,
            done_since=lambda name: _available_since(entries.get(name)),
            nodes=self._entries.keys(),
            labels=labels,
            done=lambda name: verdicts.get(name) is NodeVerdict.UP_TO_DATE,
            ready=lambda name: name in verdicts,
            outdated=lambda name: verdicts.get(name) in HOLDING_AN_OLD_POD,
            wave_index=self._waves,
            sets=NodeSets(open=self._open, outdated=self._holding_old),
        )


def _available_since(entry: _Entry | None) -> datetime | None:
    return None if entry is None else entry.available_since


def _remove_sorted(names: list[NodeName], name: NodeName) -> None:
    """Remove `name`, which is there, from a list kept in order."""
    del names[bisect_left(names, name)]
