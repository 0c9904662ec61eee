"""A rollout's nodes counted by node pool (`counts_by_pool`), as its book judged them."""

from edgerollout.domain.model import NodeReadiness, NodeView, PodView
from edgerollout.domain.planning.decision import Snapshot
from edgerollout.domain.planning.reconcile import plan
from edgerollout.domain.planning.rollout_book import RolloutBook
from edgerollout.domain.reporting.pool_counts import counts_by_pool, pool_label
from edgerollout.domain.reporting.rollout_phase import RolloutCounts

from .builders import NOW, REVISIONS, daemonset, node, old_pod, pod

ARU = {"apps.openyurt.io/update-strategy": "AdvancedRollingUpdate"}
POOLS = {"edge-1": "north", "edge-2": "north", "edge-3": "south", "edge-4": "south"}


def counted(
    annotations: dict[str, str], nodes: list[NodeView], pods: list[PodView]
) -> dict[str, RolloutCounts]:
    """The pools' counts after a plan of these views (edge-5 is in no pool)."""
    book = RolloutBook()
    snapshot = Snapshot.of_views(
        daemonset=daemonset(annotations), revisions=REVISIONS, pods=pods, nodes=nodes, now=NOW
    )
    decided = plan(snapshot, book)
    return counts_by_pool(book, held=decided.holds.held, pool_of=lambda name: POOLS.get(name, ""))


def test_each_node_counts_in_its_pool_and_a_node_without_one_in_the_pool_with_no_name() -> None:
    nodes = [node("edge-1"), node("edge-2", NodeReadiness.NOT_READY), node("edge-3"),
             node("edge-4", NodeReadiness.UNKNOWN), node("edge-5")]  # fmt: skip
    pods = [pod("a", "edge-1"), old_pod("b", "edge-2"), old_pod("c", "edge-3"),
            pod("d", "edge-4"), old_pod("e", "edge-5")]  # fmt: skip

    assert counted(ARU, nodes, pods) == {
        "": RolloutCounts(total=1, remaining=1),
        "north": RolloutCounts(total=2, updated=1, offline=1),
        "south": RolloutCounts(total=2, updated=1, remaining=1),
    }


def test_held_nodes_count_as_held_in_their_pool() -> None:
    nodes = [node(name) for name in ("edge-1", "edge-2", "edge-3", "edge-4")]
    pods = [old_pod(letter, name) for letter, name in zip("abcd", POOLS, strict=True)]
    partition = {**ARU, "edgerollout.io/partition": "2"}  # the last two nodes stay

    assert counted(partition, nodes, pods) == {
        "north": RolloutCounts(total=2, remaining=2),
        "south": RolloutCounts(total=2, held=2),
    }


def test_the_pool_label_is_the_waves_label_when_the_rollout_has_waves() -> None:
    assert pool_label(ARU) == "apps.openyurt.io/nodepool"
    waves = {**ARU, "edgerollout.io/waves": "a, b", "edgerollout.io/wave-label": "region"}
    assert pool_label(waves) == "region"
