"""One state per rollout: made once, dropped whole, told only of its own DaemonSet's changes."""

from __future__ import annotations

import pytest

from edgerollout.controller.rollout_state import RolloutStates
from edgerollout.domain.model import DaemonSetUID, NodeName, PodUID
from edgerollout.settings import ReconcileSettings

from .test_expectations import Clock

WEB, API = DaemonSetUID("uid-ds-web"), DaemonSetUID("uid-ds-api")


def states(clock: Clock | None = None) -> RolloutStates:
    return RolloutStates(
        settings=ReconcileSettings(expectations_timeout=300.0, condition_write_timeout=10.0),
        clock=clock or Clock(),
    )


def test_a_rollout_has_one_state_until_it_is_dropped_whole() -> None:
    kept = states()
    web = kept.of("default/web", WEB)
    assert kept.of("default/web", WEB) is web
    web.deletions.expect(PodUID("uid-web-a"), NodeName("edge-1"))
    web.skipped_nodes = 2

    assert kept.drop("default/web") is web
    assert kept.get("default/web") is None
    assert kept.drop("default/web") is None
    fresh = kept.of("default/web", WEB)
    assert fresh is not web
    assert (fresh.deletions.pending, fresh.conditions.next_expiry(), fresh.skipped_nodes) == (
        0,
        None,
        0,
    )


def test_a_reset_state_is_a_new_one_under_the_same_uid_told_of_its_own_changes() -> None:
    kept = states()
    web = kept.of("default/web", WEB)
    web.deletions.expect(PodUID("uid-web-a"), NodeName("edge-1"))
    web.skipped_nodes = 2

    fresh = kept.reset("default/web")

    assert fresh is not web
    assert kept.get("default/web") is fresh
    assert (fresh.uid, fresh.deletions.pending, fresh.skipped_nodes) == (WEB, 0, 0)
    kept.pod_changed(WEB, NodeName("edge-3"))
    assert fresh.take_changed_nodes() == {"edge-3"}
    assert web.take_changed_nodes() == frozenset()
    with pytest.raises(KeyError, match="default/api: no rollout state to reset"):
        kept.reset("default/api")


def test_states_of_other_rollouts_are_untouched() -> None:
    kept = states()
    web, api = kept.of("default/web", WEB), kept.of("default/api", API)
    web.deletions.expect(PodUID("uid-web-a"), NodeName("edge-1"))
    api.deletions.expect(PodUID("uid-api-a"), NodeName("edge-1"))
    web.skipped_nodes, api.skipped_nodes = 2, 3
    assert kept.skipped_nodes == 5

    kept.drop("default/web")
    assert api.deletions.pending == 1
    assert kept.skipped_nodes == 3
    assert len(kept) == 1


def test_a_pod_change_is_news_for_its_own_rollout_and_a_node_change_for_every_rollout() -> None:
    kept = states()
    web, api = kept.of("default/web", WEB), kept.of("default/api", API)

    kept.pod_changed(WEB, NodeName("edge-1"))
    kept.pod_changed("uid-ds-unknown", NodeName("edge-9"))
    kept.node_changed(NodeName("edge-2"))

    assert web.take_changed_nodes() == {"edge-1", "edge-2"}
    assert api.take_changed_nodes() == {"edge-2"}
    assert web.take_changed_nodes() == frozenset()


def test_a_state_measures_its_writes_ages_with_the_given_clock_and_timeouts() -> None:
    clock = Clock(50.0)
    web = states(clock).of("default/web", WEB)
    web.deletions.expect(PodUID("uid-web-a"), NodeName("edge-1"))
    clock.now = 350.0
    assert len(web.deletions.settle(lambda node: []).by_uid) == 1
    clock.now = 350.5
    assert dict(web.deletions.settle(lambda node: []).by_uid) == {}
