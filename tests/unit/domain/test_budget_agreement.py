"""One budget: `status`, `plan` and the controller show the same max-unavailable, over one base.

Random DaemonSets (any max-unavailable, a progress deadline or failure budget that may not be
readable, a desired count) over random clusters (pods old or new, Ready or not, terminating,
nodes offline or missing): the budget `edgerollout status` shows, the one `edgerollout plan`'s
header shows, and the one the controller's plan deletes under, with a fresh book or with one kept
from an earlier plan, are the same number over the same base, and the base is the restated one.
"""

from hypothesis import given, settings
from hypothesis import strategies as st

from edgerollout.domain.model import NodeReadiness, NodeView, PodView
from edgerollout.domain.planning.decision import Snapshot
from edgerollout.domain.planning.reconcile import plan
from edgerollout.domain.planning.rollout_book import RolloutBook
from edgerollout.domain.reporting.rollout_status import rollout_status
from edgerollout.domain.spec.max_unavailable import InvalidMaxUnavailable
from edgerollout.domain.spec.strategy import UpdateStrategy

from .builders import NEW, NOW, OLD, daemonset, max_unavailable, node, pod, revision
from .planner_oracle import oracle_budget_base

REVISIONS = (revision("ds-1", 1, OLD), revision("ds-2", 2, NEW))
STRATEGY = "apps.openyurt.io/update-strategy"


@st.composite
def clusters(draw: st.DrawFn) -> tuple[list[PodView], list[NodeView]]:
    names = [f"edge-{index}" for index in range(draw(st.integers(0, 12)))]
    nodes = [
        node(name, draw(st.sampled_from(list(NodeReadiness))))
        for name in names
        if draw(st.booleans()) or draw(st.booleans())  # some nodes missing from the cache
    ]
    pods = [
        pod(
            f"web-{name}-{index}",
            name,
            revision=draw(st.sampled_from([OLD, NEW])),
            ready=draw(st.booleans()),
            deleting=draw(st.booleans()) and draw(st.booleans()),
        )
        for name in names
        for index in range(draw(st.integers(0, 2)))
    ]
    return pods, nodes


annotations = st.fixed_dictionaries(
    {STRATEGY: st.sampled_from(["AdvancedRollingUpdate", "OTA"])},
    optional={
        "apps.openyurt.io/max-unavailable": st.sampled_from(
            ["1", "3", "0", "10%", "50%", "100%", "250%", "abc", " 2 ", "9" * 20]
        ),
        "edgerollout.io/progress-deadline-seconds": st.sampled_from(["600", "0", "x"]),
        "edgerollout.io/max-failed": st.sampled_from(["1", "50%", "ten"]),
    },
)


@settings(max_examples=400, deadline=None)
@given(annotations, clusters(), st.none() | st.integers(0, 15))
def test_status_plan_and_controller_show_one_budget_over_one_base(
    written: dict[str, str], cluster: tuple[list[PodView], list[NodeView]], desired: int | None
) -> None:
    pods, nodes = cluster
    ds = daemonset(written, desired_nodes=desired)
    snapshot = Snapshot.of_views(daemonset=ds, revisions=REVISIONS, pods=pods, nodes=nodes, now=NOW)
    base = oracle_budget_base(pods, desired_nodes=desired)
    assert snapshot.budget_base() == base

    fresh = plan(snapshot, RolloutBook())
    kept_book = RolloutBook()
    plan(
        Snapshot.of_views(daemonset=ds, revisions=REVISIONS, pods=(), nodes=(), now=NOW), kept_book
    )
    changed = frozenset(snapshot.pods_by_node) | frozenset(n.name for n in nodes)
    kept = plan(
        Snapshot(
            daemonset=ds,
            revisions=REVISIONS,
            pods=snapshot.pods,
            pods_by_node=snapshot.pods_by_node,
            readiness=snapshot.readiness,
            node_labels=snapshot.node_labels,
            changed_nodes=changed,
            now=NOW,
        ),
        kept_book,
    )
    status = rollout_status(daemonset=ds, revisions=REVISIONS, pods=pods, nodes=nodes, now=NOW)

    expected = max_unavailable(written.get("apps.openyurt.io/max-unavailable"), base=base)
    if written[STRATEGY] == "OTA":
        assert status.strategy.strategy is UpdateStrategy.OTA
        assert status.strategy.budget is None
        return
    if isinstance(expected, InvalidMaxUnavailable):  # no budget anywhere, shown as written
        assert fresh.budget is None
        assert kept.budget is None
        assert status.strategy.budget is None
        assert status.strategy.max_unavailable == written["apps.openyurt.io/max-unavailable"]
        return
    assert fresh.budget == expected
    assert kept.budget == expected
    assert (status.strategy.budget, status.strategy.base) == (expected.value, expected.base)
    for decided in (fresh, kept):
        if decided.rollout is not None:  # what `edgerollout plan`'s header shows
            assert decided.rollout.max_unavailable == expected.value
