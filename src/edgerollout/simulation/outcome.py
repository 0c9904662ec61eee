"""What a simulation found, as numbers a person compares between two settings.

- `time_to`: seconds from the start until 50, 90, 99 and 100 % of the nodes that were ever online
  ran the new revision, available (None: never reached). Nodes never online are left out: no
  rollout can reach them, and counting them would make every fleet with one dead node "never
  done".
- `downtime`: per node ever online, the seconds it was online without an available pod of the
  DaemonSet (the rollout's cost to that node; an outage's own time is the link's, not the
  rollout's), as p50 and p99 (nearest rank).
- `peak_unavailable`: the most nodes online without an available pod at once.
- `never_updated`: nodes that never ran the new revision, available.
- `pulled_bytes`: the new image's bytes downloaded over the nodes' links.
- `planner_calls`: how many times the controller's planner was asked.
- `series`: every `sample_every` seconds, nodes updated so far, online nodes unavailable, nodes
  offline, and nodes the planner judged broken at its last plan.
"""

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

PERCENTS = (50, 90, 99, 100)


@dataclass(frozen=True, slots=True, kw_only=True)
class Sample:
    """The fleet at `at` seconds (see the module docstring's `series`)."""

    at: float
    updated: int
    unavailable: int
    offline: int
    broken: int


@dataclass(frozen=True, slots=True, kw_only=True)
class Outcome:
    """A simulation's findings (see the module docstring); `end` is the simulated second it
    stopped at, `finished` whether the rollout was done then, `reason` why it stopped."""

    nodes: int
    end: float
    finished: bool
    reason: str
    time_to: dict[str, float | None]
    downtime_p50: float
    downtime_p99: float
    peak_unavailable: int
    max_unavailable: int | None
    never_updated: int
    ever_online: int
    broken: int
    always_offline: int
    paused: bool
    pulled_bytes: int
    planner_calls: int
    notices: tuple[str, ...]
    series: tuple[Sample, ...]

    def as_json(self) -> dict[str, Any]:
        """The documented JSON document (docs/simulation.md), keys in a fixed order."""
        return {
            "nodes": self.nodes,
            "finished": self.finished,
            "reason": self.reason,
            "end_seconds": _number(self.end),
            "time_to": {key: _maybe(value) for key, value in self.time_to.items()},
            "downtime_seconds": {
                "p50": _number(self.downtime_p50),
                "p99": _number(self.downtime_p99),
            },
            "peak_unavailable": self.peak_unavailable,
            "max_unavailable": self.max_unavailable,
            "never_updated": self.never_updated,
            "ever_online": self.ever_online,
            "broken": self.broken,
            "always_offline": self.always_offline,
            "paused": self.paused,
            "pulled_bytes": self.pulled_bytes,
            "planner_calls": self.planner_calls,
            "warnings": list(self.notices),
            "series": {
                "seconds": [_number(sample.at) for sample in self.series],
                "updated": [sample.updated for sample in self.series],
                "unavailable": [sample.unavailable for sample in self.series],
                "offline": [sample.offline for sample in self.series],
                "broken": [sample.broken for sample in self.series],
            },
        }


def _number(value: float) -> float | int:
    """Seconds to the millisecond; whole ones as integers (a stable, short document)."""
    rounded = round(value, 3)
    return int(rounded) if rounded == int(rounded) else rounded


def _maybe(value: float | None) -> float | int | None:
    return None if value is None else _number(value)


def nearest_rank(values: Sequence[float], percent: int) -> float:
    """The `percent`th percentile of sorted `values` by nearest rank (0 for no values)."""
    if not values:
        return 0.0
    rank = max(1, -(-percent * len(values) // 100))
    return values[rank - 1]


def time_to(updated_times: Sequence[float], ever_online: int) -> dict[str, float | None]:
    """When each share of `ever_online` nodes had updated (`updated_times` in order)."""
    reached: dict[str, float | None] = {}
    for percent in PERCENTS:
        needed = -(-percent * ever_online // 100)
        ok = ever_online > 0 and needed <= len(updated_times)
        reached[str(percent)] = updated_times[needed - 1] if ok else None
    return reached


def summarize(
    *,
    nodes: int,
    end: float,
    finished: bool,
    reason: str,
    updated_times: Sequence[float],
    ever_online: int,
    downtimes: Sequence[float],
    peak_unavailable: int,
    pulled_bytes: float,
    planner_calls: int,
    max_unavailable: int | None,
    broken: int,
    always_offline: int,
    paused: bool,
    notices: tuple[str, ...],
    samples: Sequence[Sample],
) -> Outcome:
    """The outcome of a simulation from what its loop counted."""
    ordered = sorted(downtimes)
    return Outcome(
        nodes=nodes,
        end=end,
        finished=finished,
        reason=reason,
        time_to=time_to(updated_times, ever_online),
        downtime_p50=nearest_rank(ordered, 50),
        downtime_p99=nearest_rank(ordered, 99),
        peak_unavailable=peak_unavailable,
        max_unavailable=max_unavailable,
        never_updated=nodes - len(updated_times),
        ever_online=ever_online,
        broken=broken,
        always_offline=always_offline,
        paused=paused,
        pulled_bytes=round(pulled_bytes),
        planner_calls=planner_calls,
        notices=notices,
        series=tuple(samples),
    )
