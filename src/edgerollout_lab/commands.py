"""`python -m edgerollout_lab ...` (`./dev lab ...`): build, start, cut, restore and stop the local
real control plane, play the demo on it, and render deploy/base from the Helm chart."""

from __future__ import annotations

from pathlib import Path

import click

from edgerollout_lab import (
    build,
    chart,
    cluster,
    images,
    link,
    packages,
    product_image,
    screenshot,
)
from edgerollout_lab.build import BuildError
from edgerollout_lab.demo_command import demo
from edgerollout_lab.kwok_stages import MIN_NODE_LEASE_SECONDS, NODE_LEASE_SECONDS
from edgerollout_lab.processes import ComponentError
from edgerollout_lab.versions import LAB_SETS, PEERS

DEFAULT_DIR = Path(".edgerollout-lab")

dir_option = click.option(
    "--dir",
    "folder",
    type=click.Path(file_okay=False, path_type=Path),
    default=DEFAULT_DIR,
    show_default=True,
    help="The lab's folder (lab.json, kubeconfigs, logs).",
)


def _say(message: str) -> None:
    click.echo(message, err=True)


def _fail(error: Exception) -> click.ClickException:
    return click.ClickException(str(error))


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def lab() -> None:
    """A local Kubernetes control plane with simulated edge nodes (no Docker needed)."""


@lab.command("build")
@click.option(
    "--peer",
    "peers",
    type=click.Choice(sorted(PEERS)),
    multiple=True,
    help="Also build this controller edgerollout is compared with (not needed by the tests).",
)
def build_command(peers: tuple[str, ...]) -> None:
    """Build etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok, helm and
    gitops-health (once)."""
    for build_set in (*LAB_SETS, *(PEERS[name] for name in peers)):
        try:
            report = build.build_all(_say, build_set)
        except BuildError as error:
            raise _fail(error) from error
        if report.built:
            _say(f"built {', '.join(report.built)} in {report.seconds:.0f} s")


@lab.command("up")
@click.option("--nodes", type=click.IntRange(min=1), default=3, show_default=True)
@click.option(
    "--agents",
    is_flag=True,
    help="Also run an edgerollout agent per node (a process each: meant for small labs).",
)
@click.option(
    "--node-lease-seconds",
    type=click.IntRange(min=MIN_NODE_LEASE_SECONDS),
    default=NODE_LEASE_SECONDS,
    show_default=True,
    help="The nodes' Lease duration, renewed every quarter of it; a node is NotReady 5/4 of it "
    "after its last renewal. 40 is a production kubelet's (NotReady after 50 s), 8 shows a cut "
    "link within seconds.",
)
@click.option(
    "--real-nodes",
    type=click.IntRange(min=0, max=50),
    default=0,
    show_default=True,
    help="Also run real nodes real-1 ... real-N: a kubelet and containerd each, pulling the "
    "lab's own images from its registry (root, Linux; installs the Debian packages it needs).",
)
@click.option(
    "--link-rate",
    default="unlimited",
    show_default=True,
    help="With real nodes: how fast each pulls images through its link, e.g. 2MB/s.",
)
@click.option(
    "--payload-mb",
    type=click.IntRange(min=0),
    default=1,
    show_default=True,
    help="With real nodes: the size of each workload image's payload layer, in MiB.",
)
@click.option(
    "--fleet",
    is_flag=True,
    help="A lab of thousands of nodes: Leases of an hour (a node is never NotReady on its own) "
    "instead of --node-lease-seconds, and `lab disconnect` marks the cut nodes NotReady and their "
    "pods not Ready, as the node lifecycle controller would.",
)
@dir_option
def up_command(
    nodes: int,
    agents: bool,
    node_lease_seconds: int,
    fleet: bool,
    real_nodes: int,
    link_rate: str,
    payload_mb: int,
    folder: Path,
) -> None:
    """Start the lab; prints the admin kubeconfig's path when every node is Ready."""
    try:
        rate = link.parse_rate(link_rate)
    except ValueError as error:
        raise click.BadParameter(str(error), param_hint="--link-rate") from None
    try:
        build.build_all(_say)
        started = cluster.up(
            folder,
            nodes=nodes,
            say=_say,
            agents=agents,
            node_lease_seconds=node_lease_seconds,
            real_nodes=real_nodes,
            payload_bytes=payload_mb << 20,
            link_rate=rate,
            fleet=fleet,
        )
    except (BuildError, ComponentError, cluster.LabError, TimeoutError) as error:
        raise _fail(error) from error
    click.echo(started.kubeconfig)


@lab.command("down")
@dir_option
def down_command(folder: Path) -> None:
    """Stop everything the lab started."""
    cluster.down(folder, say=_say)


@lab.command("disconnect")
@click.argument("nodes", nargs=-1, required=True)
@dir_option
def disconnect_command(nodes: tuple[str, ...], folder: Path) -> None:
    """Cut NODES' links to the API server (they go NotReady after the grace period)."""
    try:
        cluster.disconnect(folder, list(nodes))
    except (cluster.LabError, ComponentError) as error:
        raise _fail(error) from error
    _say(f"disconnected {', '.join(nodes)}")


@lab.command("connect")
@click.argument("nodes", nargs=-1, required=True)
@dir_option
def connect_command(nodes: tuple[str, ...], folder: Path) -> None:
    """Restore NODES' links (heartbeats and pod readiness come back)."""
    try:
        cluster.connect(folder, list(nodes))
    except (cluster.LabError, ComponentError) as error:
        raise _fail(error) from error
    _say(f"connected {', '.join(nodes)}")


@lab.command("link-rate")
@click.argument("node")
@click.argument("rate")
@dir_option
def link_rate_command(node: str, rate: str, folder: Path) -> None:
    """Pace real NODE's image pulls at RATE (e.g. 2MB/s, 500KB/s, unlimited)."""
    try:
        parsed = link.parse_rate(rate)
    except ValueError as error:
        raise click.BadParameter(str(error), param_hint="RATE") from None
    try:
        cluster.set_link_rate(folder, node, parsed)
    except (cluster.LabError, ComponentError) as error:
        raise _fail(error) from error
    _say(f"{node} pulls images at {rate}")


@lab.command("restart")
@click.argument("component", type=click.Choice(cluster.RESTARTABLE))
@dir_option
def restart_command(component: str, folder: Path) -> None:
    """Stop COMPONENT and start it again on the same ports and data (a control-plane fault)."""
    try:
        seconds = cluster.restart(folder, component)
    except (cluster.LabError, ComponentError) as error:
        raise _fail(error) from error
    _say(f"restarted {component}: serving again after {seconds:.1f} s")


@lab.command("status")
@dir_option
def status_command(folder: Path) -> None:
    """Show the lab's programs and its nodes."""
    try:
        running, nodes = cluster.status(folder)
    except cluster.LabError as error:
        raise _fail(error) from error
    missing = [name for name in cluster.COMPONENTS if name not in running]
    click.echo(f"running: {', '.join(running) or 'nothing'}")
    if missing:
        click.echo(f"not running: {', '.join(missing)}")
    click.echo(f"{'NODE':<12} {'READY':<8} LINK")
    for node in nodes:
        click.echo(f"{node.name:<12} {node.ready:<8} {'up' if node.link_up else 'cut'}")


@lab.command("image")
@click.option(
    "--tag",
    default=None,
    help="The image's tag (default: the project's version and the source's commit).",
)
@dir_option
def image_command(tag: str | None, folder: Path) -> None:
    """Build the product's image from deploy/Dockerfile with buildah and push it to the running
    lab's registry (a lab with real nodes); prints the image's reference."""
    try:
        lab_now = cluster.Lab.load(folder.resolve())
    except cluster.LabError as error:
        raise _fail(error) from error
    if lab_now.registry is None:
        raise click.ClickException(
            f"the lab in {folder} has no registry: start one with real nodes "
            "(`./dev lab up --real-nodes 1`) first"
        )
    source = product_image.Source.of(Path.cwd())
    try:
        built = product_image.build(
            source.context,
            tag=tag or source.tag,
            version=source.version,
            revision=source.revision,
            say=_say,
        )
        reference = product_image.push(built, images.Registry(lab_now.registry))
    except (images.ImageError, packages.PackageError) as error:
        raise _fail(error) from error
    click.echo(reference)


@lab.command("render-base")
def render_base_command() -> None:
    """Render deploy/base and the package's agent identity from the Helm chart, and copy the
    chart's Grafana dashboard to deploy/grafana (run from the repository; uses the lab's helm,
    built once)."""
    root = Path.cwd()
    if not (root / chart.CHART).is_dir():
        raise click.ClickException(f"no {chart.CHART} here: run from the repository")
    try:
        files = chart.render(root, build.binary("helm"))
    except (BuildError, chart.RenderError) as error:
        raise _fail(error) from error
    copied = chart.copies(root)
    changed = chart.write(root, {**files, **copied})
    for path in [*files, *copied]:
        _say(f"{'rendered' if path in changed else 'unchanged'} {path}")
    strays = chart.strays(root, files)
    if strays:
        raise click.ClickException(
            f"not rendered from the chart, remove: {', '.join(map(str, strays))}"
        )


@lab.command("screenshot")
@click.option("--nodes", type=click.IntRange(min=10), default=1000, show_default=True)
@click.option("--pools", type=click.IntRange(min=2), default=10, show_default=True)
@click.option(
    "--cut",
    type=click.IntRange(min=1),
    default=2,
    show_default=True,
    help="How many pools (the last ones) are cut off during the rollout.",
)
@click.option(
    "--cut-at",
    type=click.FloatRange(min=0.0, max=1.0),
    default=0.4,
    show_default=True,
    help="The share of the nodes updated when the pools are cut.",
)
@click.option(
    "--output",
    type=click.Path(dir_okay=False, writable=True, path_type=Path),
    default=Path("docs/dashboard.png"),
    show_default=True,
)
def screenshot_command(nodes: int, pools: int, cut: int, cut_at: float, output: Path) -> None:
    """Take the README's screenshot of `edgerollout dashboard`: a lab of its own (stopped at the
    end), a rollout of NODES nodes in POOLS pools, CUT of them cut off part way."""
    if cut >= pools:
        raise click.BadParameter(
            f"{cut} of {pools} pools: at least one must stay", param_hint="--cut"
        )
    shot = screenshot.Shot(nodes=nodes, pools=pools, cut=cut, cut_at=cut_at, output=output)
    try:
        build.build_all(_say)
        screenshot.take(shot, _say)
    except (
        BuildError,
        ComponentError,
        cluster.LabError,
        packages.PackageError,
        TimeoutError,
        RuntimeError,
    ) as error:
        raise _fail(error) from error


lab.add_command(demo)


def main() -> None:
    lab(prog_name="python -m edgerollout_lab")
