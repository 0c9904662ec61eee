"""`edgerollout_daemonset_pool_nodes`: each rollout's nodes by node pool, counted at each scrape.

Counting by pool reads every node of a rollout (`reporting.pool_counts`), which the controller
does not do after each plan; a Prometheus scrape every 15 to 60 s asks for it instead. The
collector runs in the metrics handler, on the event loop, between two reconciles: it reads the
books and the caches while nothing changes them.
"""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from edgerollout.controller.cluster_cache import ClusterCache
from edgerollout.controller.rollout_state import RolloutStates
from edgerollout.domain.model import NodeName
from edgerollout.domain.reporting.pool_counts import counts_by_pool, pool_label

NAME = "edgerollout_daemonset_pool_nodes"
HELP = (
    "Each opted-in DaemonSet's nodes by node pool (its waves' label, else"
    ' apps.openyurt.io/nodepool; pool="" for nodes without it) as of its last plan: total, and'
    " updated, offline, broken, held, remaining. Counted at each scrape."
)
LABELS = ["namespace", "daemonset", "pool", "state"]


class PoolNodes(Collector):
    def __init__(self, cache: ClusterCache, states: RolloutStates) -> None:
        self.cache = cache
        self.states = states

    def describe(self) -> Iterator[Metric]:
        yield GaugeMetricFamily(NAME, HELP, labels=LABELS)

    def collect(self) -> Iterator[Metric]:
        family = GaugeMetricFamily(NAME, HELP, labels=LABELS)
        nodes = self.cache.nodes
        for key, state in self.states.items():
            cached = self.cache.daemonsets.get(key)
            if cached is None:
                continue
            label = pool_label(cached.view.annotations)

            def pool_of(name: NodeName, label: str = label) -> str:
                node = nodes.get(name)
                return "" if node is None else node.labels.get(label, "")

            namespace, name = cached.view.namespace, cached.view.name
            by_pool = counts_by_pool(state.book, held=state.holds.held, pool_of=pool_of)
            for pool, counts in by_pool.items():
                for where, value in counts.by_state().items():
                    family.add_metric([namespace, name, pool, where], value)
        yield family
