"""The reliability suite's chaos runs: controller replicas under supervision (`fleet`), one
seeded run judged by the invariant watcher (`harness`), the faults of each scenario
(`scenarios`), and the long run's results page (`results`)."""
