"""The results file and the table: scenario · edgerollout · reference (native or target) · ratio."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HEADER = ("scenario", "edgerollout", "reference (native or target)", "ratio")


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


def rows(results: dict[str, Any]) -> list[Row]:
    scenarios = results.get("scenarios", {})
    table: list[Row] = []
    rolling = scenarios.get("rolling")
    if rolling:
        ours, native = rolling["edgerollout"], rolling["native"]
        n = rolling["nodes"]
        table.append(
            Row(
                f"1 rollout, {n} nodes Ready, max-unavailable 10%",
                _s(ours["seconds"]),
                f"native {_s(native['seconds'])} (target ≤ 1.0x)",
                _ratio(ours["seconds"], native["seconds"]),
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
        table.append(
            Row(
                f"  lab: one batch of {rolling['budget']} pods deleted by hand → Ready",
                "-",
                _s(lab["wave_seconds"]),
                "-",
            )
        )
        idle = sum(lab.get("idle_cpu_seconds_per_second", {}).values())
        table.append(
            Row(
                "  lab: CPU of the idle lab (heartbeats, Leases), per second",
                "-",
                f"{idle:.2f} s/s",
                "-",
            )
        )
        table.append(
            Row(
                "  lab: CPU seconds of the lab's programs during the rollout",
                f"{lab['edgerollout_cpu_seconds']:.1f} s",
                f"native {lab['native_cpu_seconds']:.1f} s",
                _ratio(lab["edgerollout_cpu_seconds"], lab["native_cpu_seconds"]),
            )
        )
    gone = scenarios.get("disconnected")
    if gone:
        ours, native = gone["edgerollout"], gone["native"]
        n, cut = gone["nodes"], gone["disconnected"]
        connected = n - cut
        table.append(
            Row(
                f"2 {cut} of {n} disconnected: share updated",
                f"{connected}/{n} in {_s(ours['connected_seconds'])}",
                f"native {native['updated']}/{n} after {native['watched_seconds']:.0f} s",
                "-",
            )
        )
        if rolling:
            limit = rolling["edgerollout"]["seconds"] * gone["target_connected_ratio"]
            table.append(
                Row(
                    f"2 time to update the {connected} Ready nodes",
                    _s(ours["connected_seconds"]),
                    f"target 1.1 x scenario 1 = {_s(limit)}",
                    _ratio(ours["connected_seconds"], limit),
                )
            )
        limit = gone.get("target_after_ready_seconds_with_wave", gone["target_after_ready_seconds"])
        table.append(
            Row(
                f"2 reconnected {cut}: all updated, after Ready",
                _s(ours["after_ready_seconds"]),
                f"target 10 s + one wave = {_s(limit)}",
                _ratio(ours["after_ready_seconds"], limit),
            )
        )
        if "old_pods_deleted_after_ready_seconds" in ours:
            table.append(
                Row(
                    f"  of which edgerollout: last of the {cut} old pods deleted, after Ready",
                    _s(ours["old_pods_deleted_after_ready_seconds"]),
                    "-",
                    "-",
                )
            )
    api = scenarios.get("api_load")
    if api:
        table.append(
            Row(
                "3 deletes per pod",
                f"{api['deletes_per_pod']:.3f}",
                f"target ≤ {api['target_deletes_per_pod']}",
                _ratio(api["deletes_per_pod"], api["target_deletes_per_pod"]),
            )
        )
        table.append(
            Row(
                "3 LISTs / GETs by the controller during the rollout",
                str(api["controller_gets_during_rollout"]),
                "target 0 (watches only, no polling)",
                "-",
            )
        )
        ours_total = sum(api["apiserver_pods_by_verb"].values())
        native_total = sum(api["native_apiserver_pods_by_verb"].values())
        table.append(
            Row(
                "3 pod requests served by the API server (all clients)",
                str(ours_total),
                f"native {native_total}",
                _ratio(ours_total, native_total),
            )
        )
    ota = scenarios.get("ota")
    if ota:
        table.append(
            Row(
                f"4 OTA: every pod PodNeedUpgrade=True ({ota['nodes']} pods)",
                _s(ota["seconds"]),
                f"target ≤ {_s(ota['target_seconds'])}",
                _ratio(ota["seconds"], ota["target_seconds"]),
            )
        )
        table.append(
            Row(
                "4 OTA: API writes per pod",
                f"{ota['writes_per_pod']:.3f}",
                f"target {ota['target_writes_per_pod']}",
                _ratio(ota["writes_per_pod"], ota["target_writes_per_pod"]),
            )
        )
    footprint = scenarios.get("footprint")
    if footprint:
        table.extend(
            Row(
                f"5 controller RSS, {point['pods']} pods cached",
                f"{point['rss_mb']:.0f} MB",
                f"target ≤ {footprint['target_rss_mb_at_10000']:.0f} MB at 10,000",
                _ratio(point["rss_mb"], footprint["target_rss_mb_at_10000"]),
            )
            for point in footprint["points"]
        )
    agent = scenarios.get("agent")
    if agent:
        get = agent["get_pods"]
        table.append(
            Row(
                f"6 agent GET /pods p50 ({agent['pods_served']} pods, {get['rate_per_second']:.0f}/s)",
                f"{get['p50_ms']:.1f} ms",
                "-",
                "-",
            )
        )
        table.append(
            Row(
                "6 agent GET /pods p99",
                f"{get['p99_ms']:.1f} ms",
                f"target ≤ {agent['target_p99_ms']:.0f} ms",
                _ratio(get["p99_ms"], agent["target_p99_ms"]),
            )
        )
        table.append(
            Row(
                "6 agent upgrade → pod deleted (median)",
                f"{agent['upgrade']['median_deletion_seen_ms']:.0f} ms",
                "-",
                "-",
            )
        )
    return table


def render(table: list[Row], *, markdown: bool = False) -> str:
    lines = [HEADER, *((r.scenario, r.edgerollout, r.reference, r.ratio) for r in table)]
    if markdown:
        out = ["| " + " | ".join(HEADER) + " |", "|---|---|---|---|"]
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
