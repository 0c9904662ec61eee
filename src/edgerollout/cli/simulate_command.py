"""`edgerollout simulate`: how a rollout of this DaemonSet would go on a fleet like this one.

A what-if: the DaemonSet (a manifest file, or read from the cluster) with its real annotations
is rolled out over a simulated fleet (a fleet file, docs/simulation.md), every deletion decided
by the controller's own planner (`edgerollout.simulation`). Nothing in the cluster is changed;
with `--from-cluster` the cluster's Nodes give the fleet its size and pools.

This module does the reading and the printing: the fleet file's YAML, the manifest's YAML or
JSON, the cluster, the table, the JSON document and the plot.

Exit codes: 0 printed; 2 usage error, a fleet file or manifest that cannot be used, or `--plot`
without matplotlib; 3 DaemonSet not found; 4 the API server cannot be reached or refuses;
130 interrupted (`daemonset_command`).
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import NoReturn

import click
import yaml

from edgerollout.cli.daemonset_command import connect, read_daemonset, run_daemonset_command
from edgerollout.kube.api import NODES, Api
from edgerollout.kube.views import JSON, daemonset_from_api
from edgerollout.simulation.engine import Rollout, simulate
from edgerollout.simulation.fleet import Fleet, FleetError, read_fleet
from edgerollout.simulation.outcome import PERCENTS, Outcome

EXIT_USAGE = 2
PLOT_NEEDS = "--plot needs matplotlib: pip install 'edgerollout[plot]'"


class Unusable(Exception):
    """An input the simulation cannot take; the message says which and why."""


def read_fleet_file(path: str | None) -> Fleet:
    """The fleet a fleet file describes (no file: the default fleet)."""
    if path is None:
        return Fleet()
    try:
        raw = yaml.safe_load(Path(path).read_text())
    except (OSError, yaml.YAMLError) as error:
        raise Unusable(f"{path}: cannot read it as YAML: {error}") from None
    try:
        return read_fleet(raw)
    except FleetError as error:
        raise Unusable(f"{path}: {error}") from None


def read_manifest(path: Path) -> JSON:
    """The DaemonSet of a manifest file (YAML or JSON; the first DaemonSet of several documents
    or of a List)."""
    try:
        documents = list(yaml.safe_load_all(path.read_text()))
    except (OSError, yaml.YAMLError) as error:
        raise Unusable(f"{path}: cannot read it as YAML or JSON: {error}") from None
    for document in documents:
        items = document.get("items") if isinstance(document, dict) else None
        for candidate in [document, *(items if isinstance(items, list) else [])]:
            if isinstance(candidate, dict) and candidate.get("kind") == "DaemonSet":
                return candidate
    raise Unusable(f"{path}: holds no DaemonSet (kind: DaemonSet)")


def rollout_of(manifest: JSON) -> Rollout:
    """The rollout to its own template of a DaemonSet whose pods run an older one; the revision
    hashes are made from the template, as the native controller makes them."""
    cached = daemonset_from_api(manifest)
    template = (manifest.get("spec") or {}).get("template") or {}
    digest = hashlib.sha256(json.dumps(template, sort_keys=True).encode()).hexdigest()
    containers = (template.get("spec") or {}).get("containers") or [{}]
    return Rollout(
        daemonset=cached.view,
        container=str(containers[0].get("name") or "app"),
        old_hash=hashlib.sha256(f"before {digest}".encode()).hexdigest()[:10],
        new_hash=digest[:10],
    )


async def cluster_pools(api: Api, fleet: Fleet) -> Fleet:
    """`fleet` with the cluster's node count and pools: one pool per value of the pool label
    (nodes without it in pool "unlabelled"), weighted by its nodes, each pool's link and
    outages those of the fleet's pool of that name, else of its first pool."""
    values: Counter[str] = Counter()
    token: str | None = None
    while True:
        page = await api.list(NODES, continue_token=token)
        for node in page.items:
            labels = (node.get("metadata") or {}).get("labels") or {}
            values[str(labels.get(fleet.pool_label) or "unlabelled")] += 1
        token = page.continue_token
        if token is None:
            break
    known = {pool.name: pool for pool in fleet.pools}
    pools = tuple(
        replace(known.get(name, fleet.pools[0]), name=name, weight=float(count))
        for name, count in sorted(values.items())
    )
    return replace(fleet, nodes=sum(values.values()), pools=pools or fleet.pools)


def render_table(outcome: Outcome, rollout: Rollout, fleet: Fleet) -> str:
    """A short summary for a person."""
    ds = rollout.daemonset
    strategy = ds.annotations.get("apps.openyurt.io/update-strategy", "none")
    reached = "   ".join(
        f"{percent}% {_duration(outcome.time_to[str(percent)])}" for percent in PERCENTS
    )
    status = "finished" if outcome.finished else "not finished"
    lines = [
        f"DaemonSet {ds.namespace}/{ds.name} ({strategy}) on {outcome.nodes} simulated nodes, "
        f"seed {fleet.seed}",
        f"{status} after {_duration(outcome.end)}: {outcome.reason}",
        f"new revision on     {reached}  (of {outcome.ever_online} nodes ever online)",
        f"downtime per node   p50 {_duration(outcome.downtime_p50)}   "
        f"p99 {_duration(outcome.downtime_p99)}",
        f"peak unavailable    {outcome.peak_unavailable} "
        f"(max-unavailable {'-' if outcome.max_unavailable is None else outcome.max_unavailable})",
        f"never updated       {outcome.never_updated} ({outcome.always_offline} never online, "
        f"{outcome.broken} crash-looping)",
        f"pulled over WAN     {outcome.pulled_bytes / 1e9:.1f} GB",
        f"planner calls       {outcome.planner_calls}",
    ]
    lines.extend(f"warning: {message}" for message in outcome.notices)
    return "\n".join(lines) + "\n"


def _duration(seconds: float | None) -> str:
    """90061 s as 1d1h1m1s (never: "-")."""
    if seconds is None:
        return "-"
    left = round(seconds)
    parts = []
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if left >= size:
            parts.append(f"{left // size}{unit}")
            left %= size
    if left or not parts:
        parts.append(f"{left}s")
    return "".join(parts)


def plot(outcome: Outcome, path: str) -> None:
    """The time series as a PNG (matplotlib, imported here: it is an optional extra)."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot

    hours = [sample.at / 3600 for sample in outcome.series]
    figure, axes = pyplot.subplots(figsize=(10, 5))
    for name in ("updated", "unavailable", "offline", "broken"):
        axes.plot(hours, [getattr(sample, name) for sample in outcome.series], label=name)
    axes.set_xlabel("hours since the rollout started")
    axes.set_ylabel("nodes")
    axes.set_title(f"simulated rollout over {outcome.nodes} nodes")
    axes.legend()
    axes.grid(alpha=0.3)
    figure.savefig(path, dpi=100, bbox_inches="tight")
    pyplot.close(figure)


def _has_matplotlib() -> bool:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


async def _run(
    *,
    manifest: JSON | None,
    daemonset: str,
    namespace: str,
    kubeconfig: str | None,
    fleet: Fleet,
    from_cluster: bool,
    nodes: int | None,
    output: str,
    plot_to: str | None,
) -> int:
    api = None
    try:
        if manifest is None:
            api = await connect(kubeconfig)
            manifest = await read_daemonset(api, name=daemonset, namespace=namespace)
        if from_cluster:
            api = api or await connect(kubeconfig)
            fleet = await cluster_pools(api, fleet)
    finally:
        if api is not None:
            await api.close()
    if nodes is not None:
        fleet = replace(fleet, nodes=nodes)
    rollout = rollout_of(manifest)
    outcome = simulate(rollout, fleet)
    if output == "json":
        click.echo(json.dumps(outcome.as_json()))
    else:
        click.echo(render_table(outcome, rollout, fleet), nl=False)
    if plot_to is not None:
        plot(outcome, plot_to)
    return 0


@click.command(name="simulate")
@click.option(
    "--daemonset",
    required=True,
    metavar="FILE|NAME",
    help="A DaemonSet manifest (YAML or JSON); if no such file, the DaemonSet NAME in the cluster.",
)
@click.option("-n", "--namespace", default="default", show_default=True)
@click.option(
    "--fleet",
    "fleet_file",
    type=click.Path(exists=True, dir_okay=False),
    default=None,
    help="The fleet file (docs/simulation.md); default: 1,000 Ready nodes in one pool.",
)
@click.option("--nodes", type=click.IntRange(min=0), default=None, help="Overrides the fleet's.")
@click.option("--seed", type=int, default=None, help="Overrides the fleet's.")
@click.option(
    "-o", "--output", type=click.Choice(["table", "json"]), default="table", show_default=True
)
@click.option(
    "--plot", "plot_to", type=click.Path(dir_okay=False), default=None, help="Write a PNG."
)
@click.option(
    "--from-cluster",
    is_flag=True,
    help="Take the node count and pools from the cluster's Nodes (the fleet's pool_label).",
)
@click.option(
    "--kubeconfig",
    type=click.Path(exists=True, dir_okay=False),
    default=None,
    help="Kubeconfig to use (default: in-cluster, then ~/.kube/config).",
)
def simulate_command(
    daemonset: str,
    namespace: str,
    fleet_file: str | None,
    nodes: int | None,
    seed: int | None,
    output: str,
    plot_to: str | None,
    from_cluster: bool,
    kubeconfig: str | None,
) -> None:
    """Simulate a rollout of a DaemonSet over a fleet, every deletion decided by the
    controller's planner, and print how long it takes and what it costs. Nothing is changed.

    Exits 0 once printed, 2 on a usage error or an input that cannot be used, 3 when the
    DaemonSet does not exist, 4 when the API server cannot be reached or refuses, 130 when
    interrupted.
    """
    try:
        fleet = read_fleet_file(fleet_file)
    except Unusable as error:
        _refuse(str(error))
    if seed is not None:
        fleet = replace(fleet, seed=seed)
    if plot_to is not None and not _has_matplotlib():
        _refuse(PLOT_NEEDS)
    manifest = None
    if Path(daemonset).is_file():
        try:
            manifest = read_manifest(Path(daemonset))
        except Unusable as error:
            _refuse(str(error))

    async def work() -> int:
        return await _run(
            manifest=manifest,
            daemonset=daemonset,
            namespace=namespace,
            kubeconfig=kubeconfig,
            fleet=fleet,
            from_cluster=from_cluster,
            nodes=nodes,
            output=output,
            plot_to=plot_to,
        )

    run_daemonset_command(work, daemonset=daemonset, namespace=namespace)


def _refuse(message: str) -> NoReturn:
    click.echo(f"error: {message}", err=True)
    raise SystemExit(EXIT_USAGE)
