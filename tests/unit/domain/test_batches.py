"""Slow start (design §12.8): `edgerollout.io/batches` and `edgerollout.io/batch-soak`."""

from datetime import timedelta

import pytest

from edgerollout.domain.events import EventType, Notice
from edgerollout.domain.model import NodeName, NodeReadiness, NodeView, PodView
from edgerollout.domain.planning.decision import Plan, Snapshot
from edgerollout.domain.planning.holds import BatchProgress, Hold, HoldReason
from edgerollout.domain.planning.reconcile import plan
from edgerollout.domain.planning.rollout_book import RolloutBook
from edgerollout.domain.reporting.rollout_phase import RolloutPhase
from edgerollout.domain.reporting.rollout_status import rollout_status
from edgerollout.domain.spec.count import Count
from edgerollout.domain.spec.staging import Batches, read_staging

from .builders import NOW, REVISIONS, daemonset, node, old_pod, pod

BATCHES = "edgerollout.io/batches"
SOAK = "edgerollout.io/batch-soak"
NAMES = [f"edge-{i:02}" for i in range(20)]


def aru(**more: str) -> dict[str, str]:
    return {
        "apps.openyurt.io/update-strategy": "AdvancedRollingUpdate",
        "apps.openyurt.io/max-unavailable": "100%",
        **more,
    }


def planned(
    annotations: dict[str, str], updated: int = 0, *, offline: int = 0, ready_for: float = 3600
) -> Plan:
    """A plan of 20 nodes in name order, the first `updated` of them on the newest revision
    (available for `ready_for` seconds), the first `offline` of them not Ready."""
    nodes = [
        node(name, NodeReadiness.NOT_READY if i < offline else NodeReadiness.READY)
        for i, name in enumerate(NAMES)
    ]
    pods: list[PodView] = [
        pod(f"p{i}", name, ready_for=timedelta(seconds=ready_for))
        if i < updated
        else old_pod(f"p{i}", name)
        for i, name in enumerate(NAMES)
    ]
    snapshot = Snapshot.of_views(
        daemonset=daemonset(annotations), revisions=REVISIONS, pods=pods, nodes=nodes, now=NOW
    )
    return plan(snapshot, RolloutBook())


def test_batches_are_read_as_written_with_their_soak() -> None:
    staging = read_staging({BATCHES: "1, 5%, 25%", SOAK: "10m"})
    assert staging.batches == Batches(
        targets=(
            Count(written="1", number=1, percent=False),
            Count(written="5%", number=5, percent=True),
            Count(written="25%", number=25, percent=True),
        ),
        soak=timedelta(minutes=10),
    )
    assert (staging.invalid, staging.active) == (False, True)


@pytest.mark.parametrize(
    ("annotations", "named", "raw"),
    [
        ({BATCHES: "0, 50%"}, BATCHES, "0, 50%"),
        ({BATCHES: "1, 150%"}, BATCHES, "1, 150%"),
        ({BATCHES: "one"}, BATCHES, "one"),
        ({BATCHES: "1,,2"}, BATCHES, "1,,2"),
        ({BATCHES: "1", SOAK: "a while"}, SOAK, "a while"),
        ({SOAK: "10m"}, SOAK, "10m"),
    ],
)
def test_a_value_that_cannot_be_read_is_one_warning_and_holds_the_rollout(
    annotations: dict[str, str], named: str, raw: str
) -> None:
    staging = read_staging(annotations)
    ((notice),) = staging.notices
    assert (staging.invalid, notice.reason, notice.type) == (
        True,
        "InvalidBatches",
        EventType.WARNING,
    )
    assert notice.message.startswith(f'{named} is "{raw}": ')


def test_the_first_batch_goes_alone_and_the_others_are_held_by_their_batch() -> None:
    decided = planned(aru(**{BATCHES: "1, 5%, 25%"}))

    assert [d.node_name for d in decided.deletions] == ["edge-00"]
    held = decided.holds.held
    assert tuple(held[NodeName(n)] for n in ("edge-01", "edge-04", "edge-05", "edge-19")) == (
        Hold(reason=HoldReason.BATCH, batch=3),
        Hold(reason=HoldReason.BATCH, batch=3),
        Hold(reason=HoldReason.BATCH, batch=4),
        Hold(reason=HoldReason.BATCH, batch=4),
    )
    assert decided.holds.batch == BatchProgress(index=0, count=4, target=1, nodes=20, pending=1)
    assert [(n.reason, n.subject) for n in decided.notices] == [
        ("BatchStarted", "hash-new/batch/0")
    ]


def test_once_a_batch_is_done_the_next_one_starts_and_an_empty_one_is_passed() -> None:
    # 5 % of 20 nodes is 1, as many as the first batch: the third batch (25 %: 5 nodes) is next.
    decided = planned(aru(**{BATCHES: "1, 5%, 25%"}), updated=1)

    assert [d.node_name for d in decided.deletions] == ["edge-01", "edge-02", "edge-03", "edge-04"]
    assert decided.holds.batch == BatchProgress(index=2, count=4, target=5, nodes=20, pending=4)
    assert decided.notices == (
        Notice(
            type=EventType.NORMAL,
            reason="BatchStarted",
            message=(
                "batch 3 of 4 started: up to 5 of the 20 nodes of the rollout run the newest "
                "revision, every Ready node of the batches before done"
            ),
            subject="hash-new/batch/2",
        ),
    )


def test_an_offline_node_does_not_hold_the_next_batch() -> None:
    decided = planned(aru(**{BATCHES: "1, 25%"}), offline=1)

    assert [d.node_name for d in decided.deletions][:1] == ["edge-01"]
    assert decided.holds.batch is not None
    assert decided.holds.batch.index == 1


def test_a_batch_soaks_before_the_next_starts_and_the_plan_looks_again_then() -> None:
    soaking = planned(aru(**{BATCHES: "1, 25%", SOAK: "10m"}), updated=1, ready_for=240)
    soaked = planned(aru(**{BATCHES: "1, 25%", SOAK: "10m"}), updated=1, ready_for=601)

    assert soaking.deletions == ()
    assert soaking.holds.batch == BatchProgress(
        index=0, count=3, target=1, nodes=20, pending=0, opens=NOW + timedelta(seconds=360)
    )
    assert soaking.recheck is not None
    assert soaking.recheck.soak_seconds == 360.0
    assert [d.node_name for d in soaked.deletions] == ["edge-01", "edge-02", "edge-03", "edge-04"]


def test_max_unavailable_still_bounds_each_moment() -> None:
    annotations = {**aru(**{BATCHES: "50%"}), "apps.openyurt.io/max-unavailable": "2"}
    decided = planned(annotations)
    assert [d.node_name for d in decided.deletions] == ["edge-00", "edge-01"]


def test_a_rollout_held_by_its_next_batch_is_rolling_and_status_says_which_batch() -> None:
    annotations = aru(**{BATCHES: "1, 25%"})
    nodes: list[NodeView] = [node(name) for name in NAMES]
    pods = [old_pod(f"p{i}", name) for i, name in enumerate(NAMES)]
    status = rollout_status(
        daemonset=daemonset(annotations), revisions=REVISIONS, pods=pods, nodes=nodes, now=NOW
    )
    assert (status.phase, status.batch) == (
        RolloutPhase.ROLLING,
        BatchProgress(index=0, count=3, target=1, nodes=20, pending=1),
    )
    assert status.staging == ("batches 1, 25%",)
