"""Properties of pre-pull before delete over random clusters (design §13.5).

No pod is deleted unless its `PodImageReady` says its images are there for the newest revision or
the fallback applies (the pull failed, or its request is older than the Job's deadline and the
margin); the budget is never exceeded; pulls are asked for at most a window ahead; and a rollout
whose pulls finish, or fail, still converges. With a download window, nothing is asked for while
it is closed, and at most max-pulling nodes pull at once while it is open.
"""

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from edgerollout.domain.model import Condition, ConditionStatus, NodeName, PodUID, PodView
from edgerollout.domain.planning.decision import Plan
from edgerollout.domain.planning.holds import HoldReason
from edgerollout.domain.planning.reconcile import plan
from edgerollout.domain.planning.rollout_book import RolloutBook
from edgerollout.domain.timestamps import format_rfc3339, parse_rfc3339
from edgerollout.domain.vocabulary import (
    ADVANCED_ROLLING_UPDATE,
    MAX_PULLING_ANNOTATION,
    MAX_UNAVAILABLE_ANNOTATION,
    PARTITION_ANNOTATION,
    PAUSED_ANNOTATION,
    POD_IMAGE_READY,
    PREPULL_ANNOTATION,
    PREPULL_WINDOW_ANNOTATION,
    UPDATE_STRATEGY_ANNOTATION,
)

from .builders import NEW, NOW, OLD, REVISIONS, daemonset, old_pod, snapshot
from .test_planner_properties import (
    READY,
    Cluster,
    _next_round,
    _up_to_date,
    changed_between,
    clusters,
    observed,
    outdated_available,
    unavailable_before_and_after,
)

FALLBACK = timedelta(seconds=660)  # PrepullSettings' deadline (600 s) and margin (60 s)
WINDOW_PER_BUDGET = 2


def image(status: str, reason: str, revision: str, asked: datetime | None) -> Condition:
    return Condition(
        type=POD_IMAGE_READY,
        status=ConditionStatus(status),
        reason=reason,
        message=f"controllerrevision: {revision}",
        last_transition_time=None if asked is None else format_rfc3339(asked),
    )


@st.composite
def image_conditions(draw: st.DrawFn) -> dict[str, Condition]:
    kind = draw(st.sampled_from(["none", "none", "ready", "failed", "asked", "asked", "other"]))
    ago = timedelta(seconds=draw(st.sampled_from([0, 30, 659, 660, 661, 5000])))
    asked = None if draw(st.integers(0, 9)) == 0 else NOW - ago
    conditions = {
        "none": None,
        "ready": image("True", "PullImageSuccess", NEW, NOW - ago),
        "failed": image("False", "PullImageFail", NEW, NOW - ago),
        "asked": image("False", "WaitPullImage", NEW, asked),
        "other": image("True", "PullImageSuccess", OLD, NOW - ago),
    }[kind]
    return {} if conditions is None else {POD_IMAGE_READY: conditions}


@dataclass(frozen=True)
class Subject:
    cluster: Cluster
    annotations: Mapping[str, str]


@st.composite
def subjects(draw: st.DrawFn) -> Subject:
    cluster = draw(clusters())
    if draw(st.booleans()):
        # A rollout's start: one available outdated pod on every node, most of them to pull.
        cluster = replace(
            cluster,
            in_flight=[],
            pods=[old_pod(f"{name}-pod", name) for name in cluster.readiness],
        )
    pods = [replace(pod, conditions=draw(image_conditions())) for pod in cluster.pods]
    annotations = {
        UPDATE_STRATEGY_ANNOTATION: ADVANCED_ROLLING_UPDATE,
        MAX_UNAVAILABLE_ANNOTATION: draw(st.sampled_from(["1", "2", "3", "30%", "100%"])),
        PREPULL_ANNOTATION: "true",
    }
    if draw(st.integers(0, 3)) == 0:
        annotations[PARTITION_ANNOTATION] = draw(st.sampled_from(["1", "3"]))
    if draw(st.integers(0, 9)) == 0:
        annotations[PAUSED_ANNOTATION] = "true"
    return Subject(cluster=replace(cluster, pods=pods), annotations=annotations)


def decide(subject: Subject) -> Plan:
    cluster = subject.cluster
    taken = snapshot(
        daemonset(subject.annotations, min_ready_seconds=cluster.min_ready_seconds),
        revisions=REVISIONS,
        pods=cluster.pods,
        nodes=cluster.nodes,
        in_flight=cluster.in_flight,
    )
    return plan(taken, RolloutBook())


def may_go_without_waiting(pod: PodView, now: datetime = NOW) -> bool:
    """The rule, restated: the images are there, or the pull failed, or it is overdue."""
    condition = pod.conditions.get(POD_IMAGE_READY)
    if condition is None or condition.message != f"controllerrevision: {NEW}":
        return False
    if condition.status is ConditionStatus.TRUE:
        return True
    if condition.status is not ConditionStatus.FALSE:
        return False
    if condition.reason == "PullImageFail":
        return True
    if condition.reason != "WaitPullImage":
        return False
    asked = condition.last_transition_time
    return asked is None or now - parse_rfc3339(asked) >= FALLBACK


def decide_within_budget(subject: Subject) -> tuple[Plan, int]:
    """The plan for `subject` and the budget it kept to: a managed rollout always has one."""
    decided = decide(subject)
    assert decided.budget is not None
    return decided, decided.budget.value


def with_requests(pods: Sequence[PodView], decided: Plan) -> list[PodView]:
    """`pods` once the `PodImageReady` requests `decided` writes have landed."""
    written = {write.uid: write.condition for write in decided.condition_writes}
    return [
        replace(pod, conditions={**pod.conditions, POD_IMAGE_READY: written[pod.uid]})
        if pod.uid in written
        else pod
        for pod in pods
    ]


def asked_or_answered(pod: PodView) -> bool:
    condition = pod.conditions.get(POD_IMAGE_READY)
    return condition is not None and condition.message == f"controllerrevision: {NEW}"


@settings(max_examples=500, deadline=None)
@given(subjects())
def test_no_pod_is_deleted_before_its_images_unless_the_fallback_applies(subject: Subject) -> None:
    decided = decide(subject)
    by_uid = {pod.uid: pod for pod in subject.cluster.pods}
    for deletion in decided.deletions:
        assert may_go_without_waiting(by_uid[deletion.uid]), deletion
    fallen_back = {
        PodUID(notice.subject) for notice in decided.notices if notice.reason == "PrepullFailed"
    }
    assert fallen_back <= {deletion.uid for deletion in decided.deletions}
    for uid in fallen_back:
        assert by_uid[uid].conditions[POD_IMAGE_READY].status is not ConditionStatus.TRUE


@settings(max_examples=500, deadline=None)
@given(subjects())
def test_the_budget_is_never_exceeded(subject: Subject) -> None:
    cluster = subject.cluster
    decided, budget = decide_within_budget(subject)
    before, after = unavailable_before_and_after(cluster, cluster.pods, decided.deletions)
    assert after <= max(budget, before)


@settings(max_examples=500, deadline=None)
@given(subjects())
def test_pulls_are_asked_for_at_most_a_window_ahead(subject: Subject) -> None:
    cluster = subject.cluster
    decided, budget = decide_within_budget(subject)
    window = WINDOW_PER_BUDGET * budget
    held = decided.holds.held
    by_uid = {pod.uid: pod for pod in cluster.pods}
    for write in decided.condition_writes:
        pod = by_uid[write.uid]
        assert pod.node_name is not None
        assert cluster.readiness[pod.node_name] is READY
        assert pod.revision_hash == OLD
        assert not pod.deleting
        assert not asked_or_answered(pod)
        hold = held.get(pod.node_name)
        assert hold is None or hold.reason in (HoldReason.PULLING, HoldReason.WINDOW)

    def ahead(pods: Sequence[PodView]) -> int:
        free = {
            name
            for name, pod in outdated_available(cluster, pods).items()
            if asked_or_answered(pod)
            and (name not in held or held[name].reason is HoldReason.PULLING)
        }
        return len(free)

    asked = with_requests(cluster.pods, decided)
    assert ahead(asked) <= max(window, ahead(cluster.pods))


@settings(max_examples=150, deadline=None)
@given(
    clusters(),
    st.sampled_from(["1", "2", "30%"]),
    st.lists(st.booleans(), min_size=1),
    st.booleans(),
)
def test_a_rollout_with_pre_pull_converges_whether_the_pulls_succeed_or_fail(
    cluster: Cluster, max_unavailable: str, pull_outcomes: list[bool], one_at_a_time: bool
) -> None:
    annotations = {
        UPDATE_STRATEGY_ANNOTATION: ADVANCED_ROLLING_UPDATE,
        MAX_UNAVAILABLE_ANNOTATION: max_unavailable,
        PREPULL_ANNOTATION: "true",
    }
    if one_at_a_time:  # a download window open all day, one node pulling at once
        annotations[PREPULL_WINDOW_ANNOTATION] = "Mon-Sun 00:00-24:00"
        annotations[MAX_PULLING_ANNOTATION] = "1"
    subject = daemonset(annotations)
    world = replace(cluster, in_flight=[], min_ready_seconds=0)
    pods, now = list(cluster.pods), NOW
    ready_nodes = [name for name, readiness in cluster.readiness.items() if readiness is READY]
    book = RolloutBook()  # one book across the reconciles, told what changed, as in the controller
    changed: set[str] = set()
    outcomes = itertools.cycle(pull_outcomes)

    for _ in range(4 * len(ready_nodes) + 5):
        taken = observed(subject, world, pods, now, changed)
        decided = plan(taken, book)
        by_uid = {pod.uid: pod for pod in pods}
        for deletion in decided.deletions:
            assert may_go_without_waiting(by_uid[deletion.uid], now)
        deleted = {deletion.uid for deletion in decided.deletions}
        if not deleted and all(_up_to_date(world, pods, name, now) for name in ready_nodes):
            return
        # The requests land, and every pull asked for ends, well or not, before the next round.
        pods = with_requests(pods, decided)
        pods = [_pull_ends(pod, next(outcomes), now) for pod in pods]
        following = _next_round(world, pods, deleted, now)
        changed = changed_between(taken.pods, following)
        pods = following
        now += timedelta(seconds=60)
    raise AssertionError(f"no convergence: {pods}")


def _pull_ends(pod: PodView, succeeded: bool, now: datetime) -> PodView:
    condition = pod.conditions.get(POD_IMAGE_READY)
    if condition is None or condition.reason != "WaitPullImage":
        return pod
    status, reason = ("True", "PullImageSuccess") if succeeded else ("False", "PullImageFail")
    ended = image(status, reason, NEW, now)
    return replace(pod, conditions={**pod.conditions, POD_IMAGE_READY: ended})


# --- a download window (`edgerollout.io/prepull-window`, `edgerollout.io/max-pulling`) ---

OPEN_WINDOW = "Mon-Sun 11:00-13:00"  # NOW is 12:00
CLOSED_WINDOW = "Mon-Sun 14:00-15:00"


@st.composite
def windowed_subjects(draw: st.DrawFn) -> Subject:
    subject = draw(subjects())
    annotations = {
        **subject.annotations,
        PREPULL_WINDOW_ANNOTATION: draw(st.sampled_from([OPEN_WINDOW, CLOSED_WINDOW])),
    }
    limit = draw(st.sampled_from([None, "1", "2", "30%", "100%"]))
    if limit is not None:
        annotations[MAX_PULLING_ANNOTATION] = limit
    return replace(subject, annotations=annotations)


def pulling(cluster: Cluster, pods: Sequence[PodView]) -> int:
    """The nodes pulling, restated: a Ready node's one live pod, outdated, whose request for the
    newest revision has no result and is within the fallback."""
    gone = {deletion.uid for deletion in cluster.in_flight}
    live: dict[str, list[PodView]] = {}
    for pod in pods:
        if pod.node_name is not None and not pod.deleting and pod.uid not in gone:
            live.setdefault(pod.node_name, []).append(pod)
    count = 0
    for name, on_node in live.items():
        if cluster.readiness.get(NodeName(name)) is not READY or len(on_node) != 1:
            continue
        (pod,) = on_node
        condition = pod.conditions.get(POD_IMAGE_READY)
        if (
            pod.revision_hash == OLD
            and condition is not None
            and condition.message == f"controllerrevision: {NEW}"
            and condition.status is ConditionStatus.FALSE
            and condition.reason == "WaitPullImage"
            and condition.last_transition_time is not None
            and NOW - parse_rfc3339(condition.last_transition_time) < FALLBACK
        ):
            count += 1
    return count


@settings(max_examples=500, deadline=None)
@given(windowed_subjects())
def test_a_download_window_asks_for_nothing_while_closed_and_at_most_max_pulling_at_once(
    subject: Subject,
) -> None:
    cluster = subject.cluster
    decided, budget = decide_within_budget(subject)
    if subject.annotations[PREPULL_WINDOW_ANNOTATION] == CLOSED_WINDOW:
        assert decided.condition_writes == ()
        return
    asked = with_requests(cluster.pods, decided)
    raw = subject.annotations.get(MAX_PULLING_ANNOTATION, "10%")
    nodes = len(cluster.nodes) if decided.budget is None else decided.budget.base
    limit = max(1, -(-nodes * int(raw[:-1]) // 100)) if raw.endswith("%") else int(raw)
    assert pulling(cluster, asked) <= max(limit, pulling(cluster, cluster.pods))
    before, after = unavailable_before_and_after(cluster, cluster.pods, decided.deletions)
    assert after <= max(budget, before)
    by_uid = {pod.uid: pod for pod in cluster.pods}
    for deletion in decided.deletions:
        assert may_go_without_waiting(by_uid[deletion.uid]), deletion
