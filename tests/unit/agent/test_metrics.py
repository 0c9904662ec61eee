"""The agent's metrics are the agent's alone: the controller, one command of the same package,
exports none of them, and the agent none of the controller's."""

from prometheus_client import REGISTRY

import edgerollout.cli.main  # noqa: F401  (every command, the agent's and the controller's)
from edgerollout.agent import metrics


def test_the_default_registry_holds_no_agent_series_and_the_agents_no_controller_series() -> None:
    default = {family.name for family in REGISTRY.collect()}
    agent = {family.name for family in metrics.REGISTRY.collect()}

    assert sorted(name for name in default if name.startswith("edgerollout_agent")) == []
    assert sorted(name for name in agent if name.startswith("edgerollout_agent")) == [
        "edgerollout_agent_auth_disabled",
        "edgerollout_agent_node_scoping_enforced",
        "edgerollout_agent_request_duration_seconds",
        "edgerollout_agent_requests",
    ]
    assert {"leader_election_master_status", "edgerollout_rollout_phase"} <= default
    assert not {name for name in agent if name.startswith(("leader_", "workqueue", "reconcile"))}
    # What every Prometheus client exports about its process, the agent too.
    assert {"process_cpu_seconds", "python_info"} <= agent
