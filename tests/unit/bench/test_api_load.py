"""What a phase cost, read from two metric readings."""

from __future__ import annotations

from bench import api_load, metrics


def readings(
    syncs: int,
    sync_seconds: float,
    replicaset_syncs: int,
    retries: int,
    queue_seconds: float,
    stale_pods: int,
) -> str:
    """The metrics text of kube-controller-manager, a ReplicaSet queue beside the DaemonSet one."""
    return (
        f'workqueue_work_duration_seconds_count{{name="daemonset"}} {syncs}\n'
        f'workqueue_work_duration_seconds_sum{{name="daemonset"}} {sync_seconds}\n'
        f'workqueue_work_duration_seconds_count{{name="replicaset"}} {replicaset_syncs}\n'
        f'workqueue_retries_total{{name="daemonset"}} {retries}\n'
        f'workqueue_queue_duration_seconds_sum{{name="daemonset"}} {queue_seconds}\n'
        f'daemonset_controller_stale_sync_skips_total{{group="",resource="pods"}} {stale_pods}\n'
    )


BEFORE = readings(10, 1.5, 7, 4, 0.25, 3)
AFTER = (
    readings(250, 9.004, 70, 184, 3.0, 103)
    + 'daemonset_controller_stale_sync_skips_total{group="apps",resource="daemonsets"} 60\n'
)


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
    keys = ("syncs", "stale_skips", "retries", "sync_seconds", "queue_wait_seconds")
    assert api_load.daemonset_controller(same) == dict.fromkeys(keys, 0)
