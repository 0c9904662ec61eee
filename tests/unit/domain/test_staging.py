"""Staged rollouts: reading the annotations, and which nodes are held (design §12)."""

from collections.abc import Mapping
from dataclasses import replace
from datetime import UTC, datetime

import pytest

from edgerollout.domain.events import EventType, Notice
from edgerollout.domain.model import NodeName
from edgerollout.domain.planning.holds import (
    Hold,
    HoldReason,
    Holds,
    WaveIndex,
    WaveProgress,
    hold_nodes,
    wave_started_notice,
)
from edgerollout.domain.spec.staging import Staging, read_staging
from edgerollout.domain.vocabulary import (
    INVALID_NODE_SELECTOR,
    INVALID_PARTITION,
    INVALID_PAUSED,
    INVALID_WAVES,
    NODE_SELECTOR_ANNOTATION,
    NODEPOOL_LABEL,
    PARTITION_ANNOTATION,
    PAUSED_ANNOTATION,
    WAVE_LABEL_ANNOTATION,
    WAVES_ANNOTATION,
)

NODES = [NodeName(f"edge-{i}") for i in range(1, 7)]


def held(
    annotations: Mapping[str, str],
    *,
    nodes: list[NodeName] = NODES,
    labels: Mapping[str, Mapping[str, str]] | None = None,
    done: set[str] = frozenset(),  # type: ignore[assignment]
    not_ready: set[str] = frozenset(),  # type: ignore[assignment]
    starting: set[str] = frozenset(),  # type: ignore[assignment]
) -> Holds:
    staging = read_staging(annotations)
    assert staging.notices == ()
    return hold_nodes(
        staging,
        nodes=nodes,
        labels=lambda name: (labels or {}).get(name, {}),
        done=lambda name: name in done,
        ready=lambda name: name not in not_ready,
        outdated=lambda name: name not in done and name not in starting,
    )


def reasons(holds: Holds) -> dict[str, str]:
    return {name: str(hold) for name, hold in sorted(holds.held.items())}


def refused(annotation: str, raw: str, reason: str) -> tuple[Staging, Notice]:
    """`annotation: raw` read alone: invalid, with one `reason` notice naming the value."""
    staging = read_staging({annotation: raw})
    assert staging.invalid
    [notice] = staging.notices
    assert (notice.reason, notice.subject) == (reason, raw)
    assert notice.message.startswith(f'{annotation} is "{raw}": ')
    return staging, notice


# --- reading the annotations ---


def test_no_staging_annotation_holds_nothing_and_costs_nothing() -> None:
    staging = read_staging({})
    assert staging == Staging()
    assert not staging.active
    assert held({}) == Holds()


@pytest.mark.parametrize(
    ("raw", "count_of_6"),
    [("2", 2), (" 2 ", 2), ("0", None), ("000", None), ("6", 6), ("99", 6), ("50%", 3),
     ("34%", 3), ("1%", 1), ("100%", 6), ("250%", 6), ("9" * 40, 6)],
)  # fmt: skip
def test_partition_values_and_what_they_hold_of_six_nodes(raw: str, count_of_6: int | None) -> None:
    staging = read_staging({PARTITION_ANNOTATION: raw})
    assert staging.notices == ()
    if count_of_6 is None:
        assert staging.partition is None
    else:
        assert staging.partition is not None
        six = [NodeName(f"node-{index}") for index in range(6)]
        holds = held({PARTITION_ANNOTATION: raw}, nodes=six)
        assert sorted(holds.held) == six[6 - count_of_6 :]
        assert {str(hold) for hold in holds.held.values()} == {"partition"}


@pytest.mark.parametrize("raw", ["-1", "+2", "1.5", "%", "two", "2 %", "", "0x2", "٣"])
def test_an_invalid_partition_warns_once_and_holds_every_node(raw: str) -> None:
    staging = read_staging({PARTITION_ANNOTATION: raw})
    assert staging.invalid
    [notice] = staging.notices
    assert (notice.type, notice.reason, notice.subject) == (
        EventType.WARNING,
        INVALID_PARTITION,
        raw,
    )
    assert notice.message == (
        f'{PARTITION_ANNOTATION} is "{raw}": expected a number of nodes such as "2" or a '
        'percentage such as "20%"; no node is upgraded until it is fixed'
    )
    holds = hold_nodes(
        staging, nodes=NODES, labels=lambda _: {}, done=bool, ready=bool, outdated=bool
    )
    assert set(reasons(holds).values()) == {"invalid setting"}
    assert set(holds.held) == set(NODES)


@pytest.mark.parametrize("raw", ["", "   ", "a in (", "=x", "a==b==c", "!"])
def test_an_invalid_node_selector_warns_with_the_value(raw: str) -> None:
    staging, notice = refused(NODE_SELECTOR_ANNOTATION, raw, INVALID_NODE_SELECTOR)
    assert staging.selector is None
    assert notice.message.endswith(
        'expected a label selector as kubectl -l takes it, such as "canary=true" or '
        '"zone in (a, b), !excluded"; no node is upgraded until it is fixed'
    )


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        ("pool-a,,pool-b", "a wave has no name"),
        ("", "a wave has no name"),
        ("pool-a, pool-a", "pool-a is named twice"),
        ("*, pool-a, *", "* is named twice"),
        ("pool a", '"pool a" is not a label value'),
    ],
)
def test_invalid_waves_warn_with_the_problem(raw: str, problem: str) -> None:
    staging, notice = refused(WAVES_ANNOTATION, raw, INVALID_WAVES)
    assert staging.waves is None
    assert notice.message.startswith(f'{WAVES_ANNOTATION} is "{raw}": {problem}')


def test_a_wave_label_without_waves_is_invalid() -> None:
    staging = read_staging({WAVE_LABEL_ANNOTATION: "region"})
    [notice] = staging.notices
    assert (notice.reason, notice.subject) == (INVALID_WAVES, "region")
    assert staging.invalid


def test_waves_read_the_nodepool_label_unless_another_is_named() -> None:
    default = read_staging({WAVES_ANNOTATION: " pool-a , pool-b,* "}).waves
    assert default is not None
    assert (default.names, default.label) == (("pool-a", "pool-b", "*"), NODEPOOL_LABEL)
    other = read_staging({WAVES_ANNOTATION: "eu", WAVE_LABEL_ANNOTATION: "example.com/region"})
    assert other.waves is not None
    assert other.waves.label == "example.com/region"
    bad = read_staging({WAVES_ANNOTATION: "eu", WAVE_LABEL_ANNOTATION: "-region"})
    assert [n.reason for n in bad.notices] == [INVALID_WAVES]


def test_each_invalid_value_has_its_own_warning() -> None:
    staging = read_staging(
        {
            PAUSED_ANNOTATION: "yes",
            PARTITION_ANNOTATION: "x",
            NODE_SELECTOR_ANNOTATION: "(",
            WAVES_ANNOTATION: ",",
        }
    )
    assert [n.reason for n in staging.notices] == [
        INVALID_PAUSED,
        INVALID_NODE_SELECTOR,
        INVALID_PARTITION,
        INVALID_WAVES,
    ]
    assert staging.paused
    assert staging.invalid


# --- which nodes are held ---


def test_paused_holds_every_node() -> None:
    holds = held({PAUSED_ANNOTATION: "true"})
    assert reasons(holds) == dict.fromkeys(NODES, "paused")
    assert holds.paused


def test_a_partition_holds_the_last_nodes_of_the_order() -> None:
    assert reasons(held({PARTITION_ANNOTATION: "2"})) == {
        "edge-5": "partition",
        "edge-6": "partition",
    }
    assert list(held({PARTITION_ANNOTATION: "50%"}).held) == ["edge-4", "edge-5", "edge-6"]


def test_a_partition_holds_the_same_nodes_whatever_their_state() -> None:
    # Already upgraded or offline, the last two by name stay the partition.
    holds = held({PARTITION_ANNOTATION: "2"}, done={"edge-6"}, not_ready={"edge-5"})
    assert list(holds.held) == ["edge-5", "edge-6"]


def test_nodes_waiting_for_their_pull_are_held_unless_held_for_another_reason() -> None:
    def holding(staging: Staging) -> dict[str, str]:
        holds = hold_nodes(
            staging,
            nodes=NODES,
            labels=lambda _: {},
            done=lambda _: False,
            ready=lambda _: True,
            outdated=lambda _: True,
        )
        return reasons(holds)

    pulling = frozenset({NODES[0], NODES[5]})
    waiting = "waiting for its image pre-pull"
    assert Staging(pulling=pulling).active
    assert holding(Staging(pulling=pulling)) == {"edge-1": waiting, "edge-6": waiting}
    partition = read_staging({PARTITION_ANNOTATION: "1"})
    assert holding(replace(partition, pulling=pulling)) == {
        "edge-1": waiting,
        "edge-6": "partition",
    }
    # A closed window and a pause hold every node, and say so.
    opens = datetime(2025, 3, 2, 2, 0, tzinfo=UTC)
    closed = holding(Staging(pulling=pulling, window_opens=opens))
    assert set(closed.values()) == {"maintenance window closed, opens 2025-03-02T02:00:00Z"}
    assert holding(Staging(pulling=pulling, paused=True)) == dict.fromkeys(NODES, "paused")
    assert Hold(reason=HoldReason.PULLING).condition_reason == ""


def test_a_selector_holds_the_nodes_it_does_not_select() -> None:
    labels = {"edge-2": {"canary": "true"}, "edge-5": {"canary": "true", "zone": "a"}}
    holds = held({NODE_SELECTOR_ANNOTATION: "canary=true"}, labels=labels)
    assert reasons(holds) == dict.fromkeys(
        ["edge-1", "edge-3", "edge-4", "edge-6"], "node selector"
    )


def test_a_partition_counts_over_the_selected_nodes() -> None:
    labels = {name: {"canary": "true"} for name in ["edge-2", "edge-4", "edge-5"]}
    holds = held({NODE_SELECTOR_ANNOTATION: "canary", PARTITION_ANNOTATION: "1"}, labels=labels)
    assert reasons(holds) == {
        "edge-1": "node selector",
        "edge-3": "node selector",
        "edge-5": "partition",
        "edge-6": "node selector",
    }


POOLS = {
    "edge-1": {NODEPOOL_LABEL: "pool-b"},
    "edge-2": {NODEPOOL_LABEL: "pool-a"},
    "edge-3": {NODEPOOL_LABEL: "pool-c"},
    "edge-4": {NODEPOOL_LABEL: "pool-a"},
    "edge-5": {},
    "edge-6": {NODEPOOL_LABEL: "pool-b"},
}


def test_the_first_wave_goes_first_and_the_others_wait() -> None:
    holds = held({WAVES_ANNOTATION: "pool-a, pool-b, *"}, labels=POOLS)
    assert holds.wave == WaveProgress(index=0, count=3, name="pool-a", pending=2)
    assert reasons(holds) == {
        "edge-1": "wave pool-b",
        "edge-3": "wave *",
        "edge-5": "wave *",
        "edge-6": "wave pool-b",
    }
    order = sorted(NODES, key=holds.order)
    assert order == ["edge-2", "edge-4", "edge-1", "edge-6", "edge-3", "edge-5"]


def test_a_wave_starts_when_every_ready_node_of_the_earlier_waves_is_done() -> None:
    not_yet = held({WAVES_ANNOTATION: "pool-a, pool-b, *"}, labels=POOLS, done={"edge-2"})
    assert not_yet.wave is not None
    assert not_yet.wave.name == "pool-a"
    started = held({WAVES_ANNOTATION: "pool-a, pool-b, *"}, labels=POOLS, done={"edge-2", "edge-4"})
    assert started.wave == WaveProgress(index=1, count=3, name="pool-b", pending=2)
    assert reasons(started) == {"edge-3": "wave *", "edge-5": "wave *"}


def test_a_not_ready_node_of_an_earlier_wave_does_not_hold_the_later_waves() -> None:
    holds = held(
        {WAVES_ANNOTATION: "pool-a, pool-b, *"},
        labels=POOLS,
        done={"edge-2", "edge-1", "edge-6"},
        not_ready={"edge-4"},
    )
    assert holds.wave == WaveProgress(index=2, count=3, name="*", pending=2)
    assert holds.held == {}
    # The node back first: it comes before the later waves in the order.
    assert sorted(NODES, key=holds.order)[1] == "edge-4"


def test_every_wave_done_is_the_last_wave_with_nothing_pending() -> None:
    holds = held({WAVES_ANNOTATION: "pool-a, pool-b, *"}, labels=POOLS, done=set(NODES))
    assert holds.wave == WaveProgress(index=2, count=3, name="*", pending=0)
    assert wave_started_notice(holds, revision="r1") is None


def test_without_a_star_nodes_of_no_listed_pool_are_held() -> None:
    holds = held({WAVES_ANNOTATION: "pool-a"}, labels=POOLS)
    assert reasons(holds) == dict.fromkeys(["edge-1", "edge-3", "edge-5", "edge-6"], "in no wave")


def test_a_star_first_takes_the_unnamed_pools_first() -> None:
    holds = held({WAVES_ANNOTATION: "*, pool-a"}, labels=POOLS)
    assert reasons(holds) == {"edge-2": "wave pool-a", "edge-4": "wave pool-a"}


def test_waves_with_another_label_key() -> None:
    labels = {"edge-1": {"region": "eu"}, "edge-2": {"region": "us"}}
    holds = held(
        {WAVES_ANNOTATION: "us, eu", WAVE_LABEL_ANNOTATION: "region"},
        nodes=[NodeName("edge-1"), NodeName("edge-2")],
        labels=labels,
    )
    assert reasons(holds) == {"edge-1": "wave eu"}


def test_a_wave_started_event_names_the_wave_once_per_revision() -> None:
    holds = held({WAVES_ANNOTATION: "pool-a, pool-b, *"}, labels=POOLS, done={"edge-2", "edge-4"})
    notice = wave_started_notice(holds, revision="r1")
    assert notice is not None
    assert (notice.type, notice.reason, notice.subject) == (
        EventType.NORMAL,
        "WaveStarted",
        "r1/1/pool-b",
    )
    assert notice.message == (
        "wave pool-b (2 of 3) started: its nodes are upgraded now, every Ready node of the "
        "waves before it being done"
    )


def test_a_paused_rollout_announces_no_wave() -> None:
    holds = held({WAVES_ANNOTATION: "pool-a, *", PAUSED_ANNOTATION: "true"}, labels=POOLS)
    assert holds.wave is not None
    assert holds.wave.pending == 2
    assert wave_started_notice(holds, revision="r1") is None


def test_held_nodes_tell_ota_pods_why() -> None:
    assert Hold(reason=HoldReason.PARTITION).condition_reason == "HeldByPartition"
    assert Hold(reason=HoldReason.WAVE, wave="b").condition_reason == "HeldByWave"
    assert Hold(reason=HoldReason.SELECTOR).condition_reason == "HeldByNodeSelector"
    assert Hold(reason=HoldReason.NOT_IN_WAVES).condition_reason == "NotInWaves"


def test_a_new_daemonset_whose_pods_start_announces_no_wave() -> None:
    # Every pod of the newest revision, none available yet: nothing to upgrade, no wave started.
    holds = held({WAVES_ANNOTATION: "pool-a, pool-b, *"}, labels=POOLS, starting=set(NODES))
    assert holds.wave == WaveProgress(index=0, count=3, name="pool-a", pending=0)
    assert wave_started_notice(holds, revision="r1") is None


def test_a_wave_index_reads_a_nodes_labels_once_until_told_to_forget_it() -> None:
    waves = read_staging({WAVES_ANNOTATION: "pool-a, *"}).waves
    assert waves is not None
    pools = {"edge-1": "pool-a", "edge-2": "pool-b", "edge-3": "pool-a"}
    read: list[str] = []

    def labels(name: str) -> Mapping[str, str]:
        read.append(name)
        return {NODEPOOL_LABEL: pools[name]}

    index = WaveIndex()
    nodes = [NodeName(name) for name in sorted(pools)]
    order = index.order(waves, nodes[:2], labels)
    assert (order.ordered, dict(order.rank)) == (("edge-1", "edge-2"), {"edge-1": 0, "edge-2": 1})
    assert (order.by_wave, order.in_no_wave) == ((("edge-1",), ("edge-2",)), ())
    assert sorted(read) == ["edge-1", "edge-2"]

    # Another plan: only the node not seen yet is read; a relabelled node is read once forgotten.
    pools["edge-1"] = "pool-b"
    order = index.order(waves, nodes, labels)
    assert sorted(read) == ["edge-1", "edge-2", "edge-3"]
    assert order.ordered == ("edge-1", "edge-3", "edge-2")
    index.forget([NodeName("edge-1"), NodeName("edge-9")])
    order = index.order(waves, nodes, labels)
    assert read[3:] == ["edge-1"]
    assert [order.of[name] for name in nodes] == [1, 1, 0]
    assert order.by_wave == (("edge-3",), ("edge-1", "edge-2"))

    # Nothing told, the same nodes: the same order, nothing read.
    assert index.order(waves, nodes, labels) is order
    assert read[4:] == []

    # Other waves: every node is read again.
    other = read_staging({WAVES_ANNOTATION: "pool-b"}).waves
    assert other is not None
    order = index.order(other, nodes, labels)
    assert sorted(read[4:]) == ["edge-1", "edge-2", "edge-3"]
    assert (order.by_wave, order.in_no_wave) == ((("edge-1", "edge-2"),), ("edge-3",))
    assert [order.of[name] for name in nodes] == [0, 0, None]


def test_a_wave_index_orders_again_when_a_node_it_was_told_of_comes_or_goes() -> None:
    waves = read_staging({WAVES_ANNOTATION: "pool-a, *"}).waves
    assert waves is not None
    pools = {"edge-1": "pool-b", "edge-2": "pool-a", "edge-3": "pool-a"}
    index = WaveIndex()
    nodes = [NodeName(name) for name in sorted(pools)]

    def labels(name: str) -> Mapping[str, str]:
        return {NODEPOOL_LABEL: pools[name]}

    assert index.order(waves, nodes, labels).ordered == ("edge-2", "edge-3", "edge-1")
    # One goes and another comes between two plans: as many nodes, told of both.
    pools["edge-0"] = "pool-a"
    index.forget([NodeName("edge-3"), NodeName("edge-0")])
    moved = [NodeName("edge-0"), *nodes[:2]]
    assert index.order(waves, moved, labels).ordered == ("edge-0", "edge-2", "edge-1")
