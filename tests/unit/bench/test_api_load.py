"""What a phase cost, read from two metric readings."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from bench import api_load, metrics

from edgerollout_lab.control_plane import audit_logs


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


def audited_delete(user: str, at: str, namespace: str = "bench", name: str = "p") -> str:
    return json.dumps(
        {
            "verb": "delete",
            "stage": "ResponseComplete",
            "stageTimestamp": at,
            "objectRef": {"resource": "pods", "namespace": namespace, "name": name},
            "user": {"username": user},
        }
    )


def test_deletions_are_counted_across_the_audit_logs_rotated_files(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "audit-2026-11-29T13-40-00.000.log").write_text(
        "\n".join(
            [
                audited_delete("ours", "2026-11-29T13:29:59Z"),  # before the rollout
                audited_delete("ours", "2026-11-29T13:30:01Z"),
                audited_delete("kwok", "2026-11-29T13:30:02Z"),
            ]
        )
    )
    (logs / "audit.log").write_text(
        "\n".join(
            [
                audited_delete("ours", "2026-11-29T13:41:00Z"),
                audited_delete("ours", "2026-11-29T13:41:01Z", namespace="other"),
                "not json",
            ]
        )
    )
    found = audit_logs(tmp_path)
    assert [path.name for path in found] == ["audit-2026-11-29T13-40-00.000.log", "audit.log"]
    since = datetime(2026, 11, 29, 13, 30, tzinfo=UTC)
    assert api_load.audit_deletes(found, "bench", since) == {"ours": 2, "kwok": 1}


def test_the_deletions_of_one_pod_are_told_apart(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "audit.log").write_text(
        "\n".join(
            [
                audited_delete("ours", "2026-11-29T13:41:00Z", name="p"),
                audited_delete("daemon-set-controller", "2026-11-29T13:41:01Z", name="q"),
                audited_delete("kwok", "2026-11-29T13:41:02Z", name="q"),
            ]
        )
    )
    since = datetime(2026, 11, 29, 13, 30, tzinfo=UTC)
    assert api_load.audit_deletes(audit_logs(tmp_path), "bench", since, name="q") == {
        "daemon-set-controller": 1,
        "kwok": 1,
    }


def test_a_lab_without_an_audit_log_counts_nothing(tmp_path: Path) -> None:
    since = datetime(2026, 11, 29, 13, 30, tzinfo=UTC)
    assert audit_logs(tmp_path) == []
    assert api_load.audit_deletes(audit_logs(tmp_path), "bench", since) is None


def test_the_pod_watches_closed_as_too_slow_are_counted_apart_from_the_others() -> None:
    before = metrics.parse(
        'apiserver_terminated_watchers_total{group="",resource="pods"} 4\n'
        'apiserver_terminated_watchers_total{group="",resource="nodes"} 100\n'
    )
    after = metrics.parse(
        'apiserver_terminated_watchers_total{group="",resource="pods"} 13\n'
        'apiserver_terminated_watchers_total{group="",resource="nodes"} 119\n'
    )

    served = api_load.apiserver_requests(metrics.delta(after, before))

    assert served["pod_watches_closed"] == 9
    assert served["flowcontrol_rejected"] == 0
