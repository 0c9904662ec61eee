"""The writes that carry out a `Plan`, one writer per kind of decision.

Each write is guarded by the leader check (`guard`), tested again right before every request:
- `events`: the Events of the plan's notices, each distinct one once, and a deletion's Event sent
  without holding the reconcile;
- `deletions`: pods deleted with a UID precondition, recorded in the rollout's `Expectations`
  before they are sent, so the budget holds while the cache catches up;
- `conditions`: `pods/status` strategic merge patches holding one condition, with the pod's UID as
  precondition, recorded in the rollout's `ConditionWrites` once accepted;
- `pull_jobs`: pull Jobs created, reported on their pods and deleted;
- `pause`: the rollout paused when more nodes are broken than its failure budget tolerates: a
  merge patch of the one annotation, which the controller's admission policy admits and nothing
  else on a DaemonSet (design §13.4).

A plan's deletions and condition writes are sent concurrently (`concurrency`). A pod that is gone
(404) or was replaced (409 on the UID precondition) is not an error: the next plan judges its
successor. Per-pod decisions are logged at DEBUG with structured fields; the reconcile logs one
summary line.
"""
