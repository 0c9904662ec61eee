"""One reconcile of one DaemonSet, end to end through the pure core (design §2-§5)."""

from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta

import pytest

from edgerollout.domain.events import EventType
from edgerollout.domain.model import (
    ConditionStatus,
    DaemonSetView,
    InFlightDeletion,
    NodeReadiness,
    NodeView,
    PodView,
    RevisionView,
)
from edgerollout.domain.planning.decision import Plan, Recheck, Snapshot
from edgerollout.domain.planning.prepull import PullTemplate
from edgerollout.domain.planning.reconcile import plan
from edgerollout.domain.planning.revisions import TargetRevision
from edgerollout.domain.planning.rollout_book import RolloutBook
from edgerollout.domain.spec.max_unavailable import MaxUnavailable
from edgerollout.domain.spec.strategy import UpdateStrategy
from edgerollout.settings import ControllerSettings, PrepullSettings, ReconcileSettings

from .builders import (
    NEW,
    NOW,
    OLD,
    condition,
    daemonset,
    deleted,
    in_flight,
    node,
    old_pod,
    pod,
    revision,
    snapshot,
    warning,
)
from .test_strategy import auto_deprecated

REVISIONS = [revision("nginx-daemonset-old", 1, OLD), revision("nginx-daemonset-new", 2, NEW)]
NODES = [node("edge-1"), node("edge-2"), node("edge-3", NodeReadiness.NOT_READY)]
OUTDATED_PODS = [
    old_pod("web-1", "edge-1"),
    old_pod("web-2", "edge-2", ready=False),
    old_pod("web-3", "edge-3", ready=False),
]


def plan_reconcile(
    *,
    daemonset: DaemonSetView,
    revisions: Iterable[RevisionView],
    pods: Iterable[PodView],
    nodes: Iterable[NodeView] = (),
    now: datetime,
    in_flight: Iterable[InFlightDeletion] = (),
) -> Plan:
    """The first plan of a DaemonSet (a new book) for what the caches show."""
    taken = snapshot(
        daemonset, revisions=revisions, pods=pods, nodes=nodes, now=now, in_flight=in_flight
    )
    return plan(taken, RolloutBook())


def reconcile(
    annotations: Mapping[str, str],
    *,
    pods: Iterable[PodView] = OUTDATED_PODS,
    nodes: Iterable[NodeView] = NODES,
    update_strategy_type: str = "OnDelete",
) -> Plan:
    return plan_reconcile(
        daemonset=daemonset(annotations, update_strategy_type=update_strategy_type),
        revisions=REVISIONS,
        pods=pods,
        nodes=nodes,
        now=NOW,
    )


def test_daemonset_without_annotation_is_left_alone() -> None:
    assert reconcile({}) == Plan(strategy=None)


@pytest.mark.parametrize(
    ("annotations", "update_strategy_type", "reason"),
    [
        pytest.param(
            {"apps.openyurt.io/update-strategy": "rolling"},
            "OnDelete",
            "UnknownUpdateStrategy",
            id="unknown-strategy",
        ),
        pytest.param(
            {"apps.openyurt.io/update-strategy": "AdvancedRollingUpdate"},
            "RollingUpdate",
            "UpdateStrategyNotOnDelete",
            id="not-on-delete",
        ),
    ],
)
def test_misconfigured_daemonset_gets_one_warning_and_no_action(
    annotations: dict[str, str], update_strategy_type: str, reason: str
) -> None:
    plan = reconcile(annotations, update_strategy_type=update_strategy_type)
    assert plan.strategy is None
    assert [(n.type, n.reason) for n in plan.notices] == [(EventType.WARNING, reason)]
    assert plan.deletions == ()
    assert plan.condition_writes == ()


@pytest.mark.parametrize(
    ("annotations", "update_strategy_type", "ends_rollout", "keep_notices"),
    [
        pytest.param({}, "OnDelete", True, False, id="no-annotation"),
        pytest.param(
            {"apps.openyurt.io/update-strategy": "rolling"}, "OnDelete", True, True, id="unknown"
        ),
        pytest.param(
            {"apps.openyurt.io/update-strategy": "OTA"},
            "RollingUpdate",
            True,
            True,
            id="not-on-delete",
        ),
        pytest.param(
            {"apps.openyurt.io/update-strategy": "OTA"}, "OnDelete", False, False, id="ours"
        ),
    ],
)
def test_a_rollout_ends_when_not_ours_and_its_events_are_kept_while_it_is_annotated(
    annotations: dict[str, str], update_strategy_type: str, ends_rollout: bool, keep_notices: bool
) -> None:
    decided = reconcile(annotations, update_strategy_type=update_strategy_type)

    assert (decided.ends_rollout, decided.keep_notices) == (ends_rollout, keep_notices)


def test_advanced_rolling_update_replaces_unavailable_and_skips_notready_nodes() -> None:
    plan = reconcile({"apps.openyurt.io/update-strategy": "AdvancedRollingUpdate"})
    assert plan.strategy is UpdateStrategy.ADVANCED_ROLLING_UPDATE
    assert plan.notices == ()
    # Default 10% of the 3 nodes holding a pod rounds up to 1; edge-2's unavailable old pod is
    # replaced at once and uses it, so edge-1 waits; edge-3 is NotReady and skipped.
    assert plan.budget == MaxUnavailable(value=1, base=3, written="10%")
    assert deleted(plan) == ["web-2"]
    assert plan.rollout is not None
    assert plan.rollout.skipped_nodes == ("edge-3",)
    assert plan.target == TargetRevision(hash=NEW, template_generation=None)


def test_max_unavailable_annotation_widens_the_budget() -> None:
    plan = reconcile(
        {
            "apps.openyurt.io/update-strategy": "advancedrollingupdate",
            "apps.openyurt.io/max-unavailable": "2",
        }
    )
    assert deleted(plan) == ["web-1", "web-2"]


def test_legacy_auto_rolls_and_says_it_is_deprecated() -> None:
    plan = reconcile({"apps.openyurt.io/update-strategy": "auto"})
    assert plan.strategy is UpdateStrategy.ADVANCED_ROLLING_UPDATE
    assert [n.reason for n in plan.notices] == ["DeprecatedUpdateStrategy"]
    assert deleted(plan) == ["web-2"]


def test_invalid_max_unavailable_deletes_nothing_at_all() -> None:
    plan = reconcile(
        {
            "apps.openyurt.io/update-strategy": "auto",
            "apps.openyurt.io/max-unavailable": "abc",
        }
    )
    assert plan == Plan(
        strategy=UpdateStrategy.ADVANCED_ROLLING_UPDATE,
        notices=(
            auto_deprecated("auto"),
            warning(
                "InvalidMaxUnavailable",
                (
                    'apps.openyurt.io/max-unavailable is "abc", which is neither an integer such '
                    'as "3" nor a percentage such as "30%": no pod is deleted until it is fixed'
                ),
                "abc",
            ),
        ),
        recheck=Recheck(deletions_seconds=5.0),
        paused=False,
        target=TargetRevision(hash=NEW, template_generation=None),
    )
    assert plan.deletions == ()


def test_in_flight_deletions_pass_through_to_the_planner() -> None:
    plan = plan_reconcile(
        daemonset=daemonset({"apps.openyurt.io/update-strategy": "AdvancedRollingUpdate"}),
        revisions=REVISIONS,
        pods=OUTDATED_PODS,
        nodes=NODES,
        now=NOW,
        in_flight=[in_flight("web-2", "edge-2")],
    )
    assert deleted(plan) == []


def test_min_ready_seconds_comes_from_the_daemonset() -> None:
    # The new pod turned Ready an hour ago, the old one three hours ago.
    pods = [pod("new", "edge-1"), old_pod("old", "edge-2", ready_for=timedelta(hours=3))]
    annotations = {"apps.openyurt.io/update-strategy": "AdvancedRollingUpdate"}

    def deleted_with(min_ready_seconds: int) -> list[str]:
        subject = daemonset(annotations, min_ready_seconds=min_ready_seconds)
        return deleted(
            plan_reconcile(daemonset=subject, revisions=REVISIONS, pods=pods, nodes=NODES, now=NOW)
        )

    assert deleted_with(7200) == []
    assert deleted_with(0) == ["old"]


def test_ota_writes_conditions_and_never_deletes() -> None:
    pods = [*OUTDATED_PODS, pod("web-4", "edge-4")]
    plan = reconcile(
        {
            "apps.openyurt.io/update-strategy": "OTA",
            # Meaningless for OTA: neither read nor reported.
            "apps.openyurt.io/max-unavailable": "abc",
        },
        pods=pods,
    )
    assert plan.strategy is UpdateStrategy.OTA
    assert plan.notices == ()
    assert plan.deletions == ()
    assert plan.budget is None
    assert [
        (w.name, str(w.condition.status), w.condition.message) for w in plan.condition_writes
    ] == [
        ("web-1", "True", "controllerrevision: hash-new"),
        ("web-2", "True", "controllerrevision: hash-new"),
        ("web-3", "True", "controllerrevision: hash-new"),
        ("web-4", "False", "controllerrevision: hash-new"),
    ]


def test_ota_uses_the_template_generation_when_pods_lack_the_hash() -> None:
    plan = plan_reconcile(
        daemonset=daemonset(
            {
                "apps.openyurt.io/update-strategy": "ota",
                "deprecated.daemonset.template.generation": "2",
            }
        ),
        revisions=REVISIONS,
        pods=[
            pod("a", "edge-1", revision=None, generation=2),
            pod("b", "edge-2", revision=None, generation=1),
        ],
        nodes=NODES,
        now=NOW,
    )
    assert [(w.name, str(w.condition.status)) for w in plan.condition_writes] == [
        ("a", "False"),
        ("b", "True"),
    ]


def test_a_node_between_two_pods_stays_in_the_budgets_base() -> None:
    # Ten nodes at 50%: two nodes' pods are gone and their replacements not created yet, one
    # deletion is in flight. Counting only the seven nodes holding a pod, the budget would be 4;
    # the native controller wants a pod on all ten, so it is 5 (and three are unavailable).
    ten = [node(f"edge-{index:02d}") for index in range(1, 11)]
    pods = [old_pod(f"web-{index:02d}", f"edge-{index:02d}") for index in range(4, 11)]
    plan = plan_reconcile(
        daemonset=daemonset(
            {
                "apps.openyurt.io/update-strategy": "AdvancedRollingUpdate",
                "apps.openyurt.io/max-unavailable": "50%",
            },
            desired_nodes=10,
        ),
        revisions=REVISIONS,
        pods=pods,
        nodes=ten,
        now=NOW,
        in_flight=[in_flight("web-03", "edge-03")],
    )
    assert plan.budget == MaxUnavailable(value=5, base=10, written="50%")
    assert deleted(plan) == ["web-04", "web-05"]


ROLLING = {"apps.openyurt.io/update-strategy": "AdvancedRollingUpdate"}
OTA = {"apps.openyurt.io/update-strategy": "OTA"}


def seen(
    annotations: Mapping[str, str], pods: Iterable[PodView], *, changed: Iterable[str] = ()
) -> Snapshot:
    """What the caches show of `pods` on NODES, told that the `changed` nodes changed."""
    return snapshot(
        daemonset(annotations), revisions=REVISIONS, pods=pods, nodes=NODES, changed_nodes=changed
    )


def test_deletions_still_in_flight_bring_the_daemonset_back_after_the_recheck() -> None:
    settings = ControllerSettings(reconcile=ReconcileSettings(requeue_while_deleting=5.0))
    decided = plan(seen(ROLLING, OUTDATED_PODS), RolloutBook(), settings)
    assert deleted(decided) == ["web-2"]
    assert decided.recheck == Recheck(deletions_seconds=5.0, min_seconds=1.0)
    assert decided.recheck.after(deletions_in_flight=1, unechoed_seconds=None) == 5.0
    # The deletion was refused (the pod was replaced meanwhile): nothing to wait for.
    assert decided.recheck.after(deletions_in_flight=0, unechoed_seconds=None) is None


def test_a_current_pod_not_yet_available_brings_the_daemonset_back_when_it_turns_available() -> (
    None
):
    # Ready for 10 s of a minReadySeconds of 30: available a moment after 20 s from now, not 30.
    starting = [pod("web-1", "edge-1", ready_for=timedelta(seconds=10)), pod("web-2", "edge-2")]
    decided = plan(
        snapshot(
            daemonset(ROLLING, min_ready_seconds=30),
            revisions=REVISIONS,
            pods=starting,
            nodes=NODES,
        ),
        RolloutBook(),
        ControllerSettings(reconcile=ReconcileSettings(health_recheck=60.0)),
    )
    assert decided.deletions == ()
    assert decided.recheck is not None
    assert decided.recheck.starting_seconds == pytest.approx(20.01)
    assert decided.recheck.after(deletions_in_flight=0, unechoed_seconds=None) == pytest.approx(
        20.01
    )
    assert decided.recheck.after(deletions_in_flight=2, unechoed_seconds=None) == 5.0

    available = plan(
        snapshot(
            daemonset(ROLLING, min_ready_seconds=30),
            revisions=REVISIONS,
            pods=[pod("web-1", "edge-1"), pod("web-2", "edge-2")],
            nodes=NODES,
        ),
        RolloutBook(),
    )
    assert available.recheck is not None
    assert available.recheck.starting_seconds is None


def test_a_condition_write_waiting_for_its_echo_brings_the_daemonset_back_when_it_expires() -> None:
    recheck = Recheck(deletions_seconds=5.0, min_seconds=1.0)
    assert recheck.after(deletions_in_flight=0, unechoed_seconds=9.5) == 9.5
    assert recheck.after(deletions_in_flight=0, unechoed_seconds=0.25) == 1.0
    assert recheck.after(deletions_in_flight=1, unechoed_seconds=9.5) == 5.0


def test_a_daemonset_that_is_not_ours_is_never_rechecked() -> None:
    decided = plan(snapshot(daemonset({}), revisions=REVISIONS, pods=OUTDATED_PODS), RolloutBook())
    assert decided.recheck is None


def test_ota_plans_the_pre_pull_of_a_pod_that_asked_for_the_newest_revision() -> None:
    asking = pod(
        "web-1",
        "edge-1",
        revision=OLD,
        conditions={
            "PodImageReady": condition("PodImageReady", ConditionStatus.FALSE, "WaitPullImage")
        },
    )
    template = PullTemplate(images=("nginx:1.25",))
    settings = ControllerSettings(
        prepull=PrepullSettings(toolbox_image="tools:1", deadline_seconds=60)
    )
    decided = plan(
        snapshot(daemonset(OTA), revisions=REVISIONS, pods=[asking], pull_template=template),
        RolloutBook(),
        settings,
    )
    assert [(step.pod.name, step.revision) for step in decided.prepulls] == [("web-1", NEW)]
    job = decided.prepulls[0].create_job
    assert job is not None
    assert (job.node_name, job.images, job.toolbox_image, job.deadline_seconds) == (
        "edge-1",
        ("nginx:1.25",),
        "tools:1",
        60,
    )

    rolling = plan(
        snapshot(
            daemonset(ROLLING),
            revisions=REVISIONS,
            pods=[asking],
            nodes=NODES,
            pull_template=template,
        ),
        RolloutBook(),
    )
    assert rolling.prepulls == ()


@pytest.mark.parametrize(
    "between",
    [
        pytest.param({}, id="not-ours"),
        pytest.param({**ROLLING, "edgerollout.io/max-failed": "ten"}, id="unreadable-limit"),
    ],
)
def test_a_plan_not_made_from_the_book_makes_the_book_judge_every_node_next_time(
    between: dict[str, str],
) -> None:
    book = RolloutBook()
    first = plan(seen(ROLLING, OUTDATED_PODS), book)
    assert deleted(first) == ["web-2"]

    # A plan that stops before judging: the book does not see edge-1's pod turn not Ready ...
    not_ready = [old_pod("web-1", "edge-1", ready=False), *OUTDATED_PODS[1:]]
    stopped = plan(seen(between, not_ready), book)
    assert stopped.rollout is None
    # ... and is not told of it either, yet the next rolling plan judges it.
    again = plan(seen(ROLLING, not_ready), book)
    assert deleted(again) == ["web-1", "web-2"]


def test_an_ota_plan_judges_with_the_same_book_so_a_rolling_plan_after_it_sees_its_changes() -> (
    None
):
    book = RolloutBook()
    plan(seen(ROLLING, OUTDATED_PODS), book)
    not_ready = [old_pod("web-1", "edge-1", ready=False), *OUTDATED_PODS[1:]]
    ota = plan(seen(OTA, not_ready, changed=["edge-1"]), book)
    assert ota.deletions == ()
    # Told of nothing more, the rolling plan sees what the OTA plan judged.
    again = plan(seen(ROLLING, not_ready), book)
    assert deleted(again) == ["web-1", "web-2"]


def test_a_book_kept_across_plans_plans_as_a_new_one_when_told_what_changed() -> None:
    book = RolloutBook()
    plan(seen(ROLLING, OUTDATED_PODS), book)
    replaced = [pod("web-2b", "edge-2"), OUTDATED_PODS[0], OUTDATED_PODS[2]]
    told = seen(ROLLING, replaced, changed=["edge-2"])
    assert plan(told, book) == plan(told, RolloutBook())
