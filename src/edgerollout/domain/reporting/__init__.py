"""Reporting a rollout: what `edgerollout status` and `plan` show, and what the metrics count."""
