"""The failure budget judged on a sample (design §13.4): `edgerollout.io/min-sample` and
`edgerollout.io/max-failed-before-sample`."""

import pytest

from edgerollout.domain.events import EventType, Notice
from edgerollout.domain.planning.failure_stop import failure_stop
from edgerollout.domain.reporting.rollout_phase import RolloutPhase
from edgerollout.domain.spec.count import Count
from edgerollout.domain.spec.max_failed import MinSample, read_min_sample
from edgerollout.domain.spec.rollout_spec import read_rollout_spec

from .builders import NEW, node, old_pod, pod
from .test_failure_budget import aru, broken, crash_looping, rollout_of
from .test_rollout_phase import status_of

TEN_PERCENT = Count(written="10%", number=10, percent=True)
SAMPLE = MinSample(size=20, before=1)
MIN_SAMPLE = "edgerollout.io/min-sample"
BEFORE = "edgerollout.io/max-failed-before-sample"


@pytest.mark.parametrize(
    ("size", "before", "expected"),
    [
        (None, None, None),
        ("20", None, MinSample(size=20, before=1)),
        (" 20 ", "3", MinSample(size=20, before=3)),
        ("0", "0", MinSample(size=0, before=0)),
    ],
)
def test_a_sample_is_read_with_its_budget_before(
    size: str | None, before: str | None, expected: MinSample | None
) -> None:
    assert read_min_sample(size, before, max_failed=TEN_PERCENT) == expected


@pytest.mark.parametrize(
    ("size", "before", "annotation", "raw", "why"),
    [
        ("20%", None, MIN_SAMPLE, "20%", 'expected a whole number of nodes such as "20"'),
        ("many", None, MIN_SAMPLE, "many", 'expected a whole number of nodes such as "20"'),
        ("20", "-1", BEFORE, "-1", 'expected a whole number of broken nodes such as "1"'),
        (None, "2", BEFORE, "2", f"{MIN_SAMPLE} is not set"),
    ],
)
def test_a_sample_that_cannot_be_read_is_one_warning(
    size: str | None, before: str | None, annotation: str, raw: str, why: str
) -> None:
    assert read_min_sample(size, before, max_failed=TEN_PERCENT) == Notice(
        type=EventType.WARNING,
        reason="InvalidMinSample",
        message=f'{annotation} is "{raw}": {why}; no node is upgraded until it is fixed',
        subject=f"{annotation}={raw}",
    )


def test_a_sample_without_a_failure_budget_is_refused_not_ignored() -> None:
    notice = read_min_sample("20", None, max_failed=None)
    assert isinstance(notice, Notice)
    assert notice.message == (
        f'{MIN_SAMPLE} is "20": it says when edgerollout.io/max-failed is judged, which is not '
        "set; no node is upgraded until it is fixed"
    )


# The arithmetic of design §13.4: max-failed 10 %, min-sample 20, one broken node tolerated before.
@pytest.mark.parametrize(
    ("tried", "broken_nodes", "stops", "budget"),
    [
        (19, 1, False, ""),
        (19, 2, True, f'{BEFORE} "1" before {MIN_SAMPLE} 20 nodes tried it (19 so far) tolerates (1)'),
        (20, 2, False, ""),
        (20, 3, True, 'edgerollout.io/max-failed "10%" of the 20 nodes that tried it tolerates (2)'),
        (100, 10, False, ""),
        (100, 11, True, 'edgerollout.io/max-failed "10%" of the 100 nodes that tried it tolerates (10)'),
    ],
)  # fmt: skip
def test_before_the_sample_its_count_then_the_percentage_of_the_nodes_that_tried(
    tried: int, broken_nodes: int, stops: bool, budget: str
) -> None:
    notice = failure_stop(
        broken(*(f"edge-{i:03}" for i in range(broken_nodes))),
        limit=TEN_PERCENT,
        nodes=10_000,
        revision=NEW,
        pause_changes=0,
        sample=SAMPLE,
        tried=tried,
    )
    assert (notice is not None) == stops
    if notice is not None:
        assert f"broken on revision {NEW}, more than {budget}: edge-000" in notice.message


FIVE_NODES = [
    crash_looping("web-1", "edge-1"),
    crash_looping("web-2", "edge-2"),
    old_pod("web-3", "edge-3"),
    old_pod("web-4", "edge-4"),
    old_pod("web-5", "edge-5"),
]


def test_two_of_the_first_two_broken_stop_a_rollout_that_fifty_percent_of_all_would_let_go() -> (
    None
):
    without = rollout_of(aru("50%", max_unavailable="5"), FIVE_NODES)
    sampled = rollout_of(aru("50%", max_unavailable="5", **{MIN_SAMPLE: "4"}), FIVE_NODES)

    assert (without.pause_rollout, [d.node_name for d in without.deletions]) == (
        False,
        ["edge-3", "edge-4", "edge-5"],
    )
    assert (sampled.pause_rollout, sampled.deletions) == (True, ())
    assert [n.reason for n in sampled.notices] == ["RolloutFailed"]


def test_the_phase_is_failed_on_the_sample_too() -> None:
    annotations = aru("50%", max_unavailable="5", **{MIN_SAMPLE: "4"})
    nodes = [node(f"edge-{i}") for i in range(1, 6)]
    status = status_of(annotations, FIVE_NODES, nodes)
    assert status.phase is RolloutPhase.ROLLOUT_FAILED


def test_an_unreadable_sample_stops_the_plan_as_an_unreadable_budget_does() -> None:
    annotations = aru("1", **{MIN_SAMPLE: "a few"})
    decided = rollout_of(annotations, [old_pod("web-1", "edge-1"), pod("web-2", "edge-2")])
    assert (decided.deletions, [n.reason for n in decided.notices]) == ((), ["InvalidMinSample"])
    assert isinstance(read_rollout_spec(annotations).min_sample, Notice)
