"""What a phase cost, read from two metric readings."""

from __future__ import annotations

from bench import api_load, metrics

BEFORE = """\
workqueue_work_duration_seconds_count{name="daemonset"} 10
workqueue_work_duration_seconds_sum{name="daemonset"} 1.5
workqueue_work_duration_seconds_count{name="replicaset"} 7
workqueue_retries_total{name="daemonset"} 4
workqueue_queue_duration_seconds_sum{name="daemonset"} 0.25
daemonset_controller_stale_sync_skips_total{group="",resource="pods"} 3
"""
AFTER = """\
workqueue_work_duration_seconds_count{name="daemonset"} 250
workqueue_work_duration_seconds_sum{name="daemonset"} 9.004
workqueue_work_duration_seconds_count{name="replicaset"} 70
workqueue_retries_total{name="daemonset"} 184
workqueue_queue_duration_seconds_sum{name="daemonset"} 3.0
daemonset_controller_stale_sync_skips_total{group="",resource="pods"} 103
daemonset_controller_stale_sync_skips_total{group="apps",resource="daemonsets"} 60
"""


def test_daemonset_controller_counts_only_its_own_queue_and_every_stale_skip() -> None:
    delta = metrics.delta(metrics.parse(AFTER), metrics.parse(BEFORE))
    assert api_load.daemonset_controller(delta) == {
        "syncs": 240,
        "stale_skips": 160,
        "retries": 180,
        "sync_seconds": 7.5,
        "queue_wait_seconds": 2.75,
    }


def test_daemonset_controller_of_a_quiet_phase_is_all_zero() -> None:
    same = metrics.delta(metrics.parse(BEFORE), metrics.parse(BEFORE))
    assert api_load.daemonset_controller(same) == {
        "syncs": 0,
        "stale_skips": 0,
        "retries": 0,
        "sync_seconds": 0.0,
        "queue_wait_seconds": 0.0,
    }
