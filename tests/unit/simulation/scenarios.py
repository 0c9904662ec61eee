"""The DaemonSets and fleets the simulation tests are written in."""

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from edgerollout.domain.model import DaemonSetUID, DaemonSetView
from edgerollout.domain.vocabulary import (
    ADVANCED_ROLLING_UPDATE,
    MAX_UNAVAILABLE_ANNOTATION,
    ON_DELETE,
    UPDATE_STRATEGY_ANNOTATION,
)
from edgerollout.simulation.engine import Rollout
from edgerollout.simulation.fleet import Fleet, read_fleet


def rollout(
    strategy: str = ADVANCED_ROLLING_UPDATE,
    *,
    max_unavailable: str = "1",
    annotations: Mapping[str, str] | None = None,
    min_ready_seconds: int = 0,
) -> Rollout:
    """A DaemonSet opted in with `strategy` and `max_unavailable`, and any other annotations."""
    return Rollout(
        daemonset=DaemonSetView(
            namespace="edge",
            name="agent",
            uid=DaemonSetUID("ds-1"),
            annotations={
                UPDATE_STRATEGY_ANNOTATION: strategy,
                MAX_UNAVAILABLE_ANNOTATION: max_unavailable,
                **(annotations or {}),
            },
            update_strategy_type=ON_DELETE,
            min_ready_seconds=min_ready_seconds,
        )
    )


# A fleet whose timings are round numbers: a node's way from deletion to Ready takes 20 s
# (5 s terminating, 1 s until re-created, 10 MB at 1 MB/s, 4 s to start).
CLOCKWORK: dict[str, Any] = {
    "nodes": 10,
    "horizon": "1h",
    "image_size": "10MB",
    "termination": "5s",
    "recreate": "1s",
    "container_start": "4s",
    "reconcile_delay": "1s",
    "pools": [{"name": "only", "link_rate": "1MB/s"}],
}


def clockwork(**changes: Any) -> Fleet:
    """`CLOCKWORK`, with `changes` to its keys."""
    return read_fleet({**CLOCKWORK, **changes})


def with_fleet(fleet: Fleet, **changes: Any) -> Fleet:
    return replace(fleet, **changes)
