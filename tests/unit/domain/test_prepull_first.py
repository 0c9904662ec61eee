"""Pre-pull before delete (design §13.5): which pulls are asked for, which pods wait for theirs,
and which go without their images, through one reconcile."""

from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta

import pytest

from edgerollout.domain.model import (
    Condition,
    ConditionStatus,
    InFlightDeletion,
    NodeName,
    NodeReadiness,
    NodeView,
    PodView,
)
from edgerollout.domain.planning.decision import Plan
from edgerollout.domain.planning.prepull import JobState, JobView, PullTemplate, job_name
from edgerollout.domain.planning.prepull_first import NodePull, PullState, judge_pull
from edgerollout.domain.planning.reconcile import plan
from edgerollout.domain.planning.rollout_book import RolloutBook
from edgerollout.domain.planning.verdicts import DeletionReason
from edgerollout.domain.reporting.node_plans import node_plans
from edgerollout.domain.reporting.rollout_status import rollout_status
from edgerollout.domain.spec.prepull import Prepull, read_prepull
from edgerollout.domain.timestamps import format_rfc3339, parse_rfc3339
from edgerollout.domain.vocabulary import (
    ADVANCED_ROLLING_UPDATE,
    MAINTENANCE_WINDOW_ANNOTATION,
    MAX_UNAVAILABLE_ANNOTATION,
    OTA,
    PARTITION_ANNOTATION,
    PAUSED_ANNOTATION,
    POD_IMAGE_READY,
    POD_NEED_UPGRADE,
    PREPULL_ANNOTATION,
    UPDATE_STRATEGY_ANNOTATION,
)

from .builders import (
    NEW,
    NOW,
    NOW_RFC3339,
    OLD,
    REVISIONS,
    condition,
    daemonset,
    deleted,
    node,
    pod,
    snapshot,
    uid,
    warning,
)

FIRST = {
    UPDATE_STRATEGY_ANNOTATION: ADVANCED_ROLLING_UPDATE,
    MAX_UNAVAILABLE_ANNOTATION: "1",
    PREPULL_ANNOTATION: "true",
}
NODES = [node(f"edge-{i}") for i in range(1, 6)]
TEMPLATE = PullTemplate(images=("nginx:1.29",))
# The pull Job's deadline (600 s) and the margin (60 s): PrepullSettings' defaults.
FALLBACK = timedelta(seconds=660)
WAITING = "waiting for its image pre-pull"


def image(
    status: str, reason: str, *, revision: str = NEW, ago: timedelta | None = timedelta(seconds=30)
) -> dict[str, Condition]:
    """A `PodImageReady` condition naming `revision`, whose status changed `ago`."""
    return {
        POD_IMAGE_READY: Condition(
            type=POD_IMAGE_READY,
            status=ConditionStatus(status),
            reason=reason,
            message=f"controllerrevision: {revision}",
            last_transition_time=None if ago is None else format_rfc3339(NOW - ago),
        )
    }


PULLING = image("False", "WaitPullImage")
READY = image("True", "PullImageSuccess")
FAILED = image("False", "PullImageFail")


def old(
    index: int,
    conditions: Mapping[str, Condition] | None = None,
    *,
    ready: bool = True,
    deleting: bool = False,
) -> PodView:
    """The outdated pod `web-<index>` on `edge-<index>`."""
    return pod(
        f"web-{index}",
        f"edge-{index}",
        revision=OLD,
        conditions=conditions,
        ready=ready,
        deleting=deleting,
    )


def outdated(**conditions: Mapping[str, Condition]) -> list[PodView]:
    """web-1..5, outdated, with the conditions given by pod name."""
    return [old(i, conditions.get(f"web_{i}")) for i in range(1, 6)]


def decide(
    pods: Iterable[PodView],
    annotations: Mapping[str, str] = FIRST,
    *,
    nodes: Iterable[NodeView] = NODES,
    in_flight: Iterable[InFlightDeletion] = (),
    jobs: Mapping[str, JobView] | None = None,
    now: datetime = NOW,
) -> Plan:
    taken = snapshot(
        daemonset(annotations),
        revisions=REVISIONS,
        pods=pods,
        nodes=nodes,
        in_flight=in_flight,
        pull_jobs=jobs,
        pull_template=TEMPLATE,
        now=now,
    )
    return plan(taken, RolloutBook())


def requested(decided: Plan) -> list[str]:
    writes = decided.condition_writes
    assert all(write.condition.type == POD_IMAGE_READY for write in writes)
    return [write.name for write in writes]


def holds(decided: Plan) -> dict[str, str]:
    return {name: str(hold) for name, hold in sorted(decided.holds.held.items())}


# --- the annotation ---


@pytest.mark.parametrize(
    ("raw", "wanted"),
    [(None, False), ("true", True), (" TRUE ", True), ("True", True), ("false", False)],
)
def test_the_annotation_reads_true_or_false(raw: str | None, wanted: bool) -> None:
    assert read_prepull(raw) == (Prepull() if wanted else None)


@pytest.mark.parametrize("raw", ["yes", "1", "", "on", "true,"])
def test_any_other_value_is_a_warning_naming_what_is_accepted(raw: str) -> None:
    assert read_prepull(raw) == warning(
        "InvalidPrepull",
        (
            f'edgerollout.io/prepull is "{raw}", which is neither "true" nor "false"; '
            "no node is upgraded until it is fixed"
        ),
        raw,
    )


# --- one pod's pull ---

PULLS: list[object] = [
    pytest.param({}, PullState.NOT_REQUESTED, "", id="no-condition"),
    pytest.param(image("True", "PullImageSuccess", revision=OLD), PullState.NOT_REQUESTED, "",
                 id="success-of-another-revision"),
    pytest.param(image("False", "WaitPullImage", revision=OLD, ago=timedelta(hours=2)),
                 PullState.NOT_REQUESTED, "", id="request-of-another-revision"),
    pytest.param(image("Unknown", "WaitPullImage"), PullState.NOT_REQUESTED, "", id="unknown"),
    pytest.param(image("False", "Other"), PullState.NOT_REQUESTED, "", id="another-reason"),
    pytest.param(READY, PullState.READY, "", id="success"),
    pytest.param(image("True", ""), PullState.READY, "", id="true-without-reason"),
    pytest.param(PULLING, PullState.PULLING, "", id="requested"),
    pytest.param(image("False", "WaitPullImage", ago=FALLBACK - timedelta(seconds=1)),
                 PullState.PULLING, "", id="requested-just-within-the-fallback"),
    pytest.param(FAILED, PullState.FALLBACK, "its pre-pull failed (PullImageFail)", id="failed"),
    pytest.param(image("False", "WaitPullImage", ago=FALLBACK), PullState.FALLBACK,
                 "its pre-pull has no result 660 s after it was requested (the fallback is 660 s)",
                 id="overdue"),
    pytest.param(image("False", "WaitPullImage", ago=None), PullState.FALLBACK,
                 "its pre-pull request has no time", id="request-without-a-time"),
]  # fmt: skip


@pytest.mark.parametrize(("conditions", "state", "why"), PULLS)
def test_a_pull_stands_by_the_pods_image_ready_condition_for_the_newest_revision(
    conditions: Mapping[str, Condition], state: PullState, why: str
) -> None:
    judged = judge_pull(old(1, conditions), revision=NEW, now=NOW, fallback=FALLBACK)
    assert (judged.state, judged.why) == (state, why)
    assert judged.holds is (state in (PullState.NOT_REQUESTED, PullState.PULLING))
    if state is PullState.PULLING:
        asked = conditions[POD_IMAGE_READY].last_transition_time
        assert asked is not None
        assert judged.requested == parse_rfc3339(asked)


def test_without_a_revision_hash_nothing_can_be_asked_for_and_the_pod_waits() -> None:
    assert judge_pull(old(1, READY), revision=None, now=NOW, fallback=FALLBACK) == NodePull(
        pod=old(1, READY), state=PullState.NOT_REQUESTED
    )


# --- a reconcile ---


def test_nothing_is_deleted_before_its_image_and_the_first_pulls_are_asked_for() -> None:
    decided = decide(outdated())
    assert deleted(decided) == []
    # max-unavailable 1: a window of 2, in the rollout's order.
    assert requested(decided) == ["web-1", "web-2"]
    assert decided.condition_writes[0].uid == uid("web-1")
    assert decided.condition_writes[0].condition == condition(
        POD_IMAGE_READY, ConditionStatus.FALSE, "WaitPullImage", since=NOW_RFC3339
    )
    assert holds(decided) == {f"edge-{i}": WAITING for i in range(1, 6)}
    assert decided.prepulls == ()
    assert decided.notices == ()
    assert decided.rollout is not None
    assert decided.rollout.waiting_for_budget == ()


def test_a_request_in_the_cache_gets_its_pull_job_and_the_daemonset_a_recheck() -> None:
    decided = decide(outdated(web_1=PULLING, web_2=PULLING))
    assert deleted(decided) == []
    assert requested(decided) == []  # the window is full
    jobs = [step.create_job for step in decided.prepulls]
    assert [(job.pod_name, job.node_name, job.revision) for job in jobs if job] == [
        ("web-1", "edge-1", NEW),
        ("web-2", "edge-2", NEW),
    ]
    assert decided.recheck is not None
    assert decided.recheck.prepull_seconds == 630.0
    assert decided.recheck.after(deletions_in_flight=0, unechoed_seconds=None) == 630.0


def test_a_finished_pull_job_is_reported_on_its_pod_and_deleted() -> None:
    requester = old(1, PULLING)
    name = job_name(requester, NEW)
    job = JobView(namespace="default", name=name, state=JobState.SUCCEEDED, owner_uid=uid("web-1"))
    decided = decide([requester, *outdated()[1:]], jobs={name: job})
    (step,) = [step for step in decided.prepulls if step.pod.name == "web-1"]
    assert step.report is not None
    assert (step.report.condition.status, step.report.condition.reason) == (
        ConditionStatus.TRUE,
        "PullImageSuccess",
    )
    assert step.delete_job == name
    assert deleted(decided) == []  # the report's echo lets it go, in the next reconcile


def test_the_budget_goes_to_the_pods_whose_images_are_there() -> None:
    decided = decide(outdated(web_1=PULLING, web_2=READY))
    assert deleted(decided) == ["web-2"]
    assert decided.deletions[0].reason is DeletionReason.OUTDATED_WITHIN_BUDGET
    assert decided.notices == ()
    # web-2 still counts while its deletion is on its way: the window stays full.
    assert requested(decided) == []
    assert holds(decided) == {f"edge-{i}": WAITING for i in (1, 3, 4, 5)}


def test_once_a_pod_is_gone_the_next_pull_is_asked_for_and_a_ready_one_waits_for_budget() -> None:
    pods = [old(1, deleting=True), old(2, READY), *outdated()[2:]]
    decided = decide(pods)
    assert deleted(decided) == []  # edge-1 is between its pods: the budget of 1 is spent
    assert decided.rollout is not None
    assert decided.rollout.waiting_for_budget == (NodeName("edge-2"),)
    assert requested(decided) == ["web-3"]


def test_a_failed_pull_falls_back_to_deleting_and_says_so_once_per_pod() -> None:
    decided = decide(outdated(web_1=FAILED, web_2=PULLING))
    assert deleted(decided) == ["web-1"]
    assert decided.notices == (
        warning(
            "PrepullFailed",
            (
                "Deleting pod web-1 on node edge-1 before its new images are there: its "
                "pre-pull failed (PullImageFail); its replacement pulls them after the deletion, "
                "as without pre-pull"
            ),
            uid("web-1"),
        ),
    )


def test_a_failed_pull_waiting_for_budget_says_nothing_yet() -> None:
    decided = decide(outdated(web_1=READY, web_2=FAILED))
    assert deleted(decided) == ["web-1"]
    assert decided.notices == ()


def test_a_request_without_a_result_falls_back_once_past_the_jobs_deadline_and_a_margin() -> None:
    almost = image("False", "WaitPullImage", ago=FALLBACK - timedelta(seconds=1))
    waiting = decide(outdated(web_1=almost, web_2=PULLING))
    assert deleted(waiting) == []
    assert waiting.recheck is not None
    assert waiting.recheck.prepull_seconds == 1.0

    overdue = image("False", "WaitPullImage", ago=FALLBACK)
    decided = decide(outdated(web_1=overdue, web_2=PULLING))
    assert deleted(decided) == ["web-1"]
    assert [notice.reason for notice in decided.notices] == ["PrepullFailed"]
    assert "no result 660 s after it was requested" in decided.notices[0].message
    # An overdue request gets no Job (a Job that cannot be created must not hold the rollout).
    assert [step.pod.name for step in decided.prepulls] == ["web-2"]


def test_an_unavailable_outdated_pod_waits_for_its_image_and_is_asked_for_at_once() -> None:
    pods = [old(i, ready=False) for i in (1, 2, 3)] + [old(4), old(5)]
    decided = decide(pods)
    assert deleted(decided) == []
    # Replaced without budget, so not held to the window; the window of 2 goes to web-4, web-5.
    assert requested(decided) == ["web-1", "web-2", "web-3", "web-4", "web-5"]

    pulled = [old(1, READY, ready=False), *(old(i, PULLING, ready=False) for i in (2, 3))]
    decided = decide([*pulled, old(4, PULLING), old(5, PULLING)])
    assert deleted(decided) == ["web-1"]
    assert decided.deletions[0].reason is DeletionReason.OUTDATED_UNAVAILABLE


def test_a_request_for_an_older_revision_is_asked_again_from_now() -> None:
    older = image("False", "PullImageFail", revision="hash-older", ago=timedelta(hours=3))
    decided = decide(outdated(web_1=older))
    assert requested(decided) == ["web-1", "web-2"]
    asked = decided.condition_writes[0].condition
    assert (asked.status, asked.reason, asked.message) == (
        ConditionStatus.FALSE,
        "WaitPullImage",
        f"controllerrevision: {NEW}",
    )
    # The status stays False, yet the request is new: the fallback counts from now.
    assert asked.last_transition_time == NOW_RFC3339


def test_a_wider_budget_widens_the_window() -> None:
    decided = decide(outdated(web_1=PULLING), {**FIRST, MAX_UNAVAILABLE_ANNOTATION: "2"})
    assert requested(decided) == ["web-2", "web-3", "web-4"]


def test_a_node_that_is_not_ready_is_neither_asked_for_nor_held() -> None:
    nodes = [node("edge-1", NodeReadiness.NOT_READY), *NODES[1:]]
    decided = decide(outdated(), nodes=nodes)
    assert requested(decided) == ["web-2", "web-3"]
    assert "edge-1" not in holds(decided)


def test_a_deletion_in_flight_leaves_its_node_out() -> None:
    gone = InFlightDeletion(uid=uid("web-1"), node_name=NodeName("edge-1"))
    decided = decide(outdated(web_1=READY), in_flight=[gone])
    assert deleted(decided) == []
    assert requested(decided) == ["web-2", "web-3"]


def test_nodes_held_for_another_reason_keep_it_and_are_not_asked_for() -> None:
    partition = decide(outdated(web_4=READY), {**FIRST, PARTITION_ANNOTATION: "2"})
    assert deleted(partition) == []
    assert requested(partition) == ["web-1", "web-2"]
    assert holds(partition) == {
        "edge-1": WAITING,
        "edge-2": WAITING,
        "edge-3": WAITING,
        "edge-4": "partition",
        "edge-5": "partition",
    }

    paused = decide(outdated(), {**FIRST, PAUSED_ANNOTATION: "true"})
    assert requested(paused) == []
    assert set(holds(paused).values()) == {"paused"}


def test_images_are_pulled_while_a_maintenance_window_is_closed() -> None:
    opens = NOW + timedelta(hours=2)
    window = f"{opens:%a} {opens:%H:%M}-{opens + timedelta(hours=1):%H:%M}"
    decided = decide(outdated(web_1=READY), {**FIRST, MAINTENANCE_WINDOW_ANNOTATION: window})
    assert deleted(decided) == []
    assert requested(decided) == ["web-2"]  # web-1's image is there: one more fills the window
    assert set(holds(decided).values()) == {
        f"maintenance window closed, opens {format_rfc3339(opens)}"
    }


def test_an_invalid_value_warns_and_holds_every_node() -> None:
    decided = decide(outdated(web_1=READY), {**FIRST, PREPULL_ANNOTATION: "yes"})
    assert deleted(decided) == []
    assert requested(decided) == []
    assert [notice.reason for notice in decided.notices] == ["InvalidPrepull"]
    assert set(holds(decided).values()) == {"invalid setting"}


def test_without_prepull_the_rollout_deletes_as_before_and_writes_nothing() -> None:
    for value in ("false", None):
        annotations = {k: v for k, v in FIRST.items() if k != PREPULL_ANNOTATION}
        if value is not None:
            annotations[PREPULL_ANNOTATION] = value
        decided = decide(outdated(web_2=PULLING), annotations)
        assert deleted(decided) == ["web-1"]
        assert decided.condition_writes == ()
        assert decided.prepulls == ()
        assert decided.holds.held == {}


def test_ota_ignores_the_annotation_its_nodes_ask_for_their_images() -> None:
    decided = decide(outdated(), {UPDATE_STRATEGY_ANNOTATION: OTA, PREPULL_ANNOTATION: "true"})
    assert {write.condition.type for write in decided.condition_writes} == {POD_NEED_UPGRADE}
    assert deleted(decided) == []


def test_plan_and_status_show_the_nodes_waiting_for_their_pull() -> None:
    pods = [pod("web-1", "edge-1"), old(2, READY), old(3, PULLING), old(4), old(5)]
    decided = decide(pods)
    seen = snapshot(daemonset(FIRST), pods=pods, nodes=NODES)
    rows = node_plans(decided, pods_by_node=seen.pods_by_node, readiness=seen.readiness)
    assert [(row.node, str(row.action), row.why) for row in rows] == [
        ("edge-1", "updated", ""),
        ("edge-2", "delete now", "outdated, deleted within max-unavailable"),
        ("edge-3", "held", WAITING),
        ("edge-4", "held", WAITING),
        ("edge-5", "held", WAITING),
    ]
    status = rollout_status(
        daemonset=daemonset(FIRST), revisions=REVISIONS, pods=pods, nodes=NODES, now=NOW
    )
    assert [row.state_text for row in status.rows] == [
        "updated",
        "old",
        f"held: {WAITING}",
        f"held: {WAITING}",
        f"held: {WAITING}",
    ]


def test_a_book_kept_across_plans_gates_as_a_new_one() -> None:
    book = RolloutBook()
    first = plan(
        snapshot(daemonset(FIRST), revisions=REVISIONS, pods=outdated(), nodes=NODES), book
    )
    assert deleted(first) == []
    # Only edge-2's pod changed (its image is there): the book re-judges it, the gate everyone.
    pods = outdated(web_2=READY)
    later = plan(
        snapshot(
            daemonset(FIRST),
            revisions=REVISIONS,
            pods=pods,
            nodes=NODES,
            changed_nodes=["edge-2"],
        ),
        book,
    )
    assert later == decide(pods)
    assert deleted(later) == ["web-2"]
