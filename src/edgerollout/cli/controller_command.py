"""`edgerollout controller`: run the AdvancedRollingUpdate and OTA controller."""

from __future__ import annotations

import dataclasses

import click
import uvloop

from edgerollout.cli import logging_setup
from edgerollout.cli.param_types import ADDRESS, kubeconfig_option
from edgerollout.controller.manager import AdmissionPoliciesNotServed, run_controller
from edgerollout.settings import (
    CONTROLLER,
    LOG_FORMATS,
    LOG_LEVELS,
    Address,
    LogFormat,
    LogLevel,
)


@click.command()
@kubeconfig_option(CONTROLLER.kubeconfig)
@click.option(
    "--namespace",
    default=CONTROLLER.namespace,
    help="Only manage DaemonSets in this namespace.",
)
@click.option(
    "--leader-elect/--no-leader-elect",
    default=CONTROLLER.leader_elect,
    show_default=True,
    help="Hold a Lease before writing (run 2 replicas with this on).",
)
@click.option(
    "--leader-election-namespace", default=CONTROLLER.leader_election_namespace, show_default=True
)
@click.option("--leader-election-name", default=CONTROLLER.leader_election_name, show_default=True)
@click.option(
    "--lease-duration",
    type=click.FloatRange(min=1),
    default=CONTROLLER.lease_duration,
    show_default=True,
)
@click.option(
    "--renew-deadline",
    type=click.FloatRange(min=0.5),
    default=CONTROLLER.renew_deadline,
    show_default=True,
)
@click.option(
    "--retry-period",
    type=click.FloatRange(min=0.1),
    default=CONTROLLER.retry_period,
    show_default=True,
)
@click.option(
    "--metrics-address", type=ADDRESS, default=CONTROLLER.metrics_address, show_default=True
)
@click.option(
    "--health-address", type=ADDRESS, default=CONTROLLER.health_address, show_default=True
)
@click.option(
    "--workers", type=click.IntRange(min=1), default=CONTROLLER.workers, show_default=True
)
@click.option(
    "--identity",
    default=CONTROLLER.identity,
    help="Leader election identity (default: HOST_UUID, new for each process).",
)
@click.option(
    "--prepull-toolbox-image",
    default=CONTROLLER.prepull.toolbox_image,
    show_default=True,
    help="Image with a static /bin/busybox, copied into image pre-pull Jobs.",
)
@click.option(
    "--prepull-deadline",
    type=click.IntRange(
        min=CONTROLLER.prepull.shortest_deadline_seconds,
        max=CONTROLLER.prepull.longest_deadline_seconds,
    ),
    default=CONTROLLER.prepull.deadline_seconds,
    show_default=True,
    help="Seconds an image pre-pull may take before it is reported failed.",
)
@click.option(
    "--rollback-namespace",
    "rollback_namespaces",
    multiple=True,
    default=tuple(sorted(CONTROLLER.rollback_namespaces)),
    help=(
        "Roll back on failure (edgerollout.io/on-failure: rollback) in this namespace; "
        "repeatable. Elsewhere such a DaemonSet pauses with a Warning. The install's admission "
        "policy must admit it too (the chart's controller.rollback.namespaces)."
    ),
)
@click.option(
    "--log-format",
    type=click.Choice(LOG_FORMATS),
    default=CONTROLLER.log_format,
    show_default=True,
)
@click.option(
    "--log-level",
    type=click.Choice(LOG_LEVELS),
    default=CONTROLLER.log_level,
    show_default=True,
    help="debug adds a line per pod decision to the summary line per reconcile.",
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
    metrics_address: Address,
    health_address: Address,
    workers: int,
    identity: str,
    prepull_toolbox_image: str,
    prepull_deadline: int,
    rollback_namespaces: tuple[str, ...],
    log_format: LogFormat,
    log_level: LogLevel,
) -> None:
    """Upgrade annotated DaemonSets: AdvancedRollingUpdate and OTA."""
    settings = dataclasses.replace(
        CONTROLLER,
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
        log_format=log_format,
        log_level=log_level,
        rollback_namespaces=frozenset(rollback_namespaces),
        prepull=dataclasses.replace(
            CONTROLLER.prepull,
            toolbox_image=prepull_toolbox_image,
            deadline_seconds=prepull_deadline,
        ),
    )
    if (problem := settings.leader_election_problem()) is not None:
        raise click.UsageError(problem)
    logging_setup.configure(settings.log_format, level=settings.log_level)
    try:
        uvloop.run(run_controller(settings))
    except AdmissionPoliciesNotServed as error:
        raise click.ClickException(str(error)) from error
