"""`edgerollout list` rendering: ages written as kubectl writes them, and the columns of each
layout."""

from __future__ import annotations

from datetime import timedelta

import pytest

from edgerollout.cli.list_render import Layout, ListedStatus, age, no_resources
from edgerollout.domain.model import NodeName, NodeReadiness, NodeView
from edgerollout.domain.reporting.rollout_status import rollout_status
from tests.unit.domain.builders import NOW, REVISIONS, daemonset, node, old_pod, pod

READY = NodeReadiness.READY
WAVES = {
    "apps.openyurt.io/update-strategy": "AdvancedRollingUpdate",
    "edgerollout.io/waves": "pool-a, pool-b",
}


@pytest.mark.parametrize(
    ("elapsed", "shown"),
    [
        # The cases of apimachinery's duration.HumanDuration tests, and its boundaries.
        (timedelta(seconds=-2), "<invalid>"),
        (timedelta(seconds=-1), "0s"),
        (timedelta(seconds=0), "0s"),
        (timedelta(seconds=1), "1s"),
        (timedelta(seconds=70), "70s"),
        (timedelta(seconds=119), "119s"),
        (timedelta(minutes=2), "2m"),
        (timedelta(seconds=190), "3m10s"),
        (timedelta(minutes=70), "70m"),
        (timedelta(hours=3), "3h"),
        (timedelta(hours=3, minutes=20), "3h20m"),
        (timedelta(hours=8, minutes=20), "8h"),
        (timedelta(hours=47), "47h"),
        (timedelta(hours=49), "2d1h"),
        (timedelta(hours=8 * 24 + 2), "8d"),
        (timedelta(days=367), "367d"),
        (timedelta(hours=365 * 2 * 24 + 25), "2y1d"),
        (timedelta(hours=365 * 8 * 24 + 2), "8y"),
    ],
)
def test_an_age_is_written_as_kubectl_writes_it(elapsed: timedelta, shown: str) -> None:
    assert age(elapsed) == shown


def listed() -> ListedStatus:
    """A rollout at its first wave (pool-a), one node of it still old, the newest revision
    created 42 s ago."""
    labelled = [
        NodeView(name=NodeName(name), readiness=READY, labels={"apps.openyurt.io/nodepool": pool})
        for name, pool in (("a-1", "pool-a"), ("a-2", "pool-a"), ("b-1", "pool-b"))
    ]
    status = rollout_status(
        daemonset=daemonset(WAVES, namespace="shop-17"),
        revisions=REVISIONS,
        pods=[pod("p1", "a-1"), old_pod("p2", "a-2"), old_pod("p3", "b-1")],
        nodes=labelled,
        now=NOW,
    )
    return ListedStatus(status=status, revision_created=NOW - timedelta(seconds=42))


def test_a_wide_row_of_all_namespaces_has_every_column_in_order() -> None:
    layout = Layout(all_namespaces=True, wide=True)
    assert list(zip(layout.header(), layout.cells(listed(), now=NOW), strict=True)) == [
        ("NAMESPACE", "shop-17"),
        ("NAME", "nginx-daemonset"),
        ("STRATEGY", "AdvancedRollingUpdate"),
        ("UPDATED", "1/3"),
        ("OFFLINE", "0"),
        ("BROKEN", "0"),
        ("HELD", "1"),
        ("WAVE", "pool-a (1 of 2)"),
        ("STATE", "rolling"),
        ("AGE", "42s"),
        ("MAX-UNAVAILABLE", "10%"),
        ("BUDGET", "1"),
        ("BATCH", "<none>"),
        ("REVISION", "hash-new"),
        ("WARNINGS", "<none>"),
    ]


@pytest.mark.parametrize("layout", [Layout(), Layout(all_namespaces=True, wide=True)])
def test_a_watch_compares_rows_without_their_age(layout: Layout) -> None:
    cells = layout.cells(listed(), now=NOW)
    later = layout.cells(listed(), now=NOW + timedelta(hours=1))
    assert cells != later
    assert layout.without_age(cells) == layout.without_age(later)
    assert "42s" not in layout.without_age(cells)
    assert len(layout.without_age(cells)) == len(cells) - 1


def test_a_rollout_without_a_revision_or_a_known_age_shows_none() -> None:
    status = rollout_status(
        daemonset=daemonset({"apps.openyurt.io/update-strategy": "OTA"}),
        revisions=[],
        pods=[pod("p1", "edge-1", revision=None)],
        nodes=[node("edge-1", NodeReadiness.NOT_READY)],
        now=NOW,
    )
    row = Layout(wide=True).cells(ListedStatus(status=status, revision_created=None), now=NOW)
    assert row == [
        "nginx-daemonset",
        "OTA",
        "0/1",
        "1",
        "0",
        "0",
        "<none>",
        "waiting for offline nodes",
        "<none>",
        "<none>",
        "<none>",
        "<none>",
        "<none>",
        "<none>",
    ]


@pytest.mark.parametrize(
    ("namespace", "said"),
    [("shop-17", "No resources found in shop-17 namespace."), (None, "No resources found")],
)
def test_nothing_to_list_is_said_as_kubectl_says_it(namespace: str | None, said: str) -> None:
    assert no_resources(namespace) == said
