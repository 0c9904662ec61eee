"""The agent's metrics, in a registry of its own.

The controller and the agent are one package and one command: a metric registered on import in
the default registry would be exported by both processes (the controller reported the agent's
scoping gauge as 0, and an alert on it fired for the controller). The agent's series live here
and its `/metrics` serves only this registry, with the process, platform and garbage-collector
series every Prometheus client exports; the controller's stay in the default registry.
"""

from prometheus_client import (
    GC_COLLECTOR,
    PLATFORM_COLLECTOR,
    PROCESS_COLLECTOR,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
)

REGISTRY = CollectorRegistry(auto_describe=True)
for _collector in (PROCESS_COLLECTOR, PLATFORM_COLLECTOR, GC_COLLECTOR):
    REGISTRY.register(_collector)

REQUESTS = Counter(
    "edgerollout_agent_requests_total",
    "Requests to the agent, by route and code.",
    ["route", "code"],
    registry=REGISTRY,
)
DURATION = Histogram(
    "edgerollout_agent_request_duration_seconds",
    "Time to answer a request, by route.",
    ["route"],
    registry=REGISTRY,
)
AUTH_DISABLED = Gauge(
    "edgerollout_agent_auth_disabled",
    "1 if the agent runs with --auth=none: any local process may upgrade this node's pods.",
    registry=REGISTRY,
)
ENFORCED = Gauge(
    "edgerollout_agent_node_scoping_enforced",
    "1 while the API server is proven to confine the agent to its node (design §8.3), else 0; "
    "while 0 the agent refuses every change.",
    registry=REGISTRY,
)
