"""Writes the controller has made for one DaemonSet and the cache does not show yet: deletions
(`Expectations`), and condition patches (`ConditionWrites`, below). Each `RolloutState` holds one
of each (design §4.5).

Right after a delete, the pod cache may still show the pod Running; a moment later it shows the
node with no pod until the native controller creates the replacement. In both gaps a reconcile that
trusted the cache alone would see one less unavailable node and delete one pod too many. Every
deletion is therefore recorded here (before the request is sent) with its node, handed to the
planner as an `InFlightDeletion`, and dropped only once the cache shows the deletion's outcome:
the pod Terminating or gone *and* a live pod on that node again (its replacement), or once the
entry is older than `timeout`. Keeping it until the replacement is seen, not only until the pod is
seen Terminating, keeps the node known to the plan in the moment between the old pod's removal
and the new one's creation, when the node holds no pod of the DaemonSet at all: a staged
rollout's waves and partition count the nodes by name (design §12), and a node missing from the
plan for that moment would let the next wave start early.

Both take the clock they measure ages with (monotonic seconds), so tests can move it.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Iterator, Mapping, Set
from dataclasses import dataclass

from edgerollout.domain.model import InFlight, InFlightDeletion, NodeName, PodUID, PodView
from edgerollout.domain.planning.conditions import ConditionWrite

Clock = Callable[[], float]


@dataclass(frozen=True, slots=True)
class _Entry:
    deletion: InFlightDeletion
    since: float


class Expectations:
    """One DaemonSet's deletions in flight.

    A plan looks at them all (a rollout at 10 % of 10,000 nodes has 1,000 in flight), so
    `settle` looks again only at the entries whose node changed since the previous settle (the
    cache names them, as it does for the planner's book), the ones recorded since, and the
    oldest ones, for their timeout: a plan costs what changed, not what is in flight."""

    def __init__(self, *, timeout: float, clock: Clock) -> None:
        self.timeout = timeout
        self._clock = clock
        # Oldest first: an entry recorded again moves to the end.
        self._entries: dict[PodUID, _Entry] = {}
        self._on_node: dict[NodeName, set[PodUID]] = {}
        self._unchecked: set[NodeName] = set()
        # The nodes where an entry came or went since the previous settle.
        self._touched: set[NodeName] = set()
        self._by_uid = _NodesByUID(self._entries)

    def expect(self, uid: PodUID, node: NodeName) -> None:
        self.drop(uid)
        self._entries[uid] = _Entry(InFlightDeletion(uid=uid, node_name=node), self._clock())
        self._on_node.setdefault(node, set()).add(uid)
        self._unchecked.add(node)
        self._touched.add(node)

    def drop(self, uid: PodUID) -> None:
        entry = self._entries.pop(uid, None)
        if entry is None:
            return
        node = entry.deletion.node_name
        self._touched.add(node)
        on_node = self._on_node[node]
        on_node.discard(uid)
        if not on_node:
            del self._on_node[node]

    @property
    def pending(self) -> int:
        return len(self._entries)

    def settle(
        self,
        pods_on: Callable[[NodeName], Iterable[PodView]],
        changed: Set[NodeName] | None = None,
    ) -> InFlight:
        """Drop the entries the cache now reflects; return the rest for the planner.

        `pods_on(node)` gives the DaemonSet's pods the cache shows on a node; `changed`: the
        nodes whose pods changed in the cache since the previous settle (None: any may have).
        Only the nodes of entries are looked at: those of `changed` and those recorded since
        the previous settle. The entries are handed over as views, valid until the next write,
        with the nodes where one came or went since the previous settle (`InFlight.touched`)."""
        unchecked, self._unchecked = self._unchecked, set()
        entries = self._entries
        if entries:
            if changed is None:
                nodes: Iterable[NodeName] = tuple(self._on_node)
            else:
                nodes = [node for node in changed | unchecked if node in self._on_node]
            for node in nodes:
                on_node = list(pods_on(node))
                for uid in tuple(self._on_node[node]):
                    pod = next((pod for pod in on_node if pod.uid == uid), None)
                    replaced = any(not other.deleting and other.uid != uid for other in on_node)
                    if (pod is None or pod.deleting) and replaced:
                        self.drop(uid)
            now = self._clock()
            expired = [
                uid
                for uid, _ in itertools.takewhile(
                    lambda item: now - item[1].since > self.timeout, entries.items()
                )
            ]
            for uid in expired:
                self.drop(uid)
        touched, self._touched = self._touched, set()
        return InFlight(by_uid=self._by_uid, nodes=self._on_node.keys(), touched=touched)


class _NodesByUID(Mapping[PodUID, NodeName]):
    """The node of each entry, by the pod's UID: a view over the entries."""

    def __init__(self, entries: Mapping[PodUID, _Entry]) -> None:
        self._entries = entries

    def __getitem__(self, uid: PodUID) -> NodeName:
        return self._entries[uid].deletion.node_name

    def __contains__(self, uid: object) -> bool:
        return uid in self._entries

    def __iter__(self) -> Iterator[PodUID]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)


@dataclass(frozen=True, slots=True)
class _SentCondition:
    status: str
    reason: str
    message: str
    since: float


class ConditionWrites:
    """One DaemonSet's condition patches that were sent and the cache does not show yet.

    Reconciles of a DaemonSet follow one another while the echoes of its writes are still on their
    way, and a reconcile that trusted the cache alone would send the same patch again. Each write is
    recorded once the API server has accepted it; while its record stands, the same write (same
    pod, type, status, reason and message) is not sent again. A record is dropped once the cached
    pod shows the condition so, once the pod is gone, or after `timeout` (so that a condition
    someone changed back meanwhile is written again).
    """

    def __init__(self, *, timeout: float, clock: Clock) -> None:
        self.timeout = timeout
        self._clock = clock
        self._records: dict[tuple[PodUID, str], _SentCondition] = {}

    def sent(self, write: ConditionWrite) -> None:
        condition = write.condition
        self._records[(write.uid, condition.type)] = _SentCondition(
            status=str(condition.status),
            reason=condition.reason,
            message=condition.message,
            since=self._clock(),
        )

    def settle(self, pods: Iterable[PodView]) -> None:
        """Drop the records the cache now reflects (`pods`: the DaemonSet's pods) or that expired."""
        records = self._records
        if not records:
            return
        by_uid = {pod.uid: pod for pod in pods}
        now = self._clock()
        for (uid, kind), record in tuple(records.items()):
            pod = by_uid.get(uid)
            shown = pod.conditions.get(kind) if pod is not None else None
            caught_up = pod is None or (
                shown is not None
                and str(shown.status) == record.status
                and shown.reason == record.reason
                and shown.message == record.message
            )
            if caught_up or now - record.since > self.timeout:
                del records[(uid, kind)]

    def unsent(self, writes: Iterable[ConditionWrite]) -> list[ConditionWrite]:
        """The writes not already sent and waiting for their echo (after `settle`)."""
        return [write for write in writes if not self._stands(write)]

    def _stands(self, write: ConditionWrite) -> bool:
        record = self._records.get((write.uid, write.condition.type))
        return (
            record is not None
            and record.status == str(write.condition.status)
            and record.reason == write.condition.reason
            and record.message == write.condition.message
        )

    def standing_reason(self, uid: PodUID, kind: str) -> str | None:
        """The reason of the write of `kind` on the pod of `uid` waiting for its echo (None:
        none waits)."""
        record = self._records.get((uid, kind))
        return None if record is None else record.reason

    def next_expiry(self) -> float | None:
        """Seconds until the oldest standing record expires; None if there is none."""
        if not self._records:
            return None
        oldest = min(record.since for record in self._records.values())
        return max(0.0, self.timeout - (self._clock() - oldest))
