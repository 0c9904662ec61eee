"""The pre-pull planner: when a pull Job is started, what it looks like, and how it is reported."""

from typing import Any

from edgerollout.domain.model import Condition, ConditionStatus, NodeName
from edgerollout.domain.planning.prepull import (
    DAEMON_TOLERATIONS,
    JobState,
    JobView,
    PullJob,
    PullTemplate,
    job_name,
    plan_prepulls,
    pull_job,
)
from edgerollout.kube.manifests import status_patch
from edgerollout.settings import PrepullSettings

from .builders import NEW, NOW, NOW_RFC3339, OLD, old_pod, pod, uid

TEMPLATE = PullTemplate(
    images=("nginx:1.19.5", "gcr.io/distroless/static:nonroot"),
    tolerations=({"key": "edge", "operator": "Exists", "effect": "NoSchedule"},),
    image_pull_secrets=("registry",),
    service_account="nginx",
)

TOOLS = PrepullSettings(toolbox_image="tools:1", deadline_seconds=90)


def waiting(revision: str, *, reason: str = "WaitPullImage", status: str = "False") -> Any:
    return {
        "PodImageReady": Condition(
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
        settings=PrepullSettings(),
        now=NOW,
    )


def test_requested_pull_of_the_newest_revision_starts_one_job_on_the_pods_node() -> None:
    requester = pod("p1", "edge-1", revision=OLD, conditions=waiting(NEW))
    steps = plan([requester, old_pod("p2", "edge-2")])

    assert len(steps) == 1
    job = steps[0].create_job
    assert job is not None
    assert job.name == job_name(requester, NEW)
    assert (job.pod_name, job.pod_uid) == ("p1", uid("p1"))
    assert job.node_name == "edge-1"
    assert steps[0].report is None
    assert steps[0].delete_job is None


def test_pull_job_carries_the_template_the_settings_and_the_daemon_tolerations() -> None:
    requester = pod("p1", "edge-1", revision=OLD, conditions=waiting(NEW))
    job = pull_job(requester, revision=NEW, template=TEMPLATE, settings=TOOLS)
    assert job == PullJob(
        namespace="default",
        name=job_name(requester, NEW),
        pod_name="p1",
        pod_uid=uid("p1"),
        node_name=NodeName("edge-1"),
        revision=NEW,
        images=("nginx:1.19.5", "gcr.io/distroless/static:nonroot"),
        tolerations=(
            {"key": "edge", "operator": "Exists", "effect": "NoSchedule"},
            *DAEMON_TOLERATIONS,
        ),
        image_pull_secrets=("registry",),
        service_account="nginx",
        toolbox_image="tools:1",
        deadline_seconds=90,
    )


def test_a_running_job_is_left_alone() -> None:
    requester = pod("p1", "edge-1", revision=OLD, conditions=waiting(NEW))
    name = job_name(requester, NEW)
    jobs = {
        name: JobView(namespace="default", name=name, state=JobState.RUNNING, owner_uid=uid("p1"))
    }
    assert plan([requester], jobs) == ()


def test_a_finished_job_is_reported_on_the_pod_and_deleted() -> None:
    requester = pod("p1", "edge-1", revision=OLD, conditions=waiting(NEW))
    name = job_name(requester, NEW)
    for state, status, reason in (
        (JobState.SUCCEEDED, ConditionStatus.TRUE, "PullImageSuccess"),
        (JobState.FAILED, ConditionStatus.FALSE, "PullImageFail"),
    ):
        job = JobView(namespace="default", name=name, state=state, owner_uid=uid("p1"))
        steps = plan([requester], {name: job})
        assert len(steps) == 1
        report = steps[0].report
        assert report is not None
        assert status_patch(report.condition) == {
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


def test_a_job_not_owned_by_the_pod_is_neither_reported_nor_replaced() -> None:
    # Same name and label as ours, finished, but owned by another pod or by nothing: it proves
    # nothing about this pod's node, so the pod keeps waiting and no report is written.
    requester = pod("p1", "edge-1", revision=OLD, conditions=waiting(NEW))
    name = job_name(requester, NEW)
    for owner in (uid("p2"), None):
        for state in JobState:
            job = JobView(
                namespace="default", name=name, state=state, owner_uid=owner, pod_name="p1"
            )
            assert plan([requester], {name: job}) == ()
