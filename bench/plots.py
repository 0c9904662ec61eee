"""PNG plots of a results file: nodes updated over time (ours against native, and against
OpenYurt's yurt-manager when the run had the peer), the API server's pod requests of each rollout
by verb (with the peer), and how the controller's memory grows with the number of pods it caches."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

DPI = 72
SIZE = (7.0, 3.8)
PEER = "openyurt"


def _step(axes: Any, curve: list[list[float]], label: str, **style: Any) -> None:
    if curve:
        xs, ys = zip(*curve, strict=True)
        axes.step(xs, ys, where="post", label=label, **style)


def held_until(curve: list[list[float]], end: float) -> list[list[float]]:
    """The step curve drawn on to `end`: its last value holds until the watch ended (a curve
    that never moved is a single point, which draws nothing)."""
    if not curve or curve[-1][0] >= end:
        return curve
    return [*curve, [end, curve[-1][1]]]


def rolling(result: dict[str, Any], path: Path) -> Path:
    """The first round's curves (a record of several rounds keeps those), timed as that round."""
    figure, axes = plt.subplots(figsize=SIZE)
    rounds = result.get("rounds") or []
    native = rounds[0]["native_seconds"] if rounds else result["native"]["seconds"]
    ours = rounds[0]["edgerollout_seconds"] if rounds else result["edgerollout"]["seconds"]
    when = ", round 1" if len(rounds) > 1 else ""
    _step(axes, result["native"]["curve"], f"native RollingUpdate ({native:.1f} s{when})")
    _step(
        axes,
        result["edgerollout"]["curve"],
        f"edgerollout AdvancedRollingUpdate ({ours:.1f} s{when})",
    )
    if PEER in result:
        theirs = rounds[0]["openyurt_seconds"] if rounds else result[PEER]["seconds"]
        _step(
            axes,
            result[PEER]["curve"],
            f"OpenYurt AdvancedRollingUpdate ({theirs:.1f} s{when})",
        )
    axes.set(
        title=f"Scenario 1: {result['nodes']} nodes, max-unavailable {result['max_unavailable']}",
        xlabel="seconds after the image change",
        ylabel="nodes updated and Ready",
    )
    axes.legend(loc="lower right")
    axes.grid(alpha=0.3)
    return _save(figure, path)


def disconnected(result: dict[str, Any], path: Path) -> Path:
    figure, axes = plt.subplots(figsize=SIZE)
    ours, native = result["edgerollout"], result["native"]
    watched = native["watched_seconds"]
    _step(
        axes,
        held_until(native["curve"], watched),
        f"native RollingUpdate ({native['updated']} updated in {watched:.0f} s)",
    )
    _step(axes, ours["curve"], "edgerollout AdvancedRollingUpdate")
    axes.axvline(
        ours["reconnected_at"], color="grey", linestyle="--", label="reconnect (edgerollout)"
    )
    axes.axvline(ours["ready_at"], color="grey", linestyle=":", label="reconnected nodes Ready")
    theirs = result.get(PEER)
    if theirs:
        _step(axes, theirs["curve"], "OpenYurt AdvancedRollingUpdate (a cut of its own)")
        axes.axvline(
            theirs["reconnected_at"],
            color="tab:green",
            linestyle="--",
            label="reconnect (OpenYurt)",
        )
    axes.set(
        title=f"Scenario 2: {result['disconnected']} of {result['nodes']} nodes disconnected",
        xlabel="seconds after each rollout's image change",
        ylabel="nodes updated and Ready",
    )
    axes.legend(loc="center right", fontsize="small")
    axes.grid(alpha=0.3)
    return _save(figure, path)


def api_load(api: dict[str, Any], path: Path) -> Path:
    """The pod requests the API server served during each controller's rollout (every client:
    the controller, the native DaemonSet controller's re-creations, the scheduler, KWOK), by verb,
    in groups of bars side by side."""
    figure, axes = plt.subplots(figsize=SIZE)
    series = {
        "native RollingUpdate": api["native_apiserver_pods_by_verb"],
        "edgerollout": api["apiserver_pods_by_verb"],
        "OpenYurt": api["openyurt_apiserver_pods_by_verb"],
    }
    verbs = sorted({verb for counts in series.values() for verb in counts})
    width = 0.8 / len(series)
    for index, (label, counts) in enumerate(series.items()):
        xs = [at + (index - (len(series) - 1) / 2) * width for at in range(len(verbs))]
        axes.bar(xs, [counts.get(verb, 0) for verb in verbs], width=width, label=label)
    axes.set_xticks(range(len(verbs)), verbs)
    axes.set(
        title=f"Scenario 3: pod requests served during a {api['nodes']}-node rollout",
        xlabel="verb",
        ylabel="requests (mean of the rounds)",
    )
    axes.legend(loc="upper right", fontsize="small")
    axes.grid(alpha=0.3, axis="y")
    return _save(figure, path)


def footprint(result: dict[str, Any], path: Path) -> Path:
    figure, axes = plt.subplots(figsize=SIZE)
    points = result["points"]
    axes.plot([p["pods"] for p in points], [p["rss_mb"] for p in points], marker="o", label="RSS")
    axes.axhline(
        result["target_rss_mb_at_10000"], color="red", linestyle="--", label="target at 10,000"
    )
    axes.set(
        title="Scenario 5: controller memory by pods cached",
        xlabel="nodes (one pod each) in the controller's caches",
        ylabel="RSS, MB",
    )
    twin = axes.twinx()
    twin.plot(
        [p["pods"] for p in points],
        [p["startup_cpu_seconds"] for p in points],
        marker="s",
        color="tab:green",
        label="CPU s to list and cache",
    )
    twin.set_ylabel("CPU seconds at start-up")
    handles = axes.get_legend_handles_labels()
    twin_handles = twin.get_legend_handles_labels()
    axes.legend(handles[0] + twin_handles[0], handles[1] + twin_handles[1], loc="upper left")
    axes.grid(alpha=0.3)
    return _save(figure, path)


def _save(figure: Any, path: Path) -> Path:
    figure.tight_layout()
    figure.savefig(path, dpi=DPI)
    plt.close(figure)
    return path


def write_all(results: dict[str, Any], folder: Path, name: str) -> list[Path]:
    scenarios = results.get("scenarios", {})
    written = []
    if "rolling" in scenarios:
        written.append(rolling(scenarios["rolling"], folder / f"{name}-rolling.png"))
    if "openyurt_apiserver_pods_by_verb" in scenarios.get("api_load", {}):
        written.append(api_load(scenarios["api_load"], folder / f"{name}-api-load.png"))
    if "disconnected" in scenarios:
        written.append(disconnected(scenarios["disconnected"], folder / f"{name}-disconnected.png"))
    if "footprint" in scenarios:
        written.append(footprint(scenarios["footprint"], folder / f"{name}-footprint.png"))
    return written
