"""The results file and the table: scenario · edgerollout · reference (native or target) · ratio.

With the peer (`--peer openyurt`) the table gains OpenYurt's rows: the same measurement with
yurt-manager's figure as the reference, so that the ratio is edgerollout/OpenYurt.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HEADER = ("scenario", "edgerollout", "reference (native or target)", "ratio")
PEER_HEADER = ("scenario", "edgerollout", "reference (native, OpenYurt or target)", "ratio")
PEER = "openyurt"


@dataclass(frozen=True, slots=True)
class Row:
    scenario: str
    edgerollout: str
    reference: str
    ratio: str


def _ratio(ours: float | None, reference: float | None) -> str:
    if ours is None or not reference:
        return "-"
    return f"{ours / reference:.2f}x"


def _s(seconds: float) -> str:
    return f"{seconds:.1f} s"


def _target(
    scenario: str,
    value: float,
    target: float,
    *,
    unit: str = "",
    digits: int = 1,
    at: str = "",
    upper_bound: bool = True,
) -> Row:
    """A row measured against a target: value, "target ≤ X" (or "target X" for a target to meet
    exactly), ratio."""
    bound = "≤ " if upper_bound else ""
    return Row(
        scenario,
        f"{value:.{digits}f}{unit}",
        f"target {bound}{target:g}{unit}{at}",
        _ratio(value, target),
    )


def _shown(scenario: str, edgerollout: str = "-", reference: str = "-") -> Row:
    """A row with nothing to divide: a measurement (or a reference) shown as it is, no ratio."""
    return Row(scenario, edgerollout, reference, "-")


def _within(scenario: str, seconds: float, limit: float, limit_is: str) -> Row:
    """A time against a limit derived from something else: "target <how> = <limit>", ratio."""
    return Row(scenario, _s(seconds), f"target {limit_is} = {_s(limit)}", _ratio(seconds, limit))


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms"


def _count(value: float) -> str:
    return f"{value:g}"


def _versus(
    scenario: str,
    ours: float | None,
    native: float | None,
    shown: Callable[[float], str] = _s,
    *,
    against: str = "native",
) -> Row:
    """A row comparing edgerollout with the native controller (or the peer), measured in the same
    run."""
    ours_text = "-" if ours is None else shown(ours)
    native_text = "-" if native is None else shown(native)
    return Row(scenario, ours_text, f"{against} {native_text}", _ratio(ours, native))


def _peer(
    scenario: str, ours: float | None, theirs: float | None, shown: Callable[[float], str] = _s
) -> Row:
    return _versus(scenario, ours, theirs, shown, against="OpenYurt")


def _verbs(counts: dict[str, float]) -> str:
    return ", ".join(f"{verb} {_count(n)}" for verb, n in sorted(counts.items())) or "none"


def _median(replacements: dict[str, Any], stage: str) -> float | None:
    spread = replacements.get("stages_seconds", {}).get(stage)
    return None if spread is None else float(spread["median"])


def _rolling_rows(rolling: dict[str, Any]) -> list[Row]:
    ours, native = rolling["edgerollout"], rolling["native"]
    n = rolling["nodes"]
    rounds = rolling.get("rounds", [])
    mean = f" (mean of {len(rounds)} rounds)" if len(rounds) > 1 else ""
    table = [
        Row(
            f"1 rollout, {n} nodes Ready, max-unavailable {rolling.get('max_unavailable', '10%')}{mean}",
            _s(ours["seconds"]),
            f"native {_s(native['seconds'])} (target ≤ 1.0x)",
            _ratio(ours["seconds"], native["seconds"]),
        )
    ]
    if len(rounds) > 1:
        table.append(
            Row(
                "  each round (" + ", ".join(f"{r['first']} first" for r in rounds) + ")",
                ", ".join(_s(r["edgerollout_seconds"]) for r in rounds),
                "native " + ", ".join(_s(r["native_seconds"]) for r in rounds),
                ", ".join(f"{r['ratio']:.2f}x" for r in rounds),
            )
        )
    ours_parts, native_parts = ours.get("replacements"), native.get("replacements")
    if ours_parts and native_parts:
        table.append(
            _versus(
                "  a replacement: deletion → new pod Ready (median)",
                _median(ours_parts, "deleting_to_ready"),
                _median(native_parts, "deleting_to_ready"),
            )
        )
        table.append(
            _versus(
                "  a freed slot used: replacement Ready → next deletion (median)",
                (ours_parts.get("slot_reuse_seconds") or {}).get("median"),
                (native_parts.get("slot_reuse_seconds") or {}).get("median"),
                _ms,
            )
        )
        table.append(
            _versus(
                f"  nodes unavailable on average (budget {rolling['budget']})",
                ours_parts.get("mean_unavailable"),
                native_parts.get("mean_unavailable"),
                _count,
            )
        )
    closed = [r for r in rounds if "edgerollout_pod_watches_closed" in r]
    if closed:
        table.append(
            Row(
                "  lab: pod watches the API server closed as too slow, each round",
                ", ".join(str(r["edgerollout_pod_watches_closed"]) for r in closed),
                "native " + ", ".join(str(r["native_pod_watches_closed"]) for r in closed),
                "-",
            )
        )
    ours_ds, native_ds = ours.get("daemonset_controller"), native.get("daemonset_controller")
    if ours_ds and native_ds:
        table.append(
            Row(
                "  kube-controller-manager's DaemonSet syncs: skipped as stale / all",
                f"{_count(ours_ds['stale_skips'])} / {_count(ours_ds['syncs'])}",
                f"native {_count(native_ds['stale_skips'])} / {_count(native_ds['syncs'])}",
                _ratio(ours_ds["stale_skips"], native_ds["stale_skips"]),
            )
        )
    if "controller_cpu_seconds" in ours:
        kcm = native["lab_cpu_seconds"].get("kube-controller-manager")
        table.append(
            Row(
                f"5 CPU seconds per {n}-node rollout",
                f"{ours['controller_cpu_seconds']:.1f} s",
                f"native: kube-controller-manager {kcm:.1f} s" if kcm else "-",
                _ratio(ours["controller_cpu_seconds"], kcm),
            )
        )
    lab = rolling["lab"]
    idle = sum(lab.get("idle_cpu_seconds_per_second", {}).values())
    table += [
        _shown(
            f"  lab: one batch of {rolling['budget']} pods deleted by hand → Ready",
            reference=_s(lab["wave_seconds"]),
        ),
        _shown(
            "  lab: CPU of the idle lab (heartbeats, Leases), per second",
            reference=f"{idle:.2f} s/s",
        ),
        _versus(
            "  lab: CPU seconds of the lab's programs during the rollout",
            lab["edgerollout_cpu_seconds"],
            lab["native_cpu_seconds"],
        ),
    ]
    if "controller_cpu_seconds" in ours:
        # What a rollout costs the cluster as a whole (the native controller is part of the lab).
        table.append(
            _versus(
                "  lab and controller: CPU seconds during the rollout",
                round(lab["edgerollout_cpu_seconds"] + ours["controller_cpu_seconds"], 2),
                lab["native_cpu_seconds"],
            )
        )
    if "busy_cores" in ours and "busy_cores" in native:
        table.append(
            _versus(
                f"  machine: cores busy during the rollout (of {lab.get('cores', '?')})",
                ours["busy_cores"],
                native["busy_cores"],
                _count,
            )
        )
    return table


def _peer_rolling_rows(rolling: dict[str, Any]) -> list[Row]:
    """Scenario 1 against OpenYurt's yurt-manager, from the same rounds."""
    ours, theirs = rolling["edgerollout"], rolling[PEER]
    rounds = rolling.get("rounds", [])
    mean = f" (mean of {len(rounds)} rounds)" if len(rounds) > 1 else ""
    table = [
        _peer(
            f"1 rollout, {rolling['nodes']} nodes Ready, against OpenYurt{mean}",
            ours["seconds"],
            theirs["seconds"],
        )
    ]
    if len(rounds) > 1:
        table.append(
            Row(
                "  each round",
                ", ".join(_s(r["edgerollout_seconds"]) for r in rounds),
                "OpenYurt " + ", ".join(_s(r["openyurt_seconds"]) for r in rounds),
                ", ".join(f"{r['peer_ratio']:.2f}x" for r in rounds),
            )
        )
    ours_parts, their_parts = ours.get("replacements"), theirs.get("replacements")
    if ours_parts and their_parts:
        table += [
            _peer(
                "  a replacement: deletion → new pod Ready (median)",
                _median(ours_parts, "deleting_to_ready"),
                _median(their_parts, "deleting_to_ready"),
            ),
            _peer(
                "  a freed slot used: replacement Ready → next deletion (median)",
                (ours_parts.get("slot_reuse_seconds") or {}).get("median"),
                (their_parts.get("slot_reuse_seconds") or {}).get("median"),
                _ms,
            ),
            _peer(
                f"  nodes unavailable on average (budget {rolling['budget']})",
                ours_parts.get("mean_unavailable"),
                their_parts.get("mean_unavailable"),
                _count,
            ),
        ]
    lab = rolling["lab"]
    table += [
        _peer(
            f"5 CPU seconds per {rolling['nodes']}-node rollout: the controller",
            ours.get("controller_cpu_seconds"),
            theirs.get("controller_cpu_seconds"),
        ),
        _peer(
            "  controller RSS after the rollout",
            ours.get("controller_rss_mb"),
            theirs.get("controller_rss_mb"),
            lambda mb: f"{mb:.0f} MB",
        ),
        _peer(
            "  lab: CPU seconds of the lab's programs during the rollout",
            lab["edgerollout_cpu_seconds"],
            lab["openyurt_cpu_seconds"],
        ),
    ]
    return table


def _disconnected_rows(gone: dict[str, Any], rolling: dict[str, Any] | None) -> list[Row]:
    ours, native = gone["edgerollout"], gone["native"]
    n, cut = gone["nodes"], gone["disconnected"]
    connected = n - cut
    table = [
        _shown(
            f"2 {cut} of {n} disconnected: share updated",
            f"{connected}/{n} in {_s(ours['connected_seconds'])}",
            f"native {native['updated']}/{n} after {native['watched_seconds']:.0f} s",
        )
    ]
    if rolling:
        ratio = gone["target_connected_ratio"]
        table.append(
            _within(
                f"2 time to update the {connected} Ready nodes",
                ours["connected_seconds"],
                rolling["edgerollout"]["seconds"] * ratio,
                f"{ratio:g} x scenario 1",
            )
        )
    table.append(
        _within(
            f"2 reconnected {cut}: all updated, after Ready",
            ours["after_ready_seconds"],
            gone.get("target_after_ready_seconds_with_wave", gone["target_after_ready_seconds"]),
            "10 s + one wave",
        )
    )
    if "old_pods_deleted_after_ready_seconds" in ours:
        table.append(
            _shown(
                f"  of which edgerollout: last of the {cut} old pods deleted, after Ready",
                _s(ours["old_pods_deleted_after_ready_seconds"]),
            )
        )
    if "kwok_writes_refused_while_cut" in ours:
        table.append(
            _shown(
                "  lab: cut nodes seen Ready during the cut / KWOK writes refused",
                f"{ours['cut_nodes_seen_ready_while_cut']} / {ours['kwok_writes_refused_while_cut']}",
            )
        )
    theirs = gone.get(PEER)
    if theirs:
        table += [
            _peer(
                f"2 time to update the {connected} Ready nodes, against OpenYurt",
                ours["connected_seconds"],
                theirs["connected_seconds"],
            ),
            _peer(
                f"2 reconnected {cut}: all updated, after Ready, against OpenYurt",
                ours["after_ready_seconds"],
                theirs["after_ready_seconds"],
            ),
        ]
    return table


def _api_rows(api: dict[str, Any]) -> list[Row]:
    ours_total = sum(api["apiserver_pods_by_verb"].values())
    native_total = sum(api["native_apiserver_pods_by_verb"].values())
    table = [
        _target(
            "3 deletes per pod", api["deletes_per_pod"], api["target_deletes_per_pod"], digits=3
        ),
        _shown(
            "3 LISTs / GETs by the controller during the rollout",
            str(api["controller_gets_during_rollout"]),
            "target 0 (watches only, no polling)",
        ),
        _versus(
            "3 pod requests served by the API server (all clients)",
            ours_total,
            native_total,
            _count,
        ),
    ]
    if "openyurt_apiserver_pods_by_verb" not in api:
        return table
    ours_verbs, their_verbs = api["apiserver_pods_by_verb"], api["openyurt_apiserver_pods_by_verb"]
    return [
        *table,
        _peer(
            "3 pod deletes per pod, from the audit log, against OpenYurt",
            api["audited_deletes_per_pod"],
            api["openyurt_deletes_per_pod"],
            lambda n: f"{n:.3f}",
        ),
        _peer(
            "3 pod requests served by the API server (all clients), against OpenYurt",
            ours_total,
            sum(their_verbs.values()),
            _count,
        ),
        _shown(
            "  by verb",
            _verbs(ours_verbs),
            "native " + _verbs(api["native_apiserver_pods_by_verb"]),
        ),
        _shown("  by verb", _verbs(ours_verbs), "OpenYurt " + _verbs(their_verbs)),
        _shown(
            "  the controller's own requests, by method",
            _verbs(api["controller_requests_by_method"]),
            "OpenYurt " + _verbs(api["openyurt_controller_requests_by_method"]),
        ),
    ]


def _ota_rows(ota: dict[str, Any]) -> list[Row]:
    table = [
        _target(
            f"4 OTA: every pod PodNeedUpgrade=True ({ota['nodes']} pods)",
            ota["seconds"],
            ota["target_seconds"],
            unit=" s",
        ),
        _target(
            "4 OTA: API writes per pod",
            ota["writes_per_pod"],
            ota["target_writes_per_pod"],
            digits=3,
            upper_bound=False,
        ),
    ]
    theirs = ota.get(PEER)
    if theirs:
        table += [
            _peer(
                "4 OTA: every pod PodNeedUpgrade=True, against OpenYurt",
                ota["seconds"],
                theirs["seconds"],
            ),
            _peer(
                "4 OTA: API writes per pod, against OpenYurt",
                ota["writes_per_pod"],
                theirs["writes_per_pod"],
                lambda n: f"{n:.3f}",
            ),
        ]
    return table


MIX_TARGET_RSS_MB = 150  # the goal at 10,000 nodes x 30 pods (docs/scale.md)


def _mix_rows(mixed: dict[str, Any]) -> list[Row]:
    if "with_deployment" not in mixed:  # the opted-in DaemonSets only
        alone = mixed["daemonsets_alone"]
        return [
            _target(
                f"8 controller RSS, {mixed['nodes']} nodes, opted-in pods only",
                alone["rss_mb"],
                MIX_TARGET_RSS_MB,
                unit=" MB",
                digits=0,
            ),
            _shown(
                "8 pods cached (opted-in DaemonSets')",
                f"{alone['cached'].get('pods', 0)} / {mixed['pods']}",
            ),
            _shown("8 controller ready after start", f"{alone['ready_seconds']:.1f} s"),
        ]
    alone, with_deployment, churn = (
        mixed["daemonsets_alone"],
        mixed["with_deployment"],
        mixed["churn"],
    )
    mix = f"{mixed['nodes']} nodes, 30 pods each"
    return [
        Row(
            f"8 controller RSS, {mix}",
            f"{with_deployment['rss_mb']:.0f} MB",
            f"DaemonSets' pods alone {alone['rss_mb']:.0f} MB",
            _ratio(with_deployment["rss_mb"], alone["rss_mb"]),
        ),
        _shown(
            "8 pods cached (opted-in DaemonSets' / all)",
            f"{with_deployment['cached'].get('pods', 0)} / {mixed['pods']}",
        ),
        _shown("8 controller ready after start", f"{with_deployment['ready_seconds']:.1f} s"),
        _target(
            f"8 controller CPU, {churn['rate_achieved']:.0f} other pods' changes/s",
            churn["controller_cpu_share"] * 100,
            mixed["target_cpu_share"] * 100,
            unit=" % of a core",
            digits=1,
        ),
    ]


def _dashboard_rows(page: dict[str, Any]) -> list[Row]:
    """Scenario 9: the page's times against `status`'s of the same rollout."""
    status = page["status_best_seconds"]
    reference = f"status {_ms(status)}"
    first = page["page_first_drawing_best_seconds"]
    table = [
        Row(
            f"9 dashboard page drawn, {page['nodes']} nodes (best of {len(page['page_loads'])})",
            _ms(first),
            reference,
            _ratio(first, status),
        )
    ]
    median = page["redraw_median_seconds"]
    if median is not None:
        table += [
            Row(
                f"9 dashboard redraw of an update (median of {len(page['redraw_ms'])})",
                _ms(median),
                reference,
                _ratio(median, status),
            ),
            _shown("9 dashboard redraw, slowest", _ms(page["redraw_slowest_seconds"])),
        ]
    table.append(
        _shown("9 dashboard server RSS, largest", f"{page['server_rss_mb_largest']:.0f} MB")
    )
    return table


def rows(results: dict[str, Any]) -> list[Row]:
    scenarios = results.get("scenarios", {})
    table: list[Row] = []
    rolling = scenarios.get("rolling")
    if rolling:
        table += _rolling_rows(rolling)
        if PEER in rolling:
            table += _peer_rolling_rows(rolling)
    gone = scenarios.get("disconnected")
    if gone:
        table += _disconnected_rows(gone, rolling)
    api = scenarios.get("api_load")
    if api:
        table += _api_rows(api)
    ota = scenarios.get("ota")
    if ota:
        table += _ota_rows(ota)
    footprint = scenarios.get("footprint")
    if footprint:
        table += [
            _target(
                f"5 controller RSS, {point['pods']} pods cached",
                point["rss_mb"],
                footprint["target_rss_mb_at_10000"],
                unit=" MB",
                digits=0,
                at=" at 10,000",
            )
            for point in footprint["points"]
        ]
    mixed = scenarios.get("mix")
    if mixed:
        table += _mix_rows(mixed)
    agent = scenarios.get("agent")
    if agent:
        get = agent["get_pods"]
        table += [
            _shown(
                f"6 agent GET /pods p50 ({agent['pods_served']} pods, {get['rate_per_second']:.0f}/s)",
                f"{get['p50_ms']:.1f} ms",
            ),
            _target("6 agent GET /pods p99", get["p99_ms"], agent["target_p99_ms"], unit=" ms"),
            _shown(
                "6 agent upgrade → pod deleted (median)",
                f"{agent['upgrade']['median_deletion_seen_ms']:.0f} ms",
            ),
        ]
    page = scenarios.get("dashboard")
    if page:
        table += _dashboard_rows(page)
    slow = scenarios.get("slow-link")
    if slow:
        with_pull = slow["ota_with_imagepull"]["downtime_seconds"]
        without = slow["ota_without_imagepull"]["downtime_seconds"]
        link = (
            f"{slow['payload_bytes'] / 1e6:.0f} MB layer, "
            f"{slow['link_rate_bytes_per_second'] / 1e6:g} MB/s link"
        )
        table += [
            Row(
                f"7 OTA downtime, imagepull first ({link})",
                _s(with_pull),
                f"upgrade without imagepull {_s(without)}",
                _ratio(with_pull, without),
            ),
            _shown(
                "7 AdvancedRollingUpdate downtime (reference)",
                _s(slow["advanced_rolling_update"]["downtime_seconds"]),
            ),
        ]
        first = slow.get("advanced_rolling_update_with_prepull")
        if first:  # results from before pre-pull before delete have no such row
            advanced = slow["advanced_rolling_update"]["downtime_seconds"]
            pull = _s(first["prepull_seconds"])
            table.append(
                Row(
                    f"7 AdvancedRollingUpdate downtime, prepull first (pull {pull})",
                    _s(first["downtime_seconds"]),
                    f"without prepull {_s(advanced)}",
                    _ratio(first["downtime_seconds"], advanced),
                )
            )
        windowed = slow.get("advanced_rolling_update_in_window")
        if windowed:  # results from before the download window have no such row
            advanced = slow["advanced_rolling_update"]["downtime_seconds"]
            table.append(
                Row(
                    "7 AdvancedRollingUpdate, pulled in a download window: downtime "
                    f"(time in the maintenance window {_s(windowed['window_seconds'])})",
                    _s(windowed["downtime_seconds"]),
                    f"without prepull {_s(advanced)}",
                    _ratio(windowed["downtime_seconds"], advanced),
                )
            )
    return table


def header(results: dict[str, Any]) -> tuple[str, str, str, str]:
    """The table's header: its reference column names the peer when the run had one."""
    rolling = results.get("scenarios", {}).get("rolling") or {}
    return PEER_HEADER if PEER in rolling or results.get("options", {}).get("peer") else HEADER


def render(
    table: list[Row], *, markdown: bool = False, head: tuple[str, str, str, str] = HEADER
) -> str:
    lines = [head, *((r.scenario, r.edgerollout, r.reference, r.ratio) for r in table)]
    if markdown:
        out = ["| " + " | ".join(head) + " |", "|---|---|---|---|"]
        out += ["| " + " | ".join(line) + " |" for line in lines[1:]]
        return "\n".join(out)
    widths = [max(len(line[i]) for line in lines) for i in range(4)]
    return "\n".join(
        " · ".join(cell.ljust(widths[i]) for i, cell in enumerate(line)).rstrip() for line in lines
    )


def write(results: dict[str, Any], folder: Path, name: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.json"
    path.write_text(json.dumps(results, indent=1) + "\n")
    return path
