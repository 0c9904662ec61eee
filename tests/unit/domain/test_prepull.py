"""The pre-pull planner: when a pull Job is started, what it looks like, and how it is reported."""

from typing import Any

from edgerollout.domain.model import ConditionStatus, PodCondition
from edgerollout.domain.prepull import (
    DAEMON_TOLERATIONS,
    JobState,
    JobView,
    PullTemplate,
    job_name,
    plan_prepulls,
    pull_job,
)

from .builders import NEW, NOW, NOW_RFC3339, OLD, old_pod, pod, uid

TEMPLATE = PullTemplate(
    images=("nginx:1.19.5", "gcr.io/distroless/static:nonroot"),
    tolerations=({"key": "edge", "operator": "Exists", "effect": "NoSchedule"},),
    image_pull_secrets=("registry",),
    service_account="nginx",
)


def waiting(revision: str, *, reason: str = "WaitPullImage", status: str = "False") -> Any:
    return {
        "PodImageReady": PodCondition(
            type="PodImageReady",
            status=ConditionStatus(status),
            reason=reason,
            message=f"controllerrevision: {revision}",
            last_transition_time="2025-03-01T11:00:00Z",
        )
    }


def plan(pods: list[Any], jobs: dict[str, JobView] | None = None) -> Any:
    return plan_prepulls(
        pods=pods,
        newest=NEW,
        jobs=jobs or {},
        template=TEMPLATE,
        toolbox_image="busybox:1.36.1-musl",
        deadline_seconds=600,
        now=NOW,
    )


def test_requested_pull_of_the_newest_revision_starts_one_job_on_the_pods_node() -> None:
    requester = pod("p1", "edge-1", revision=OLD, conditions=waiting(NEW))
    steps = plan([requester, old_pod("p2", "edge-2")])

    assert len(steps) == 1
    job = steps[0].create_job
    assert job is not None
    assert job["metadata"]["name"] == job_name(requester, NEW)
    assert job["metadata"]["ownerReferences"] == [
        {"apiVersion": "v1", "kind": "Pod", "name": "p1", "uid": uid("p1")}
    ]
    assert job["spec"]["template"]["spec"]["nodeName"] == "edge-1"
    assert steps[0].report is None
    assert steps[0].delete_job is None


def test_pull_job_runs_every_image_with_a_copied_static_busybox_not_the_images_own_binaries() -> (
    None
):
    requester = pod("p1", "edge-1", revision=OLD, conditions=waiting(NEW))
    job = pull_job(
        requester, revision=NEW, template=TEMPLATE, toolbox_image="tools:1", deadline_seconds=90
    )
    spec = job["spec"]["template"]["spec"]

    assert [c["image"] for c in spec["initContainers"]] == ["tools:1"]
    assert spec["initContainers"][0]["command"] == [
        "cp",
        "/bin/busybox",
        "/edgerollout-pull/busybox",
    ]
    assert [(c["image"], c["command"]) for c in spec["containers"]] == [
        ("nginx:1.19.5", ["/edgerollout-pull/busybox", "true"]),
        ("gcr.io/distroless/static:nonroot", ["/edgerollout-pull/busybox", "true"]),
    ]
    assert spec["restartPolicy"] == "Never"
    assert spec["automountServiceAccountToken"] is False
    assert spec["imagePullSecrets"] == [{"name": "registry"}]
    assert spec["serviceAccountName"] == "nginx"
    assert job["spec"]["backoffLimit"] == 0
    assert job["spec"]["activeDeadlineSeconds"] == 90


def test_pull_job_tolerates_what_the_daemonset_pods_tolerate() -> None:
    requester = pod("p1", "edge-1", revision=OLD, conditions=waiting(NEW))
    job = pull_job(
        requester, revision=NEW, template=TEMPLATE, toolbox_image="tools:1", deadline_seconds=90
    )
    assert job["spec"]["template"]["spec"]["tolerations"] == [
        {"key": "edge", "operator": "Exists", "effect": "NoSchedule"},
        *DAEMON_TOLERATIONS,
    ]


def test_a_running_job_is_left_alone() -> None:
    requester = pod("p1", "edge-1", revision=OLD, conditions=waiting(NEW))
    name = job_name(requester, NEW)
    jobs = {name: JobView(namespace="default", name=name, state=JobState.RUNNING)}
    assert plan([requester], jobs) == ()


def test_a_finished_job_is_reported_on_the_pod_and_deleted() -> None:
    requester = pod("p1", "edge-1", revision=OLD, conditions=waiting(NEW))
    name = job_name(requester, NEW)
    for state, status, reason in (
        (JobState.SUCCEEDED, ConditionStatus.TRUE, "PullImageSuccess"),
        (JobState.FAILED, ConditionStatus.FALSE, "PullImageFail"),
    ):
        steps = plan([requester], {name: JobView(namespace="default", name=name, state=state)})
        assert len(steps) == 1
        report = steps[0].report
        assert report is not None
        assert report.patch == {
            "status": {
                "conditions": [
                    {
                        "type": "PodImageReady",
                        "status": str(status),
                        "reason": reason,
                        "message": f"controllerrevision: {NEW}",
                        "lastTransitionTime": NOW_RFC3339
                        if status is ConditionStatus.TRUE
                        else "2025-03-01T11:00:00Z",
                    }
                ]
            }
        }
        assert steps[0].delete_job == name
        assert steps[0].create_job is None


def test_requests_for_an_older_revision_or_already_answered_start_nothing() -> None:
    pods = [
        pod("stale", "edge-1", revision=OLD, conditions=waiting(OLD)),
        pod(
            "done",
            "edge-2",
            revision=OLD,
            conditions=waiting(NEW, reason="PullImageSuccess", status="True"),
        ),
        pod("failed", "edge-3", revision=OLD, conditions=waiting(NEW, reason="PullImageFail")),
        pod("leaving", "edge-4", revision=OLD, conditions=waiting(NEW), deleting=True),
        pod("unbound", None, revision=OLD, conditions=waiting(NEW)),
    ]
    assert plan(pods) == ()
