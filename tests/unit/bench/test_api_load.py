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


def test_the_controllers_plans_are_told_in_wall_clock_and_in_cpu_time() -> None:
    def histogram(name: str, counts: dict[str, float]) -> metrics.Samples:
        return {(f"{name}_bucket", (("le", bound),)): n for bound, n in counts.items()}

    delta = {
        **histogram(
            "edgerollout_plan_seconds", {"0.001": 50, "0.01": 98, "0.025": 100, "+Inf": 100}
        ),
        **histogram("edgerollout_plan_cpu_seconds", {"0.001": 99, "0.0025": 100, "+Inf": 100}),
        ("edgerollout_pods_deleted_total", ()): 10.0,
    }
    told = api_load.controller_requests(delta)
    assert told["plan_seconds"] == {"p50": 0.001, "p99": 0.0175}
    # The 50th of 100 is the 50th of the 99 under 1 ms: 50/99 of the way to it.
    assert told["plan_cpu_seconds"] == {"p50": 0.00051, "p99": 0.001}
    assert told["pods_deleted"] == 10
