"""The benchmark's peer still works: `python -m bench --smoke --peer openyurt` (50 nodes), with
OpenYurt's yurt-manager in the same lab and rounds as edgerollout and native: the session's one
smoke run (`bench_smoke`), which takes the peer in whenever it is built.

Skipped unless the peer is built (`./dev lab build --peer openyurt`), which `./dev test` does not
do. As in the smoke test without the peer, only what holds whatever the machine's speed is checked:
every OpenYurt rollout updated every node, each of its pods was deleted by it, every OTA pod was
marked, the three took turns, and the table and the API-load plot were written. The peer is not held
to edgerollout's contract of one request per pod: a run here once saw it write 51 conditions for
50 pods.
"""

from __future__ import annotations

import pytest
from bench import peer

from tests.e2e.support.bench import DISCONNECTED, NODES, PNG, Smoke
from tests.e2e.support.peer import needs_peer

pytestmark = [
    needs_peer,
    # The session's smoke run (about three and a half minutes) serves every test of this module.
    pytest.mark.timeout(900),
]


@pytest.fixture
def smoke(bench_smoke: Smoke) -> Smoke:
    assert bench_smoke[0]["options"]["peer"] == "openyurt"
    return bench_smoke


def test_openyurt_updates_every_node_in_the_rounds_taking_turns_with_the_others(
    smoke: Smoke,
) -> None:
    rolling = smoke[0]["scenarios"]["rolling"]
    assert rolling["openyurt"]["curve"][-1][1] == NODES
    assert [r["order"] for r in rolling["rounds"]] == [
        ["native", "edgerollout", "openyurt"],
        ["edgerollout", "openyurt", "native"],
    ]
    seconds = [r["openyurt_seconds"] for r in rolling["rounds"]]
    assert rolling["openyurt"]["seconds"] == round(sum(seconds) / 2, 3)
    assert rolling["peer_ratio"] == round(
        rolling["edgerollout"]["seconds"] / rolling["openyurt"]["seconds"], 3
    )


def test_each_controller_deletes_the_pods_of_its_own_daemonset(
    smoke: Smoke,
) -> None:
    api = smoke[0]["scenarios"]["api_load"]
    assert api["audited_deletes_per_pod"] == 1.0
    assert api["openyurt_deletes_per_pod"] >= 1.0
    # Besides the controller, only KWOK deletes (once each pod's termination is over).
    assert sorted(api["openyurt_audit_pod_deletes_by_user"]) == ["kwok", peer.USER]


def test_openyurt_marks_every_ota_pod_with_status_updates(
    smoke: Smoke,
) -> None:
    theirs = smoke[0]["scenarios"]["ota"]["openyurt"]
    assert theirs["curve"][-1][1] == NODES
    assert sorted(theirs["controller"]["by_method"]) == ["PUT"]
    assert theirs["writes"] == theirs["controller"]["by_method"]["PUT"] >= NODES


def test_openyurt_updates_the_connected_nodes_then_the_reconnected_ones(
    smoke: Smoke,
) -> None:
    theirs = smoke[0]["scenarios"]["disconnected"]["openyurt"]
    curve = theirs["curve"]
    assert curve[-1][1] == NODES
    connected_done = next(t for t, value in curve if value >= NODES - DISCONNECTED)
    # The nodes are reconnected as soon as the connected ones are done: to the millisecond the
    # results keep, both can be the same instant.
    assert connected_done <= theirs["reconnected_at"] < theirs["ready_at"]
    assert max(t for t, _ in curve) > theirs["ready_at"]


def test_the_table_and_the_api_load_plot_name_openyurt(
    smoke: Smoke,
) -> None:
    _, stdout, out = smoke
    for kind in ("rolling", "disconnected", "api-load"):
        assert (out / f"smoke-{kind}.png").read_bytes()[:8] == PNG
    lines = stdout.splitlines()
    assert [cell.strip() for cell in lines[0].split(" · ")] == [
        "scenario",
        "edgerollout",
        "reference (native, OpenYurt or target)",
        "ratio",
    ]
    # Scenario rows start with their number, their detail rows with spaces.
    against = {line[:1] for line in lines if "· OpenYurt " in line and not line.startswith(" ")}
    assert against == {"1", "2", "3", "4", "5"}
