"""The benchmark suite still works: `python -m bench --smoke` on labs of its own (50 nodes), the
session's one run (`bench_smoke`, shared with the peer's tests).

Only what must hold whatever the machine's speed is checked — every scenario is in the results,
every pod was updated, each deletion and each OTA mark was one request per pod, the plots and the
table were written — never a timing.
"""

from __future__ import annotations

import pytest

from tests.e2e.support.bench import DISCONNECTED, NODES, PNG, Smoke

# The session's smoke run (about three and a half minutes) serves every test of this module.
pytestmark = pytest.mark.timeout(900)


@pytest.fixture
def smoke(bench_smoke: Smoke) -> Smoke:
    return bench_smoke


def _last(curve: list[list[float]]) -> float:
    return curve[-1][1]


def test_smoke_run_has_every_scenario(smoke: Smoke) -> None:
    results, _, _ = smoke
    assert sorted(results["scenarios"]) == [
        "agent",
        "api_load",
        "disconnected",
        "footprint",
        "mix",
        "ota",
        "rolling",
        "slow-link",
    ]
    assert results["machine"]["cores"] >= 1
    assert len(results["machine"]["load_average"]) == 3


def test_both_rollouts_update_every_node(smoke: Smoke) -> None:
    rolling = smoke[0]["scenarios"]["rolling"]
    assert rolling["nodes"] == NODES
    assert rolling["budget"] == 5
    assert _last(rolling["native"]["curve"]) == NODES
    assert _last(rolling["edgerollout"]["curve"]) == NODES
    assert rolling["edgerollout"]["controller"]["pods_deleted"] == NODES
    # kube-controller-manager's metrics were read: its DaemonSet controller created every
    # replacement, so it synced at least once in each rollout, and never skipped more than it ran.
    for name in ("native", "edgerollout"):
        syncs = rolling[name]["daemonset_controller"]
        assert syncs["syncs"] >= 1
        assert 0 <= syncs["stale_skips"] <= syncs["syncs"]
        # The machine's busy cores were read around each rollout.
        assert 0 < rolling[name]["busy_cores"] <= smoke[0]["machine"]["cores"]
    # Two rounds in the smoke run, in alternating order; the record is their mean.
    assert [r["first"] for r in rolling["rounds"]] == ["native", "edgerollout"]
    seconds = [r["edgerollout_seconds"] for r in rolling["rounds"]]
    assert rolling["edgerollout"]["seconds"] == round(sum(seconds) / 2, 3)
    # The API server's count of pod watches it closed as too slow was read around each rollout.
    for record in rolling["rounds"]:
        closed = (record["native_pod_watches_closed"], record["edgerollout_pod_watches_closed"])
        assert all(isinstance(n, int) and n >= 0 for n in closed), record


def test_each_pod_is_deleted_once_and_nothing_is_listed_or_polled(
    smoke: Smoke,
) -> None:
    api = smoke[0]["scenarios"]["api_load"]
    assert api["deletes"] == NODES
    assert api["deletes_per_pod"] == 1.0
    assert api["pods_deleted_metric"] == NODES
    assert api["controller_gets_during_rollout"] == 0
    assert api["audit_pod_deletes_by_user"]["lab-admin"] == NODES


def test_ota_marks_every_pod_with_one_write_each(smoke: Smoke) -> None:
    ota = smoke[0]["scenarios"]["ota"]
    assert _last(ota["curve"]) == NODES
    # One PodNeedUpgrade per pod, and the DaemonSet's rollout condition once (Complete before
    # the new image, Rolling after it: its reason changes once in the interval measured).
    assert ota["writes"] == NODES + 1
    assert ota["controller"]["by_method"] == {"PATCH": NODES + 1}
    assert ota["controller"]["conditions_written"] == NODES
    assert ota["controller"]["daemonset_conditions_written"] == 1
    assert ota["controller"]["pods_deleted"] == 0


def test_disconnected_nodes_stall_native_but_not_edgerollout(
    smoke: Smoke,
) -> None:
    gone = smoke[0]["scenarios"]["disconnected"]
    assert gone["disconnected"] == DISCONNECTED
    assert gone["native"]["updated"] < NODES - DISCONNECTED
    curve = gone["edgerollout"]["curve"]
    assert _last(curve) == NODES
    connected_done = next(t for t, value in curve if value >= NODES - DISCONNECTED)
    assert connected_done < gone["edgerollout"]["reconnected_at"]


def test_footprint_and_agent_are_measured(smoke: Smoke) -> None:
    scenarios = smoke[0]["scenarios"]
    points = scenarios["footprint"]["points"]
    assert [point["pods"] for point in points] == [1, 51, 201]
    assert all(point["rss_mb"] > 0 for point in points)
    agent = scenarios["agent"]
    assert agent["pods_served"] == 110
    assert agent["get_pods"]["codes"] == {"200": 400}
    assert len(agent["upgrade"]["attempts"]) == 1


def test_the_pod_mix_leaves_only_the_opted_in_daemonsets_pods_in_the_caches(smoke: Smoke) -> None:
    mixed = smoke[0]["scenarios"]["mix"]
    # 20 nodes of the mix and the lab's one: 20 DaemonSets' pods and 10 Deployment pods a node.
    assert (mixed["nodes"], mixed["pods"], mixed["deployment_pods"]) == (21, 620, 200)
    cached = {"daemonsets": 20, "pods": 63, "controllerrevisions": 20, "nodes": 21, "jobs": 0}
    assert mixed["daemonsets_alone"]["cached"] == cached
    assert mixed["with_deployment"]["cached"] == cached
    assert mixed["churn"]["patches"] == 100
    assert mixed["rss_ratio"] > 0


def test_slow_link_downtimes_are_measured_and_pulls_kept_to_the_link_rate(
    smoke: Smoke,
) -> None:
    slow = smoke[0]["scenarios"]["slow-link"]
    assert (slow["payload_bytes"], slow["link_rate_bytes_per_second"]) == (2 << 20, 1e6)
    # A pull of the payload cannot beat the link, whatever the machine: the pre-pull takes at least
    # that long, and so does the downtime of the upgrade that pulls after the old pod is gone.
    least = slow["payload_bytes"] / slow["link_rate_bytes_per_second"]
    assert slow["ota_with_imagepull"]["prepull_seconds"] >= least
    assert slow["ota_without_imagepull"]["downtime_seconds"] >= least
    assert slow["advanced_rolling_update"]["downtime_seconds"] >= least
    assert slow["ota_with_imagepull"]["downtime_seconds"] > 0
    # Pre-pull before delete: the pull takes the link's time before the deletion, and the pod is
    # down only for its start (under a second on the lab's node; the download takes two).
    first = slow["advanced_rolling_update_with_prepull"]
    assert first["prepull_seconds"] >= least
    assert 0 < first["downtime_seconds"] < least
    assert first["downtime_seconds"] < slow["advanced_rolling_update"]["downtime_seconds"]
    # Pulled in a download window while the maintenance window was closed: once it opens, the
    # window is spent on the swap alone, not on the download.
    windowed = slow["advanced_rolling_update_in_window"]
    assert windowed["prepull_seconds"] >= least
    assert 0 < windowed["downtime_seconds"] <= windowed["window_seconds"]
    assert windowed["window_seconds"] < slow["advanced_rolling_update"]["downtime_seconds"]


def test_plots_and_table_are_written(smoke: Smoke) -> None:
    _, stdout, out = smoke
    for kind in ("rolling", "disconnected", "footprint"):
        assert (out / f"smoke-{kind}.png").read_bytes()[:8] == PNG
    lines = stdout.splitlines()
    header = [cell.strip() for cell in lines[0].split(" · ")]
    # With the peer in the run, the reference column names it too (both headers: test_report.py).
    reference = "native, OpenYurt or target" if smoke[0]["options"]["peer"] else "native or target"
    assert header == ["scenario", "edgerollout", f"reference ({reference})", "ratio"]
    scenarios = {line.split(" · ")[0].strip()[:1] for line in lines[1:] if " · " in line}
    assert {"1", "2", "3", "4", "5", "6", "7"} <= scenarios
    assert f"results: {out / 'smoke.json'}" in stdout
