"""No deletion outside a maintenance window, whatever the rollout (design §13.2): a property of
the whole plan, for AdvancedRollingUpdate and for OTA deadlines."""

from datetime import datetime

from hypothesis import given, settings
from hypothesis import strategies as st

from edgerollout.domain.model import (
    ConditionStatus,
    ContainerFailure,
    NodeReadiness,
    NodeView,
    PodView,
)
from edgerollout.domain.planning.decision import Plan
from edgerollout.domain.planning.reconcile import plan
from edgerollout.domain.planning.rollout_book import RolloutBook
from edgerollout.domain.spec.maintenance_window import MaintenanceWindow
from edgerollout.domain.vocabulary import (
    MAINTENANCE_WINDOW_ANNOTATION,
    MAX_UNAVAILABLE_ANNOTATION,
    OTA_DEADLINE_ANNOTATION,
    POD_NEED_UPGRADE,
    UPDATE_STRATEGY_ANNOTATION,
)

from .builders import OLD, REVISIONS, condition, daemonset, node, old_pod, pod, snapshot
from .test_maintenance_window import instants, read_specs, spec_lists

STATES = ["old", "old", "new", "crashing", "offline"]


def marked(name: str, on: str) -> PodView:
    """An old OTA pod offered the newest revision in 2020, before any drawn instant."""
    offer = condition(POD_NEED_UPGRADE, ConditionStatus.TRUE, since="2020-01-01T00:00:00Z")
    return pod(name, on, revision=OLD, conditions={POD_NEED_UPGRADE: offer})


def rollout(states: list[str], *, ota: bool) -> tuple[list[PodView], list[NodeView]]:
    pods: list[PodView] = []
    nodes: list[NodeView] = []
    for i, state in enumerate(states):
        name, on = f"web-{i}", f"edge-{i:02}"
        if state == "new":
            pods.append(pod(name, on))
        elif state == "crashing":
            failing = ContainerFailure(container="web", reason="CrashLoopBackOff")
            pods.append(pod(name, on, ready=False, failures=[failing]))
        else:
            pods.append(marked(name, on) if ota else old_pod(name, on))
        readiness = NodeReadiness.UNKNOWN if state == "offline" else NodeReadiness.READY
        nodes.append(node(on, readiness))
    return pods, nodes


@settings(max_examples=300, deadline=None)
@given(
    drawn=spec_lists,
    now=instants(),
    states=st.lists(st.sampled_from(STATES), min_size=1, max_size=10),
    budget=st.integers(min_value=1, max_value=5),
    ota=st.booleans(),
)
def test_nothing_is_deleted_while_the_window_is_closed_and_it_is_looked_at_when_it_opens(
    drawn: list[tuple[str, MaintenanceWindow]],
    now: datetime,
    states: list[str],
    budget: int,
    ota: bool,
) -> None:
    windows = read_specs(drawn)
    annotations = {
        UPDATE_STRATEGY_ANNOTATION: "OTA" if ota else "AdvancedRollingUpdate",
        MAX_UNAVAILABLE_ANNOTATION: str(budget),
    }
    if ota:
        annotations[OTA_DEADLINE_ANNOTATION] = "1h"
    pods, nodes = rollout(states, ota=ota)

    def plan_at(with_window: bool) -> Plan:
        written = dict(annotations)
        if with_window:
            written[MAINTENANCE_WINDOW_ANNOTATION] = ", ".join(text for text, _ in drawn)
        return plan(
            snapshot(daemonset(written), revisions=REVISIONS, pods=pods, nodes=nodes, now=now),
            RolloutBook(),
        )

    decided = plan_at(True)
    without = plan_at(False)
    if windows.is_open(now):
        assert decided.deletions == without.deletions
        assert decided.window_opens is None
        return
    assert decided.deletions == ()
    opens = windows.next_open(now)
    assert decided.window_opens == opens
    if without.deletions:
        # Something would go now: the plan comes back when the window opens.
        assert decided.recheck is not None
        assert decided.recheck.window_seconds == max((opens - now).total_seconds(), 0.0)
