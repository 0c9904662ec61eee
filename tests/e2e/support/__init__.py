"""What the end-to-end tests share: the lab handle and patient waiting (`lab`), the seed scenario
(`seed`), the controller as a process (`controller_process`), the agents' lab and its HTTP client
(`agents`), the audit log's pod deletions (`audit`), the watchers that judge a rollout from outside
(`unavailability_watcher`, `invariants`), and the chaos runs of the reliability suite (`chaos`).

Tests and conftests import from here; nothing here is a test.
"""
