"""Planning a rollout: judging nodes, the budget, holds, health, pre-pulls and deadlines, per strategy.

The entry point is `reconcile.plan`: a `Snapshot` in, a `Plan` out (`decision`)."""
