"""The series edgerollout's processes export: what the alert rules and the dashboard may read."""

from prometheus_client import REGISTRY

from edgerollout.agent import metrics as agent_metrics
from edgerollout.controller import metrics as controller_metrics
from edgerollout.controller.pool_metrics import NAME as POOL_NODES


def exported_series() -> set[str]:
    """Every series name the controller (the default registry, with its metrics module loaded)
    and the agent (its own registry) export, the per-pool series counted at each scrape, and
    Prometheus' own `up`."""
    assert controller_metrics.PLAN_TIME is not None  # its module registered the controller's
    names = {"up", POOL_NODES}
    for family in [*REGISTRY.collect(), *agent_metrics.REGISTRY.collect()]:
        names.add(family.name)  # a labelled metric has no sample until it is set
        names.update(sample.name for sample in family.samples)
        names.update(f"{family.name}{suffix}" for suffix in ("_total", "_bucket", "_count"))
    return names
