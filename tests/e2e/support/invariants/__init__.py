"""An observer of edgerollout's promises that shares nothing with the controller's code.

It keeps its own watches on the namespace's pods, the cluster's Nodes, the namespace's DaemonSets
and Events, and tails the API server's audit log (the lab records every pod deletion there, with
its user and its DeleteOptions). After the run, `violations()` holds the record against the
promises of an AdvancedRollingUpdate:

1. `budget`: a deletion of an available pod is made only while fewer than max-unavailable other
   Ready nodes are unavailable (the rule design §4.3 states at the moment of each deletion);
2. `not-ready-node`: no pod is deleted on a node that is not Ready;
3. `uid-precondition`, `deleted-twice`, `not-decided`: every deletion carries the pod's UID as a
   precondition, no pod is deleted twice, and no pod is deleted that the rules do not pick (a
   current pod, or any pod while the DaemonSet is not AdvancedRollingUpdate); every
   `SuccessfulDelete` Event names a pod the controller deleted, once;
4. `paused`, `partition`: no pod is deleted while the DaemonSet is paused
   (`edgerollout.io/paused`), none on a node its partition holds (`edgerollout.io/partition`:
   the last N of its nodes in name order) — the annotations read as `holds` restates them, a hold
   counting only when the watcher saw it throughout `grace` seconds before the deletion request
   and `grace` seconds after (the race with an annotation write: `judge`'s docstring);
5. `node-hold`: no pod is deleted while its node's own hold on it is in force (the condition
   `edgerollout.io/UpgradeHeld`, before its end and within `edgerollout.io/max-hold`);
6. `batches`: no pod is deleted on a node of a batch not started (`edgerollout.io/batches`):
   every Ready node of the earlier batches, but those holding their own upgrade, runs the
   template and is available, for `edgerollout.io/batch-soak` at least (`judge_holds`).

The controller's view of the cluster lags or leads the watcher's by a moment, so a state counts
against a deletion only when it held from `grace` seconds before it to `grace` seconds after it —
except the controller's own earlier deletions, which it always knows about. The deleted pod itself
counts as available only if it was from `grace` seconds before its deletion until its own watch
delivered the deletion: that watch keeps the API server's order, so a change it delivered first
came first, even if it arrived after the audit log's time of the deletion request. Times are
wall-clock seconds: watch events when they arrived, corrected by the objects' own transition times
when a watch was interrupted, and the audit log's request times for deletions.

By concern: `timeline` (values over time), `history` (what was recorded: pod lives, node
readiness, the DaemonSet's template and annotations, deletions), `recorder` (the watches and the
audit log that fill a history), `holds` and `batches` (what a staged DaemonSet and a node's own
hold hold back, restated from the specification), `judge` and `judge_holds` (the promises,
checked against a history), `report` (peak
unavailability and the printed timeline), and `watcher` (`InvariantWatcher`, the others
together).
"""

from tests.e2e.support.invariants.history import AuditedDeletion, History, PodLife
from tests.e2e.support.invariants.judge import Violation
from tests.e2e.support.invariants.timeline import Timeline, clock
from tests.e2e.support.invariants.watcher import InvariantWatcher

__all__ = [
    "AuditedDeletion",
    "History",
    "InvariantWatcher",
    "PodLife",
    "Timeline",
    "Violation",
    "clock",
]
