"""The simulation's outcomes on fleets small and regular enough to work out by hand."""

import json

import pytest

from edgerollout.simulation.engine import simulate
from edgerollout.simulation.fleet import read_fleet
from edgerollout.simulation.outcome import nearest_rank, time_to
from tests.unit.simulation.scenarios import clockwork, rollout


def test_one_node_at_a_time_each_taking_twenty_seconds() -> None:
    # Node k is deleted at 21k s (its predecessor Ready at 21k - 1, seen a second later) and is
    # Ready 20 s after: 20, 41, ..., 209. Five plans a node: its deletion, the deletion's echo,
    # the pod gone, the new pod's creation, and the health recheck 5 s later.
    outcome = simulate(rollout(max_unavailable="1"), clockwork())
    assert outcome.finished
    assert outcome.reason == "every node that was ever online runs the new revision"
    assert outcome.end == 209.0
    assert outcome.time_to == {"50": 104.0, "90": 188.0, "99": 209.0, "100": 209.0}
    assert (outcome.downtime_p50, outcome.downtime_p99) == (20.0, 20.0)
    assert outcome.peak_unavailable == 1
    assert outcome.max_unavailable == 1
    assert outcome.never_updated == 0
    assert outcome.pulled_bytes == 10 * 10_000_000
    assert outcome.planner_calls == 50


def test_a_budget_of_five_upgrades_the_fleet_in_two_rounds() -> None:
    # Nodes 0-4 deleted at 0 and Ready at 20; nodes 5-9 deleted at 21, Ready at 41.
    outcome = simulate(rollout(max_unavailable="50%"), clockwork())
    assert outcome.time_to == {"50": 20.0, "90": 41.0, "99": 41.0, "100": 41.0}
    assert outcome.peak_unavailable == 5
    assert outcome.max_unavailable == 5


def test_the_series_samples_the_fleet_at_its_interval() -> None:
    # Each sample once the events of its second have happened; the last at the end.
    outcome = simulate(rollout(max_unavailable="50%"), clockwork(sample_every="20s"))
    assert [(s.at, s.updated, s.unavailable, s.offline) for s in outcome.series] == [
        (0.0, 0, 5, 0),
        (20.0, 5, 0, 0),
        (40.0, 5, 5, 0),
        (41.0, 10, 0, 0),
    ]


def test_a_fleet_never_online_stops_at_the_horizon() -> None:
    outcome = simulate(rollout(), clockwork(always_offline=1.0, horizon="10m", sample_every="5m"))
    assert not outcome.finished
    assert outcome.end == 600.0
    assert outcome.reason == (
        "stopped at the horizon (600s): 10 nodes do not run the new revision (10 never online)"
    )
    assert outcome.never_updated == outcome.nodes == 10
    assert outcome.time_to == {"50": None, "90": None, "99": None, "100": None}
    assert outcome.ever_online == 0
    assert outcome.planner_calls == 1
    assert [(s.at, s.offline) for s in outcome.series] == [(0.0, 10), (300.0, 10), (600.0, 10)]


def test_a_revision_that_crash_loops_holds_the_budget_until_the_horizon() -> None:
    # Node 0's new pod crash-loops at 20 s: broken, it holds max-unavailable for good.
    outcome = simulate(rollout(), clockwork(crash_loop=1.0, horizon="10m"))
    assert not outcome.finished
    assert outcome.broken == 1
    assert outcome.never_updated == 10
    assert outcome.time_to["50"] is None
    assert outcome.series[-1].broken == 1
    assert outcome.reason == (
        "stopped at the horizon (600s): 10 nodes do not run the new revision"
        " (1 crash-looping on the new revision, 9 still on the old revision)"
    )
    # Online without an available pod from its deletion to the horizon.
    assert outcome.downtime_p99 == 600.0


def test_the_failure_budget_pauses_the_rollout_and_the_planner_is_asked_no_more() -> None:
    outcome = simulate(
        rollout(max_unavailable="2", annotations={"edgerollout.io/max-failed": "1"}),
        clockwork(crash_loop=1.0, horizon="10m"),
    )
    assert outcome.paused
    assert outcome.broken == 2
    assert outcome.never_updated == 10
    assert "the rollout paused by its failure budget" in outcome.reason


def test_a_daemonset_that_is_not_ours_is_never_touched() -> None:
    outcome = simulate(rollout(strategy="Bogus"), clockwork(horizon="1m"))
    assert outcome.never_updated == 10
    assert outcome.pulled_bytes == 0
    assert outcome.notices == (
        'apps.openyurt.io/update-strategy is "Bogus", which is not an update strategy: expected'
        ' "AdvancedRollingUpdate" or "OTA" (any case); this DaemonSet is left alone until it is'
        " fixed",
    )


def test_time_to_counts_the_nodes_ever_online() -> None:
    assert time_to([1.0, 2.0, 3.0], 4) == {"50": 2.0, "90": None, "99": None, "100": None}
    assert time_to([], 0) == {"50": None, "90": None, "99": None, "100": None}


@pytest.mark.parametrize(("percent", "value"), [(50, 2.0), (99, 4.0), (100, 4.0), (1, 1.0)])
def test_percentiles_by_nearest_rank(percent: int, value: float) -> None:
    assert nearest_rank([1.0, 2.0, 3.0, 4.0], percent) == value


def _busy_fleet(seed: int) -> dict[str, object]:
    return {
        "nodes": 60,
        "seed": seed,
        "horizon": "12h",
        "crash_loop": 0.05,
        "always_offline": 0.05,
        "flapping": {"fraction": 0.2},
        "pools": [
            {"name": "a", "outages": {"fraction": 0.5, "duration": "3h"}},
            {"name": "b", "link_rate": "1Mbit/s", "weight": 2},
        ],
    }


def test_the_same_seed_gives_the_same_outcome_and_another_seed_another() -> None:
    first = simulate(rollout(max_unavailable="10%"), read_fleet(_busy_fleet(5))).as_json()
    again = simulate(rollout(max_unavailable="10%"), read_fleet(_busy_fleet(5))).as_json()
    other = simulate(rollout(max_unavailable="10%"), read_fleet(_busy_fleet(6))).as_json()
    assert json.dumps(first) == json.dumps(again)
    assert json.dumps(first) != json.dumps(other)


def test_nodes_offline_when_the_rollout_passes_are_upgraded_when_they_return() -> None:
    outcome = simulate(rollout(max_unavailable="10%"), read_fleet(_busy_fleet(5)))
    assert outcome.always_offline == outcome.nodes - outcome.ever_online == 3
    assert outcome.never_updated == outcome.always_offline + outcome.broken
    assert max(sample.offline for sample in outcome.series) > outcome.always_offline


def test_stages_with_a_spread_take_each_pod_its_own_time_the_same_for_a_seed() -> None:
    # One node at a time: every node's downtime is its own pod's stages, 20 s without spread.
    spread = clockwork(nodes=40, termination={"median": "5s", "p90": "15s"})
    first = simulate(rollout(max_unavailable="1"), spread)
    again = simulate(rollout(max_unavailable="1"), spread)
    assert json.dumps(first.as_json()) == json.dumps(again.as_json())
    assert first.downtime_p50 is not None
    assert first.downtime_p99 is not None
    assert 17.0 < first.downtime_p50 < 23.0
    assert first.downtime_p99 > 30.0
    steady = simulate(rollout(max_unavailable="1"), clockwork(nodes=40))
    assert (steady.downtime_p50, steady.downtime_p99) == (20.0, 20.0)
