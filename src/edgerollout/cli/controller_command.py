"""`edgerollout controller`: run the AdvancedRollingUpdate and OTA controller."""

from __future__ import annotations

import logging

import click
import uvloop

from edgerollout.cli import logging_setup
from edgerollout.controller.manager import ControllerOptions, run_controller
from edgerollout.domain.prepull import PrepullSettings
from edgerollout.kube.leader import LeadershipLost


@click.command()
@click.option(
    "--kubeconfig",
    type=click.Path(exists=True, dir_okay=False),
    default=None,
    help="Kubeconfig to use (default: in-cluster, then ~/.kube/config).",
)
@click.option("--namespace", default=None, help="Only manage DaemonSets in this namespace.")
@click.option(
    "--leader-elect/--no-leader-elect",
    default=False,
    show_default=True,
    help="Hold a Lease before writing (run 2 replicas with this on).",
)
@click.option("--leader-election-namespace", default="kube-system", show_default=True)
@click.option("--leader-election-name", default="edgerollout-controller", show_default=True)
@click.option("--lease-duration", type=click.FloatRange(min=1), default=15.0, show_default=True)
@click.option("--renew-deadline", type=click.FloatRange(min=0.5), default=10.0, show_default=True)
@click.option("--retry-period", type=click.FloatRange(min=0.1), default=2.0, show_default=True)
@click.option("--metrics-address", default="127.0.0.1:8080", show_default=True)
@click.option("--health-address", default="127.0.0.1:8081", show_default=True)
@click.option("--workers", type=click.IntRange(min=1), default=4, show_default=True)
@click.option("--identity", default="", help="Leader election identity (default: host_pid).")
@click.option(
    "--prepull-toolbox-image",
    default="busybox:1.36.1-musl",
    show_default=True,
    help="Image with a static /bin/busybox, copied into image pre-pull Jobs.",
)
@click.option(
    "--prepull-deadline",
    type=click.IntRange(min=10),
    default=600,
    show_default=True,
    help="Seconds an image pre-pull may take before it is reported failed.",
)
@click.option(
    "--log-format", type=click.Choice(["text", "json"]), default="text", show_default=True
)
def controller(
    kubeconfig: str | None,
    namespace: str | None,
    leader_elect: bool,
    leader_election_namespace: str,
    leader_election_name: str,
    lease_duration: float,
    renew_deadline: float,
    retry_period: float,
    metrics_address: str,
    health_address: str,
    workers: int,
    identity: str,
    prepull_toolbox_image: str,
    prepull_deadline: int,
    log_format: str,
) -> None:
    """Upgrade annotated DaemonSets: AdvancedRollingUpdate and OTA."""
    logging_setup.configure(log_format)
    options = ControllerOptions(
        kubeconfig=kubeconfig,
        namespace=namespace,
        leader_elect=leader_elect,
        leader_election_namespace=leader_election_namespace,
        leader_election_name=leader_election_name,
        lease_duration=lease_duration,
        renew_deadline=renew_deadline,
        retry_period=retry_period,
        metrics_address=metrics_address,
        health_address=health_address,
        workers=workers,
        identity=identity,
        prepull=PrepullSettings(
            toolbox_image=prepull_toolbox_image, deadline_seconds=prepull_deadline
        ),
    )
    try:
        uvloop.run(run_controller(options))
    except LeadershipLost as error:
        lost = error
    else:
        return
    logging.getLogger("edgerollout.controller").error("%s; exiting", lost)
    raise SystemExit(3)
