"""A download window apart from the maintenance window (design §13.5): with
`edgerollout.io/prepull-window`, images are asked for on every outdated Ready node while it is
open, at most `edgerollout.io/max-pulling` at once; none while it is closed."""

from datetime import timedelta

import pytest

from edgerollout.domain.events import Notice
from edgerollout.domain.model import NodeName, NodeReadiness, NodeView
from edgerollout.domain.reporting.rollout_status import rollout_status
from edgerollout.domain.spec.count import Count
from edgerollout.domain.spec.maintenance_window import MaintenanceWindows, read_maintenance_window
from edgerollout.domain.spec.prepull import Prepull, read_prepull
from edgerollout.domain.timestamps import format_rfc3339
from edgerollout.domain.vocabulary import (
    MAINTENANCE_WINDOW_ANNOTATION,
    MAX_HOLD_ANNOTATION,
    MAX_PULLING_ANNOTATION,
    PARTITION_ANNOTATION,
    PREPULL_ANNOTATION,
    PREPULL_WINDOW_ANNOTATION,
    WAVE_LABEL_ANNOTATION,
    WAVES_ANNOTATION,
)

from .builders import NOW, REVISIONS, daemonset, deleted, node, warning
from .test_prepull_first import (
    FIRST,
    NODES,
    PULLING,
    READY,
    WAITING,
    decide,
    holds,
    old,
    outdated,
    requested,
)

# NOW is Saturday 2025-03-01 12:00 UTC.
OPEN = "Mon-Sun 11:00-13:00"
CLOSED = "Mon-Sun 14:00-15:00"
OPENS = NOW + timedelta(hours=2)
WINDOWED = {**FIRST, PREPULL_WINDOW_ANNOTATION: OPEN}
TEN_NODES = [node(f"edge-{i}") for i in range(1, 11)]


def windows(raw: str) -> MaintenanceWindows:
    read = read_maintenance_window(raw)
    assert isinstance(read, MaintenanceWindows)
    return read


def count(written: str) -> Count:
    number = int(written.rstrip("%"))
    return Count(written=written, number=number, percent=written.endswith("%"))


# --- the annotations ---


@pytest.mark.parametrize(
    ("prepull", "window", "max_pulling", "read"),
    [
        ("true", OPEN, None, Prepull(window=windows(OPEN), max_pulling=count("10%"))),
        ("true", OPEN, "3", Prepull(window=windows(OPEN), max_pulling=count("3"))),
        ("true", None, "25%", Prepull(max_pulling=count("25%"))),
        ("true", None, " 007 ", Prepull(max_pulling=Count(written="007", number=7, percent=False))),
        ("true", None, "100%", Prepull(max_pulling=count("100%"))),
        # Turned off, and the other two with it.
        ("false", OPEN, "3", None),
        ("FALSE", CLOSED, None, None),
    ],
)
def test_the_annotations_read_a_window_and_a_limit(
    prepull: str, window: str | None, max_pulling: str | None, read: Prepull | None
) -> None:
    assert read_prepull(prepull, window=window, max_pulling=max_pulling) == read


EXPECTED_COUNT = (
    'expected a number of nodes above 0 such as "20", or a percentage from "1%" to "100%" of '
    "the rollout's nodes (pause the rollout to stop it); no node is upgraded until it is fixed"
)


@pytest.mark.parametrize("raw", ["0", "0%", "000", "101%", "-1", "1.5", "ten", "", "5 %"])
def test_a_limit_that_cannot_be_read_or_pulls_nothing_is_a_warning(raw: str) -> None:
    assert read_prepull("true", max_pulling=raw) == warning(
        "InvalidMaxPulling", f'edgerollout.io/max-pulling is "{raw}": {EXPECTED_COUNT}', raw
    )


def test_a_window_that_cannot_be_read_is_a_warning_in_the_maintenance_windows_words() -> None:
    assert read_prepull("true", window="Mon-Fri 25:00-26:00") == warning(
        "InvalidPrepullWindow",
        (
            'edgerollout.io/prepull-window is "Mon-Fri 25:00-26:00": "25:00-26:00" is not a '
            "time range HH:MM-HH:MM (00:00 to 23:59, and 24:00 as an end); expected windows "
            "separated by commas, each days, a time range and an optional time zone, such as "
            '"Mon-Fri 02:00-04:00" or '
            '"Sat,Sun 22:00-06:00 Europe/Berlin"; no pod is deleted until it is fixed'
        ),
        "Mon-Fri 25:00-26:00",
    )
    empty = read_prepull("true", window=" ")
    assert isinstance(empty, Notice)
    assert "it names no window (remove the annotation to pull images at any time)" in empty.message


@pytest.mark.parametrize(
    ("annotation", "raw", "reason"),
    [
        (PREPULL_WINDOW_ANNOTATION, OPEN, "InvalidPrepullWindow"),
        (MAX_PULLING_ANNOTATION, "5", "InvalidMaxPulling"),
    ],
)
def test_a_window_or_a_limit_without_prepull_is_taken_for_a_forgotten_true(
    annotation: str, raw: str, reason: str
) -> None:
    keyword = "window" if annotation == PREPULL_WINDOW_ANNOTATION else "max_pulling"
    assert read_prepull(None, **{keyword: raw}) == warning(
        reason,
        (
            f'{annotation} is "{raw}", but edgerollout.io/prepull is not "true": it shapes '
            'pre-pull before delete only; set edgerollout.io/prepull: "true" or remove it; '
            "no node is upgraded until it is fixed"
        ),
        f"{annotation}={raw}",
    )
    annotations = {k: v for k, v in FIRST.items() if k != PREPULL_ANNOTATION}
    decided = decide(outdated(), {**annotations, annotation: raw})
    assert deleted(decided) == []
    assert [notice.reason for notice in decided.notices] == [reason]
    assert set(holds(decided).values()) == {"invalid setting"}


# --- a reconcile ---


def test_an_open_window_asks_for_every_outdated_ready_node_up_to_max_pulling() -> None:
    pods = [old(i) for i in range(1, 11)]
    decided = decide(pods, {**WINDOWED, MAX_PULLING_ANNOTATION: "4"}, nodes=TEN_NODES)
    assert deleted(decided) == []
    # Not the window ahead of the budget (2), but max-pulling, in the rollout's order.
    assert requested(decided) == ["web-1", "web-10", "web-2", "web-3"]
    assert holds(decided) == {f"edge-{i}": WAITING for i in range(1, 11)}


def test_the_default_is_ten_percent_of_the_rollouts_nodes_rounded_up() -> None:
    decided = decide(outdated(), WINDOWED)
    assert requested(decided) == ["web-1"]  # 10 % of 5 is 0.5: one
    pods = [old(i) for i in range(1, 11)]
    assert requested(decide(pods, WINDOWED, nodes=TEN_NODES)) == ["web-1"]
    eleven = [*TEN_NODES, node("edge-11")]
    assert requested(decide([*pods, old(11)], WINDOWED, nodes=eleven)) == ["web-1", "web-10"]


def test_pulls_under_way_count_against_max_pulling_and_done_ones_do_not() -> None:
    pods = [old(1, READY), old(2, READY), old(3, PULLING), *(old(i) for i in range(4, 11))]
    decided = decide(pods, {**WINDOWED, MAX_PULLING_ANNOTATION: "3"}, nodes=TEN_NODES)
    assert deleted(decided) == ["web-1"]
    # Two of three slots free: web-3 pulls. Nodes 1 and 2 have their images.
    assert requested(decided) == ["web-10", "web-4"]


def test_a_closed_window_asks_for_nothing_and_says_when_it_opens() -> None:
    annotations = {**FIRST, PREPULL_WINDOW_ANNOTATION: CLOSED}
    decided = decide(outdated(web_1=READY, web_2=PULLING), annotations)
    # An image that is there is used: the window is for downloads, not for deletions.
    assert deleted(decided) == ["web-1"]
    assert requested(decided) == []
    unasked = f"{WAITING}, download window opens {format_rfc3339(OPENS)}"
    assert holds(decided) == {
        "edge-2": WAITING,  # its pull goes on: asked for while the window was open
        "edge-3": unasked,
        "edge-4": unasked,
        "edge-5": unasked,
    }
    assert decided.recheck is not None
    assert decided.recheck.prepull_seconds == 630.0  # web-2's fallback comes first

    # No event says that the window opens: the DaemonSet is looked at again then.
    waiting = decide(outdated(web_1=READY), annotations)
    assert waiting.recheck is not None
    assert waiting.recheck.prepull_seconds == 2 * 3600.0


def test_with_every_image_asked_for_the_closed_window_needs_no_look() -> None:
    annotations = {**FIRST, PREPULL_WINDOW_ANNOTATION: CLOSED}
    decided = decide(outdated(web_1=PULLING, web_2=READY, web_3=READY, web_4=READY, web_5=READY),
                     annotations)  # fmt: skip
    assert decided.recheck is not None
    assert decided.recheck.prepull_seconds == 630.0  # web-1's fallback, not the window


def test_in_the_window_the_nodes_of_later_waves_pull_too_but_not_those_held_for_good() -> None:
    labels = {f"edge-{i}": {"pool": "a" if i <= 2 else "b"} for i in range(1, 6)}
    nodes = [
        NodeView(name=NodeName(name), readiness=NodeReadiness.READY, labels=pool)
        for name, pool in labels.items()
    ]
    waves = {**WINDOWED, MAX_PULLING_ANNOTATION: "100%", WAVES_ANNOTATION: "a, b",
             WAVE_LABEL_ANNOTATION: "pool"}  # fmt: skip
    decided = decide(outdated(), waves, nodes=nodes)
    assert requested(decided) == ["web-1", "web-2", "web-3", "web-4", "web-5"]

    partition = decide(outdated(), {**WINDOWED, MAX_PULLING_ANNOTATION: "100%",
                                    PARTITION_ANNOTATION: "2"})  # fmt: skip
    assert requested(partition) == ["web-1", "web-2", "web-3"]


def test_without_a_window_max_pulling_bounds_the_pulls_ahead_of_the_budget() -> None:
    wide = {**FIRST, MAX_PULLING_ANNOTATION: "1"}
    assert requested(decide(outdated(), wide)) == ["web-1"]
    assert requested(decide(outdated(web_1=PULLING), wide)) == []
    # A limit above the window ahead of the budget changes nothing.
    assert requested(decide(outdated(), {**FIRST, MAX_PULLING_ANNOTATION: "5"})) == [
        "web-1",
        "web-2",
    ]


def test_the_download_window_and_the_maintenance_window_are_apart() -> None:
    both = {**WINDOWED, MAINTENANCE_WINDOW_ANNOTATION: CLOSED, MAX_PULLING_ANNOTATION: "100%"}
    decided = decide(outdated(web_1=READY), both)
    assert deleted(decided) == []
    assert requested(decided) == ["web-2", "web-3", "web-4", "web-5"]
    assert set(holds(decided).values()) == {
        f"maintenance window closed, opens {format_rfc3339(OPENS)}"
    }


def test_status_names_the_download_window_max_pulling_and_max_hold_and_who_waits_for_it() -> None:
    annotations = {
        **FIRST,
        PREPULL_WINDOW_ANNOTATION: CLOSED,
        MAX_PULLING_ANNOTATION: "2",
        MAX_HOLD_ANNOTATION: "8h",
    }
    status = rollout_status(
        daemonset=daemonset(annotations),
        revisions=REVISIONS,
        pods=outdated(web_1=READY, web_2=PULLING),
        nodes=NODES,
        now=NOW,
    )
    assert status.staging == (f"download window {CLOSED}", "max pulling 2", "max hold 8h")
    unasked = f"held: {WAITING}, download window opens {format_rfc3339(OPENS)}"
    assert [(row.node, row.state_text) for row in status.rows] == [
        ("edge-1", "old"),
        ("edge-2", f"held: {WAITING}"),
        ("edge-3", unasked),
        ("edge-4", unasked),
        ("edge-5", unasked),
    ]
