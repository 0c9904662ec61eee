"""The benchmark's table: one row per measurement, edgerollout beside its reference."""

from __future__ import annotations

from typing import Any

from bench.report import PEER_HEADER, Row, header, render, rows


def replacements(median: float, reuse: float, unavailable: float) -> dict[str, Any]:
    spread = {"median": median, "p90": median, "max": median}
    return {
        "replaced": 1000,
        "stages_seconds": {"deleting_to_ready": spread},
        "mean_unavailable": unavailable,
        "slot_reuse_seconds": {"median": reuse, "p90": reuse, "max": reuse},
    }


ROLLING: dict[str, Any] = {
    "nodes": 1000,
    "budget": 100,
    "native": {
        "seconds": 20.0,
        "lab_cpu_seconds": {"kube-controller-manager": 8.0},
        "replacements": replacements(2.0, 0.1, 90.0),
        "daemonset_controller": {"syncs": 200, "stale_skips": 150},
        "busy_cores": 1.9,
    },
    "edgerollout": {
        "seconds": 16.0,
        "controller_cpu_seconds": 4.0,
        "replacements": replacements(1.5, 0.05, 95.0),
        "daemonset_controller": {"syncs": 400, "stale_skips": 300.5},
        "busy_cores": 1.95,
    },
    "lab": {
        "wave_seconds": 2.5,
        "idle_cpu_seconds_per_second": {"kube-apiserver": 0.2, "kwok": 0.05},
        "edgerollout_cpu_seconds": 30.0,
        "native_cpu_seconds": 40.0,
        "cores": 2,
    },
}


def test_rolling_rows_compare_with_the_native_controller_of_the_same_run() -> None:
    assert rows({"scenarios": {"rolling": ROLLING}}) == [
        Row(
            "1 rollout, 1000 nodes Ready, max-unavailable 10%",
            "16.0 s",
            "native 20.0 s (target ≤ 1.0x)",
            "0.80x",
        ),
        Row("  a replacement: deletion → new pod Ready (median)", "1.5 s", "native 2.0 s", "0.75x"),
        Row(
            "  a freed slot used: replacement Ready → next deletion (median)",
            "50 ms",
            "native 100 ms",
            "0.50x",
        ),
        Row("  nodes unavailable on average (budget 100)", "95", "native 90", "1.06x"),
        Row(
            "  kube-controller-manager's DaemonSet syncs: skipped as stale / all",
            "300.5 / 400",
            "native 150 / 200",
            "2.00x",
        ),
        Row(
            "5 CPU seconds per 1000-node rollout",
            "4.0 s",
            "native: kube-controller-manager 8.0 s",
            "0.50x",
        ),
        Row("  lab: one batch of 100 pods deleted by hand → Ready", "-", "2.5 s", "-"),
        Row("  lab: CPU of the idle lab (heartbeats, Leases), per second", "-", "0.25 s/s", "-"),
        Row(
            "  lab: CPU seconds of the lab's programs during the rollout",
            "30.0 s",
            "native 40.0 s",
            "0.75x",
        ),
        Row(
            "  lab and controller: CPU seconds during the rollout",
            "34.0 s",
            "native 40.0 s",
            "0.85x",
        ),
        Row("  machine: cores busy during the rollout (of 2)", "1.95", "native 1.9", "1.03x"),
    ]


def test_targets_are_upper_bounds_with_their_unit() -> None:
    results = {
        "scenarios": {
            "api_load": {
                "deletes_per_pod": 1.0,
                "target_deletes_per_pod": 1.05,
                "controller_gets_during_rollout": 0,
                "apiserver_pods_by_verb": {"DELETE": 3000, "POST": 1000},
                "native_apiserver_pods_by_verb": {"DELETE": 3000, "POST": 1000},
            },
            "footprint": {
                "target_rss_mb_at_10000": 150,
                "points": [{"pods": 10001, "rss_mb": 93.4}],
            },
        }
    }
    assert rows(results) == [
        Row("3 deletes per pod", "1.000", "target ≤ 1.05", "0.95x"),
        Row(
            "3 LISTs / GETs by the controller during the rollout",
            "0",
            "target 0 (watches only, no polling)",
            "-",
        ),
        Row(
            "3 pod requests served by the API server (all clients)", "4000", "native 4000", "1.00x"
        ),
        Row("5 controller RSS, 10001 pods cached", "93 MB", "target ≤ 150 MB at 10,000", "0.62x"),
    ]


def test_ota_writes_meet_an_exact_target_and_agent_latencies_are_shown_as_measured() -> None:
    results = {
        "scenarios": {
            "ota": {
                "nodes": 1000,
                "seconds": 5.6,
                "target_seconds": 10,
                "writes_per_pod": 1.0,
                "target_writes_per_pod": 1,
            },
            "agent": {
                "pods_served": 110,
                "target_p99_ms": 50,
                "get_pods": {"rate_per_second": 200.0, "p50_ms": 1.23, "p99_ms": 4.0},
                "upgrade": {"median_deletion_seen_ms": 41.6},
            },
        }
    }
    assert rows(results) == [
        Row("4 OTA: every pod PodNeedUpgrade=True (1000 pods)", "5.6 s", "target ≤ 10 s", "0.56x"),
        Row("4 OTA: API writes per pod", "1.000", "target 1", "1.00x"),
        Row("6 agent GET /pods p50 (110 pods, 200/s)", "1.2 ms", "-", "-"),
        Row("6 agent GET /pods p99", "4.0 ms", "target ≤ 50 ms", "0.08x"),
        Row("6 agent upgrade → pod deleted (median)", "42 ms", "-", "-"),
    ]


SLOW_LINK: dict[str, Any] = {
    "payload_bytes": 52_428_800,
    "link_rate_bytes_per_second": 2_000_000.0,
    "ota_with_imagepull": {"prepull_seconds": 27.4, "downtime_seconds": 1.6},
    "ota_without_imagepull": {"downtime_seconds": 28.3},
    "advanced_rolling_update": {"downtime_seconds": 28.9},
}


def test_slow_link_compares_downtime_with_and_without_imagepull() -> None:
    slow = {**SLOW_LINK, "downtime_ratio": 17.7}
    assert rows({"scenarios": {"slow-link": slow}}) == [
        Row(
            "7 OTA downtime, imagepull first (52 MB layer, 2 MB/s link)",
            "1.6 s",
            "upgrade without imagepull 28.3 s",
            "0.06x",
        ),
        Row("7 AdvancedRollingUpdate downtime (reference)", "28.9 s", "-", "-"),
    ]


def test_slow_link_compares_advanced_rolling_update_with_and_without_prepull_first() -> None:
    prepull = {"prepull_seconds": 27.2, "downtime_seconds": 1.2}
    slow = {**SLOW_LINK, "advanced_rolling_update_with_prepull": prepull}
    assert rows({"scenarios": {"slow-link": slow}})[-1] == Row(
        "7 AdvancedRollingUpdate downtime, prepull first (pull 27.2 s)",
        "1.2 s",
        "without prepull 28.9 s",
        "0.04x",
    )


def test_slow_link_shows_the_downtime_and_the_time_in_the_window_of_a_download_window() -> None:
    windowed = {"prepull_seconds": 27.9, "downtime_seconds": 1.1, "window_seconds": 2.3}
    slow = {**SLOW_LINK, "advanced_rolling_update_in_window": windowed}
    assert rows({"scenarios": {"slow-link": slow}})[-1] == Row(
        "7 AdvancedRollingUpdate, pulled in a download window: downtime "
        "(time in the maintenance window 2.3 s)",
        "1.1 s",
        "without prepull 28.9 s",
        "0.04x",
    )


def test_rendered_as_markdown() -> None:
    table = [Row("1 rollout", "16.0 s", "native 20.0 s", "0.80x")]
    assert render(table, markdown=True) == (
        "| scenario | edgerollout | reference (native or target) | ratio |\n"
        "|---|---|---|---|\n"
        "| 1 rollout | 16.0 s | native 20.0 s | 0.80x |"
    )


def test_disconnected_rows_measure_against_limits_derived_from_the_run() -> None:
    gone = {
        "nodes": 1000,
        "disconnected": 200,
        "target_connected_ratio": 1.1,
        "target_after_ready_seconds": 10.0,
        "target_after_ready_seconds_with_wave": 14.0,
        "native": {"updated": 0, "watched_seconds": 300},
        "edgerollout": {
            "connected_seconds": 22.0,
            "after_ready_seconds": 7.0,
            "old_pods_deleted_after_ready_seconds": 0.25,
            "cut_nodes_seen_ready_while_cut": 0,
            "kwok_writes_refused_while_cut": 12,
        },
    }
    assert rows({"scenarios": {"rolling": ROLLING, "disconnected": gone}})[-5:] == [
        Row(
            "2 200 of 1000 disconnected: share updated",
            "800/1000 in 22.0 s",
            "native 0/1000 after 300 s",
            "-",
        ),
        Row(
            "2 time to update the 800 Ready nodes",
            "22.0 s",
            "target 1.1 x scenario 1 = 17.6 s",
            "1.25x",
        ),
        Row(
            "2 reconnected 200: all updated, after Ready",
            "7.0 s",
            "target 10 s + one wave = 14.0 s",
            "0.50x",
        ),
        Row(
            "  of which edgerollout: last of the 200 old pods deleted, after Ready",
            "0.2 s",
            "-",
            "-",
        ),
        Row("  lab: cut nodes seen Ready during the cut / KWOK writes refused", "0 / 12", "-", "-"),
    ]


PEER_ROLLING: dict[str, Any] = {
    **ROLLING,
    "edgerollout": {**ROLLING["edgerollout"], "controller_rss_mb": 48.0},
    "openyurt": {
        "seconds": 25.0,
        "controller_cpu_seconds": 2.0,
        "controller_rss_mb": 64.0,
        "replacements": replacements(2.5, 0.2, 80.0),
    },
    "lab": {**ROLLING["lab"], "openyurt_cpu_seconds": 37.5},
    "rounds": [
        {
            "first": "native",
            "edgerollout_seconds": 15.0,
            "native_seconds": 19.0,
            "openyurt_seconds": 30.0,
            "ratio": 0.789,
            "peer_ratio": 0.5,
        },
        {
            "first": "edgerollout",
            "edgerollout_seconds": 17.0,
            "native_seconds": 21.0,
            "openyurt_seconds": 20.0,
            "ratio": 0.81,
            "peer_ratio": 0.85,
        },
    ],
}


def test_with_the_peer_scenario_1_gains_rows_against_openyurt_after_the_native_ones() -> None:
    table = rows({"scenarios": {"rolling": PEER_ROLLING}})
    assert table[0].reference == "native 20.0 s (target ≤ 1.0x)"
    assert table[-8:] == [
        Row(
            "1 rollout, 1000 nodes Ready, against OpenYurt (mean of 2 rounds)",
            "16.0 s",
            "OpenYurt 25.0 s",
            "0.64x",
        ),
        Row("  each round", "15.0 s, 17.0 s", "OpenYurt 30.0 s, 20.0 s", "0.50x, 0.85x"),
        Row(
            "  a replacement: deletion → new pod Ready (median)", "1.5 s", "OpenYurt 2.5 s", "0.60x"
        ),
        Row(
            "  a freed slot used: replacement Ready → next deletion (median)",
            "50 ms",
            "OpenYurt 200 ms",
            "0.25x",
        ),
        Row("  nodes unavailable on average (budget 100)", "95", "OpenYurt 80", "1.19x"),
        Row(
            "5 CPU seconds per 1000-node rollout: the controller",
            "4.0 s",
            "OpenYurt 2.0 s",
            "2.00x",
        ),
        Row("  controller RSS after the rollout", "48 MB", "OpenYurt 64 MB", "0.75x"),
        Row(
            "  lab: CPU seconds of the lab's programs during the rollout",
            "30.0 s",
            "OpenYurt 37.5 s",
            "0.80x",
        ),
    ]


def test_without_the_peer_the_table_has_no_openyurt_row_and_its_usual_header() -> None:
    table = rows({"scenarios": {"rolling": ROLLING}})
    assert [row for row in table if "OpenYurt" in row.reference] == []
    assert header({"scenarios": {"rolling": ROLLING}, "options": {"peer": None}}) == (
        "scenario",
        "edgerollout",
        "reference (native or target)",
        "ratio",
    )
    assert header({"scenarios": {"rolling": PEER_ROLLING}}) == (
        "scenario",
        "edgerollout",
        "reference (native, OpenYurt or target)",
        "ratio",
    )


def test_with_the_peer_the_disconnected_rows_compare_both_phases_with_openyurt() -> None:
    gone = {
        "nodes": 1000,
        "disconnected": 200,
        "target_connected_ratio": 1.1,
        "target_after_ready_seconds": 10.0,
        "native": {"updated": 0, "watched_seconds": 300},
        "edgerollout": {"connected_seconds": 22.0, "after_ready_seconds": 7.0},
        "openyurt": {"connected_seconds": 44.0, "after_ready_seconds": 3.5},
    }
    assert rows({"scenarios": {"disconnected": gone}})[-2:] == [
        Row(
            "2 time to update the 800 Ready nodes, against OpenYurt",
            "22.0 s",
            "OpenYurt 44.0 s",
            "0.50x",
        ),
        Row(
            "2 reconnected 200: all updated, after Ready, against OpenYurt",
            "7.0 s",
            "OpenYurt 3.5 s",
            "2.00x",
        ),
    ]


def test_with_the_peer_the_api_load_of_the_three_is_shown_side_by_side() -> None:
    api = {
        "deletes_per_pod": 1.0,
        "target_deletes_per_pod": 1.05,
        "controller_gets_during_rollout": 0,
        "apiserver_pods_by_verb": {"DELETE": 3000, "POST": 1000},
        "native_apiserver_pods_by_verb": {"DELETE": 3000, "POST": 1000, "PUT": 10},
        "audited_deletes_per_pod": 1.0,
        "openyurt_deletes_per_pod": 1.25,
        "openyurt_apiserver_pods_by_verb": {"DELETE": 3250, "POST": 1000, "PATCH": 750},
        "controller_requests_by_method": {"DELETE": 1000},
        "openyurt_controller_requests_by_method": {"DELETE": 1250, "POST": 2},
    }
    assert rows({"scenarios": {"api_load": api}})[3:] == [
        Row(
            "3 pod deletes per pod, from the audit log, against OpenYurt",
            "1.000",
            "OpenYurt 1.250",
            "0.80x",
        ),
        Row(
            "3 pod requests served by the API server (all clients), against OpenYurt",
            "4000",
            "OpenYurt 5000",
            "0.80x",
        ),
        Row("  by verb", "DELETE 3000, POST 1000", "native DELETE 3000, POST 1000, PUT 10", "-"),
        Row(
            "  by verb", "DELETE 3000, POST 1000", "OpenYurt DELETE 3250, PATCH 750, POST 1000", "-"
        ),
        Row(
            "  the controller's own requests, by method",
            "DELETE 1000",
            "OpenYurt DELETE 1250, POST 2",
            "-",
        ),
    ]


def test_with_the_peer_ota_is_compared_with_openyurt() -> None:
    ota = {
        "nodes": 1000,
        "seconds": 5.6,
        "target_seconds": 10,
        "writes_per_pod": 1.0,
        "target_writes_per_pod": 1,
        "openyurt": {"seconds": 2.8, "writes_per_pod": 1.0},
    }
    assert rows({"scenarios": {"ota": ota}})[2:] == [
        Row(
            "4 OTA: every pod PodNeedUpgrade=True, against OpenYurt",
            "5.6 s",
            "OpenYurt 2.8 s",
            "2.00x",
        ),
        Row("4 OTA: API writes per pod, against OpenYurt", "1.000", "OpenYurt 1.000", "1.00x"),
    ]


def test_rendered_with_the_peer_header() -> None:
    table = [Row("1 rollout", "16.0 s", "OpenYurt 20.0 s", "0.80x")]
    assert render(table, markdown=True, head=PEER_HEADER) == (
        "| scenario | edgerollout | reference (native, OpenYurt or target) | ratio |\n"
        "|---|---|---|---|\n"
        "| 1 rollout | 16.0 s | OpenYurt 20.0 s | 0.80x |"
    )


def test_the_pod_mix_shows_rss_against_the_daemonsets_alone_and_cpu_against_its_target() -> None:
    results = {
        "scenarios": {
            "mix": {
                "nodes": 1001,
                "pods": 30020,
                "target_cpu_share": 0.05,
                "daemonsets_alone": {
                    "rss_mb": 80.0,
                    "ready_seconds": 2.0,
                    "cached": {"pods": 3003},
                },
                "with_deployment": {"rss_mb": 82.0, "ready_seconds": 2.5, "cached": {"pods": 3003}},
                "churn": {"rate_achieved": 412.3, "controller_cpu_share": 0.004},
            }
        }
    }
    assert rows(results) == [
        Row(
            "8 controller RSS, 1001 nodes, 30 pods each",
            "82 MB",
            "DaemonSets' pods alone 80 MB",
            "1.02x",
        ),
        Row("8 pods cached (opted-in DaemonSets' / all)", "3003 / 30020", "-", "-"),
        Row("8 controller ready after start", "2.5 s", "-", "-"),
        Row(
            "8 controller CPU, 412 other pods' changes/s",
            "0.4 % of a core",
            "target ≤ 5 % of a core",
            "0.08x",
        ),
    ]


def test_the_opted_in_pods_alone_show_rss_against_the_goal() -> None:
    results = {
        "scenarios": {
            "mix": {
                "nodes": 10001,
                "pods": 30003,
                "opted_in_pods": 30003,
                "daemonsets_alone": {
                    "rss_mb": 120.4,
                    "ready_seconds": 9.5,
                    "cached": {"pods": 30003},
                },
            }
        }
    }
    assert rows(results) == [
        Row(
            "8 controller RSS, 10001 nodes, opted-in pods only",
            "120 MB",
            "target ≤ 150 MB",
            "0.80x",
        ),
        Row("8 pods cached (opted-in DaemonSets')", "30003 / 30003", "-", "-"),
        Row("8 controller ready after start", "9.5 s", "-", "-"),
    ]


def test_the_dashboards_page_is_compared_with_status_of_the_same_rollout() -> None:
    page = {
        "nodes": 10001,
        "status_best_seconds": 4.0,
        "page_loads": [{}, {}, {}],
        "page_first_drawing_best_seconds": 0.5,
        "redraw_ms": [40.0, 50.0, 60.0],
        "redraw_median_seconds": 0.05,
        "redraw_slowest_seconds": 0.06,
        "server_rss_mb_largest": 140.4,
    }
    assert rows({"scenarios": {"dashboard": page}}) == [
        Row("9 dashboard page drawn, 10001 nodes (best of 3)", "500 ms", "status 4000 ms", "0.12x"),
        Row("9 dashboard redraw of an update (median of 3)", "50 ms", "status 4000 ms", "0.01x"),
        Row("9 dashboard redraw, slowest", "60 ms", "-", "-"),
        Row("9 dashboard server RSS, largest", "140 MB", "-", "-"),
    ]


def test_the_pod_watches_the_api_server_closed_are_shown_for_each_round() -> None:
    rounds = [
        {
            "first": "native",
            "edgerollout_seconds": 15.0,
            "native_seconds": 19.0,
            "ratio": 0.789,
            "native_pod_watches_closed": 0,
            "edgerollout_pod_watches_closed": 9,
        },
        {
            "first": "edgerollout",
            "edgerollout_seconds": 17.0,
            "native_seconds": 21.0,
            "ratio": 0.81,
            "native_pod_watches_closed": 1,
            "edgerollout_pod_watches_closed": 0,
        },
    ]
    table = rows({"scenarios": {"rolling": {**ROLLING, "rounds": rounds}}})

    closed = [row for row in table if "watches" in row.scenario]
    assert closed == [
        Row(
            "  lab: pod watches the API server closed as too slow, each round",
            "9, 0",
            "native 0, 1",
            "-",
        )
    ]
    # Right after the syncs of each side.
    assert (
        table[table.index(closed[0]) - 1].scenario == "  nodes unavailable on average (budget 100)"
    )
