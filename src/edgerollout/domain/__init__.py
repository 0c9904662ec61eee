"""The decisions of edgerollout, as pure functions of plain data.

Which pods to delete now, which condition a pod should carry, how a max-unavailable string becomes
a number: everything here is computed from frozen views of Kubernetes objects and a `now` passed
in. Nothing here does I/O, reads a clock, or imports from the rest of edgerollout but its
stand-alone `settings` (import-linter contracts keep it that way), so every rule of the product
can be tested in microseconds and replayed from a log.

The package is laid out by the three jobs a reconcile does, in this order, each layer reading
only those below it (an import-linter contract):

- `spec`: reading what a DaemonSet asks for, its strategy and rollout annotations (counts,
  durations, label selectors, maintenance windows, staging), once per reconcile
  (`spec.rollout_spec`);
- `planning`: deciding: judging each node (`verdicts`, `health`, `availability`), the one book
  both strategies plan with (`rollout_book`), holds, pre-pulls, deadlines and the failure stop,
  per strategy (`advanced_rollout`, `ota_rollout`); `planning.reconcile.plan` is the entry point
  the controller calls, with a `Snapshot` of what its caches show;
- `reporting`: what `edgerollout status` and `edgerollout plan` show and the metrics count, read
  off the controller's own plan.

Beside them, the words all three share: `model` (the views), `vocabulary`, `events` (Notices)
and `timestamps`. The modules are usable on their own (the agent, for one, needs
`planning.conditions` and `planning.revisions`).
"""
