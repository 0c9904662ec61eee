"""Deletions the controller has made and the cache does not show yet.

Right after a delete, the pod cache may still show the pod Running; a moment later it shows the
node with no pod until the native controller creates the replacement. In both gaps a reconcile that
trusted the cache alone would see one less unavailable node and delete one pod too many. Every
deletion is therefore recorded here (before the request is sent) with its node, handed to the
planner as an `InFlightDeletion`, and dropped only once the cache has caught up: the pod is seen
Terminating, or a live pod is seen on that node again, or the entry is older than `timeout`.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass

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

    def settle(self, owner_uid: str, pods: Iterable[PodView]) -> tuple[InFlightDeletion, ...]:
        """Drop the entries the cache now reflects; return the rest for the planner."""
        entries = self._by_owner.get(owner_uid)
        if not entries:
            return ()
        by_uid = {pod.uid: pod for pod in pods}
        live_nodes = {pod.node_name for pod in by_uid.values() if not pod.deleting}
        now = time.monotonic()
        for entry in list(entries.values()):
            pod = by_uid.get(entry.uid)
            caught_up = (pod is not None and pod.deleting) or (
                pod is None and entry.node in live_nodes
            )
            if caught_up or now - entry.since > self.timeout:
                del entries[entry.uid]
        return tuple(InFlightDeletion(uid=e.uid, node_name=e.node) for e in entries.values())
