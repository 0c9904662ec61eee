"""What the controller remembers about each rollout, one `RolloutState` per DaemonSet.

Everything a reconcile of a DaemonSet knows beyond what the caches show lives in its state: the
rollout book (each node's last verdict), the deletions in flight, the condition writes in flight,
the nodes changed since its last plan, how many nodes its last plan skipped, and whether its last
plan found it paused (so that a pause and a resume are each told once). `RolloutStates`
makes a state in one place (`of`), when a DaemonSet is first reconciled, and ends it in one place
(`drop`): when the DaemonSet is deleted, recreated under another UID, or stops opting in — so no
piece outlives the others (design §10.3). `reset` ends a state and makes the next one at once.

The cache reports changes here (`pod_changed`, `node_changed`): a node is remembered as changed only
for DaemonSets that have a state, and handed over once (`RolloutState.take_changed_nodes`).
"""

from __future__ import annotations

from collections.abc import Mapping

from edgerollout.controller.expectations import Clock, ConditionWrites, Expectations
from edgerollout.domain.model import DaemonSetUID, NodeName
from edgerollout.domain.planning.holds import NOTHING_HELD, Holds
from edgerollout.domain.planning.rollout_book import RolloutBook
from edgerollout.domain.reporting.node_states import NodeState
from edgerollout.domain.reporting.rollout_condition import SentCondition
from edgerollout.settings import ReconcileSettings


class RolloutState:
    """Everything remembered about one DaemonSet's rollout (see the module docstring)."""

    def __init__(self, uid: DaemonSetUID, *, settings: ReconcileSettings, clock: Clock) -> None:
        self.uid = uid
        self.book = RolloutBook()
        self.deletions = Expectations(timeout=settings.expectations_timeout, clock=clock)
        self.conditions = ConditionWrites(timeout=settings.condition_write_timeout, clock=clock)
        self.skipped_nodes = 0
        self.node_states: Mapping[NodeState, int] = {}
        self.paused: bool | None = None
        self.pause_changes = 0
        # The nodes the last plan held back (the per-pool metrics read them at each scrape).
        self.holds: Holds = NOTHING_HELD
        # The rollout condition last written to the DaemonSet, until the cache shows it.
        self.rollout_condition: SentCondition | None = None
        self._changed: set[NodeName] = set()

    def note_changed(self, node: NodeName) -> None:
        self._changed.add(node)

    def note_paused(self, paused: bool | None) -> None:
        """Remember the pause a plan found (None: the plan did not say). A rollout first seen
        running has not changed its pause; one first seen paused is told as a pause."""
        if paused is not None and paused != self.paused:
            if self.paused is not None or paused:
                self.pause_changes += 1
            self.paused = paused

    def take_changed_nodes(self) -> frozenset[NodeName]:
        """The nodes where a pod of the DaemonSet or the node's readiness changed since the
        previous call (or since the state was made)."""
        changed = frozenset(self._changed)
        self._changed.clear()
        return changed


class RolloutStates:
    """The state of every DaemonSet being reconciled, by key (`namespace/name`)."""

    def __init__(self, *, settings: ReconcileSettings, clock: Clock) -> None:
        self.settings = settings
        self._clock = clock
        self._by_key: dict[str, RolloutState] = {}
        self._by_uid: dict[str, RolloutState] = {}

    def get(self, key: str) -> RolloutState | None:
        return self._by_key.get(key)

    def of(self, key: str, uid: DaemonSetUID) -> RolloutState:
        """The state of the DaemonSet `key` with this UID, made if it has none.

        A state kept for another UID (the DaemonSet was deleted and recreated under the same
        name) must have been dropped first."""
        state = self._by_key.get(key)
        if state is None:
            state = RolloutState(uid, settings=self.settings, clock=self._clock)
            self._by_key[key] = state
            self._by_uid[uid] = state
        assert state.uid == uid, f"{key}: state of UID {state.uid} kept for UID {uid}"
        return state

    def reset(self, key: str) -> RolloutState:
        """End the state of the DaemonSet `key` (`drop`) and make it a new one under the same UID.

        For a DaemonSet that stays known though its rollout ends: whatever keeps its UID (the
        Events it has had, the condition last written on it) still finds a state, while nothing
        of the rollout is remembered."""
        ended = self.drop(key)
        if ended is None:
            raise KeyError(f"{key}: no rollout state to reset")
        state = self.of(key, ended.uid)
        state.rollout_condition = ended.rollout_condition
        return state

    def drop(self, key: str) -> RolloutState | None:
        """Forget everything about the DaemonSet `key`; the dropped state, if there was one."""
        state = self._by_key.pop(key, None)
        if state is not None:
            self._by_uid.pop(state.uid, None)
        return state

    @property
    def skipped_nodes(self) -> int:
        """Nodes skipped by the last plan of every DaemonSet, together."""
        return sum(state.skipped_nodes for state in self._by_key.values())

    def node_states(self) -> dict[NodeState, int]:
        """Nodes by where they stand, as of the last plan of every DaemonSet, together."""
        totals = dict.fromkeys(NodeState, 0)
        for state in self._by_key.values():
            for where, count in state.node_states.items():
                totals[where] += count
        return totals

    def __len__(self) -> int:
        return len(self._by_key)

    def items(self) -> list[tuple[str, RolloutState]]:
        """Each DaemonSet's key and state, in key order."""
        return sorted(self._by_key.items(), key=lambda item: item[0])

    def pod_changed(self, owner_uid: str, node: NodeName) -> None:
        """A pod of the DaemonSet `owner_uid` on `node` was added, changed or removed."""
        state = self._by_uid.get(owner_uid)
        if state is not None:
            state.note_changed(node)

    def node_changed(self, node: NodeName) -> None:
        """The readiness or the labels of `node` changed (or it came or went): news for every
        rollout."""
        for state in self._by_key.values():
            state.note_changed(node)
