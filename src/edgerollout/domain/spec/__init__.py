"""Reading a DaemonSet's spec: its rollout annotations, each read once per reconcile (`rollout_spec`)."""
