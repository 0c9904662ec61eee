"""Deletions in flight: kept until the cache shows them, then handed to the planner no more."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from edgerollout.controller.expectations import Expectations
from edgerollout.domain.model import InFlight, NodeName, PodUID, PodView


class Clock:
    """Monotonic seconds that move only when a test says so."""

    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def pod(name: str, node: str, *, deleting: bool = False) -> PodView:
    return PodView(
        namespace="default",
        name=name,
        uid=PodUID(f"uid-{name}"),
        node_name=NodeName(node),
        deleting=deleting,
        ready=not deleting,
    )


def on_nodes(*pods: PodView) -> Callable[[NodeName], list[PodView]]:
    """The cache's pods-on-a-node lookup, over these pods."""
    return lambda node: [pod for pod in pods if pod.node_name == node]


def expecting(
    deleted: str, node: str, *, timeout: float = 300.0, clock: Clock | None = None
) -> Expectations:
    expectations = Expectations(timeout=timeout, clock=clock or Clock())
    expectations.expect(PodUID(f"uid-{deleted}"), NodeName(node))
    return expectations


IN_FLIGHT = {PodUID("uid-web-a"): NodeName("edge-1")}


def flying(in_flight: InFlight) -> dict[PodUID, NodeName]:
    """The deletions handed on, by pod UID; their `nodes` are those of the same deletions."""
    by_uid = dict(in_flight.by_uid)
    assert set(in_flight.nodes) == set(by_uid.values())
    return by_uid


def test_deletion_is_dropped_once_the_pod_is_terminating_and_its_replacement_is_seen() -> None:
    expectations = expecting("web-a", "edge-1")
    terminating = pod("web-a", "edge-1", deleting=True)

    assert flying(expectations.settle(on_nodes(terminating))) == IN_FLIGHT
    assert flying(expectations.settle(on_nodes(terminating, pod("web-new", "edge-1")))) == {}
    assert expectations.pending == 0


def test_deletion_is_dropped_once_the_pod_is_gone_and_a_live_pod_holds_its_node() -> None:
    expectations = expecting("web-a", "edge-1")

    assert flying(expectations.settle(on_nodes(pod("web-new", "edge-1")))) == {}
    assert expectations.pending == 0


@pytest.mark.parametrize(
    "pods",
    [
        pytest.param([pod("web-a", "edge-1")], id="pod-still-running"),
        pytest.param([], id="pod-gone-node-empty"),
        pytest.param([pod("web-b", "edge-2")], id="pod-gone-live-pod-elsewhere"),
        pytest.param([pod("web-old", "edge-1", deleting=True)], id="pod-gone-node-terminating"),
        pytest.param([pod("web-a", "edge-1", deleting=True)], id="pod-terminating"),
        pytest.param(
            [pod("web-a", "edge-1"), pod("web-new", "edge-1")], id="pod-running-beside-new"
        ),
    ],
)
def test_deletion_the_cache_does_not_show_yet_is_kept_and_handed_on(pods: list[PodView]) -> None:
    expectations = expecting("web-a", "edge-1")

    assert flying(expectations.settle(on_nodes(*pods))) == IN_FLIGHT
    assert flying(expectations.settle(on_nodes(*pods))) == IN_FLIGHT
    assert expectations.pending == 1


def test_deletion_older_than_the_timeout_is_dropped() -> None:
    clock = Clock(1000.0)
    expectations = expecting("web-a", "edge-1", timeout=300.0, clock=clock)

    clock.now = 1300.0
    assert flying(expectations.settle(on_nodes())) == IN_FLIGHT
    clock.now = 1300.5
    assert flying(expectations.settle(on_nodes())) == {}
    assert expectations.pending == 0


def test_drop_removes_an_entry() -> None:
    expectations = expecting("web-a", "edge-1")
    expectations.expect(PodUID("uid-web-b"), NodeName("edge-2"))

    expectations.drop(PodUID("uid-web-b"))
    assert flying(expectations.settle(on_nodes())) == IN_FLIGHT
    assert expectations.pending == 1


def test_an_entry_is_looked_at_again_only_once_its_node_is_named_changed() -> None:
    expectations = expecting("web-a", "edge-1")
    assert flying(expectations.settle(on_nodes(pod("web-a", "edge-1")), set())) == IN_FLIGHT

    caught_up = on_nodes(pod("web-a", "edge-1", deleting=True), pod("web-new", "edge-1"))
    assert flying(expectations.settle(caught_up, {NodeName("edge-2")})) == IN_FLIGHT
    assert flying(expectations.settle(caught_up, {NodeName("edge-1")})) == {}
    assert expectations.pending == 0


def test_an_entry_is_looked_at_in_the_first_settle_after_it_was_recorded() -> None:
    expectations = expecting("web-a", "edge-1")

    assert flying(expectations.settle(on_nodes(pod("web-new", "edge-1")), set())) == {}
    assert expectations.pending == 0


def test_an_entry_expires_whether_or_not_its_node_changed() -> None:
    clock = Clock(1000.0)
    expectations = expecting("web-a", "edge-1", timeout=300.0, clock=clock)
    assert flying(expectations.settle(on_nodes(), set())) == IN_FLIGHT

    clock.now = 1300.5
    assert flying(expectations.settle(on_nodes(), set())) == {}
    assert expectations.pending == 0


def test_an_entry_recorded_again_is_timed_from_then() -> None:
    clock = Clock(1000.0)
    expectations = expecting("web-a", "edge-1", timeout=300.0, clock=clock)
    clock.now = 1100.0
    expectations.expect(PodUID("uid-web-b"), NodeName("edge-2"))
    clock.now = 1200.0
    expectations.expect(PodUID("uid-web-a"), NodeName("edge-1"))

    clock.now = 1400.5
    assert flying(expectations.settle(on_nodes(), set())) == IN_FLIGHT
    assert expectations.pending == 1


def test_each_settle_names_the_nodes_where_an_entry_came_or_went_since_the_previous() -> None:
    clock = Clock(1000.0)
    expectations = expecting("web-a", "edge-1", timeout=300.0, clock=clock)
    expectations.expect(PodUID("uid-web-b"), NodeName("edge-2"))
    assert expectations.settle(on_nodes(), set()).touched == {"edge-1", "edge-2"}
    assert expectations.settle(on_nodes(), set()).touched == set()

    # Dropped by the deleter, seen replaced, timed out, recorded: each names its node once.
    expectations.expect(PodUID("uid-web-c"), NodeName("edge-3"))
    expectations.drop(PodUID("uid-web-c"))
    settled = expectations.settle(on_nodes(pod("web-new", "edge-1")), {NodeName("edge-1")})
    assert (settled.touched, flying(settled)) == (
        {"edge-1", "edge-3"},
        {PodUID("uid-web-b"): NodeName("edge-2")},
    )
    clock.now = 1300.5
    settled = expectations.settle(on_nodes(), set())
    assert (settled.touched, flying(settled)) == ({"edge-2"}, {})
    assert expectations.settle(on_nodes(), set()).touched == set()


def test_what_a_settle_hands_on_is_a_view_that_follows_the_next_writes() -> None:
    expectations = expecting("web-a", "edge-1")
    settled = expectations.settle(on_nodes(), set())
    expectations.expect(PodUID("uid-web-b"), NodeName("edge-2"))

    assert flying(settled) == {
        PodUID("uid-web-a"): NodeName("edge-1"),
        PodUID("uid-web-b"): NodeName("edge-2"),
    }
    assert PodUID("uid-web-b") in settled.by_uid
    assert PodUID("uid-web-c") not in settled.by_uid
