"""Writes the controller has made and the cache does not show yet: deletions, and condition patches
(`ConditionWrites`, below).

Right after a delete, the pod cache may still show the pod Running; a moment later it shows the
node with no pod until the native controller creates the replacement. In both gaps a reconcile that
trusted the cache alone would see one less unavailable node and delete one pod too many. Every
deletion is therefore recorded here (before the request is sent) with its node, handed to the
planner as an `InFlightDeletion`, and dropped only once the cache has caught up: the pod is seen
Terminating, or a live pod is seen on that node again, or the entry is older than `timeout`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from edgerollout.domain.conditions import ConditionWrite
from edgerollout.domain.model import InFlightDeletion, NodeName, PodUID, PodView


@dataclass(frozen=True, slots=True)
class _Entry:
    uid: PodUID
    node: NodeName
    since: float


class Expectations:
    def __init__(self, *, timeout: float = 300.0) -> None:
        self.timeout = timeout
        self._by_owner: dict[str, dict[PodUID, _Entry]] = {}

    def expect(self, owner_uid: str, uid: PodUID, node: NodeName) -> None:
        self._by_owner.setdefault(owner_uid, {})[uid] = _Entry(uid, node, time.monotonic())

    def drop(self, owner_uid: str, uid: PodUID) -> None:
        self._by_owner.get(owner_uid, {}).pop(uid, None)

    def forget(self, owner_uid: str) -> None:
        self._by_owner.pop(owner_uid, None)

    def pending(self, owner_uid: str) -> int:
        return len(self._by_owner.get(owner_uid, {}))

    def settle(
        self, owner_uid: str, pods_on: Callable[[NodeName], Iterable[PodView]]
    ) -> tuple[InFlightDeletion, ...]:
        """Drop the entries the cache now reflects; return the rest for the planner.

        `pods_on(node)` gives the owner's pods the cache shows on a node: only the nodes of the
        entries are looked at."""
        entries = self._by_owner.get(owner_uid)
        if not entries:
            return ()
        now = time.monotonic()
        for entry in list(entries.values()):
            on_node = list(pods_on(entry.node))
            pod = next((pod for pod in on_node if pod.uid == entry.uid), None)
            caught_up = (pod is not None and pod.deleting) or (
                pod is None and any(not other.deleting for other in on_node)
            )
            if caught_up or now - entry.since > self.timeout:
                del entries[entry.uid]
        return tuple(InFlightDeletion(uid=e.uid, node_name=e.node) for e in entries.values())


@dataclass(frozen=True, slots=True)
class _SentCondition:
    status: str
    reason: str
    message: str
    since: float


class ConditionWrites:
    """Condition patches the controller has sent and the cache does not show yet.

    Reconciles of a DaemonSet follow one another while the echoes of its writes are still on their
    way, and a reconcile that trusted the cache alone would send the same patch again. Each write is
    recorded once the API server has accepted it; while its record stands, the same write (same
    pod, type, status, reason and message) is not sent again. A record is dropped once the cached
    pod shows the condition so, once the pod is gone, or after `timeout` (so that a condition
    someone changed back meanwhile is written again).
    """

    def __init__(self, *, timeout: float = 10.0) -> None:
        self.timeout = timeout
        self._by_owner: dict[str, dict[tuple[PodUID, str], _SentCondition]] = {}

    def sent(self, owner_uid: str, write: ConditionWrite) -> None:
        condition = write.condition
        self._by_owner.setdefault(owner_uid, {})[(write.uid, condition.type)] = _SentCondition(
            status=str(condition.status),
            reason=condition.reason,
            message=condition.message,
            since=time.monotonic(),
        )

    def forget(self, owner_uid: str) -> None:
        self._by_owner.pop(owner_uid, None)

    def unsent(
        self, owner_uid: str, writes: Iterable[ConditionWrite], pods: Iterable[PodView]
    ) -> list[ConditionWrite]:
        """Drop the records the cache now reflects; return the writes not already sent."""
        writes = list(writes)
        records = self._by_owner.get(owner_uid)
        if not records:
            return writes
        by_uid = {pod.uid: pod for pod in pods}
        now = time.monotonic()
        for (uid, kind), record in list(records.items()):
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
        return [write for write in writes if not self._stands(records, write)]

    @staticmethod
    def _stands(records: dict[tuple[PodUID, str], _SentCondition], write: ConditionWrite) -> bool:
        record = records.get((write.uid, write.condition.type))
        return (
            record is not None
            and record.status == str(write.condition.status)
            and record.reason == write.condition.reason
            and record.message == write.condition.message
        )

    def next_expiry(self, owner_uid: str) -> float | None:
        """Seconds until the oldest standing record of the owner expires; None if there is none."""
        records = self._by_owner.get(owner_uid)
        if not records:
            return None
        oldest = min(record.since for record in records.values())
        return max(0.0, self.timeout - (time.monotonic() - oldest))
