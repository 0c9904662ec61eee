"""`edgerollout plan DAEMONSET`: what the controller would do now, node by node, and why.

A dry run: it reads the DaemonSet and the objects of its rollout once (`rollout_read`), runs the
controller's own `domain.reconcile.plan` on them with a fresh book (`dry_plan`: with a rollback
on failure where the install switched it on), and prints what
`domain.dry_run` reads out of that plan. Nothing is written. Deletions the controller has made
and the API server has not carried out yet are invisible here (their pods show as terminating);
otherwise the plan is the one the controller makes from the same objects.

Exit codes: 0 printed; 2 usage error; 3 DaemonSet not found; 4 the API server cannot be reached or
refuses the request; 130 interrupted (Ctrl-C) (`daemonset_command`).
"""

from __future__ import annotations

from datetime import UTC, datetime

import click

from edgerollout.cli.daemonset_command import connect, daemonset_target, run_daemonset_command
from edgerollout.cli.plan_render import DryRun, render_plan_json, render_plan_table
from edgerollout.cli.rollout_read import RolloutViews, asks_for_rollback, read_rollout
from edgerollout.domain.planning.decision import Snapshot
from edgerollout.domain.planning.reconcile import dry_plan
from edgerollout.domain.reporting.node_plans import node_plans
from edgerollout.kube.api import Api


async def dry_run(api: Api, *, name: str, namespace: str) -> DryRun:
    """Read the DaemonSet `namespace/name` once and plan it as the controller would now."""
    views = await read_rollout(api, name=name, namespace=namespace)
    return dry_run_of(views, now=datetime.now(UTC))


def dry_run_of(views: RolloutViews, *, now: datetime) -> DryRun:
    """The controller's plan of views read once, at `now`, with its reading node by node: what
    `plan` prints, and the dashboard's plan table."""
    snapshot = Snapshot.of_views(
        daemonset=views.daemonset,
        revisions=views.revisions,
        pods=views.pods,
        nodes=views.nodes,
        now=now,
    )
    decided = dry_plan(snapshot, rollback=views.rollback)
    return DryRun(
        daemonset=views.daemonset,
        plan=decided,
        rollback_switch=views.rollback if asks_for_rollback(views.daemonset) else None,
        nodes=node_plans(decided, pods_by_node=snapshot.pods_by_node, readiness=snapshot.readiness),
    )


async def _run(*, name: str, namespace: str, kubeconfig: str | None, output: str) -> int:
    api = await connect(kubeconfig)
    try:
        result = await dry_run(api, name=name, namespace=namespace)
    finally:
        await api.close()
    text = render_plan_json(result) if output == "json" else render_plan_table(result)
    click.echo(text, nl=False)
    return 0


@click.command(name="plan")
@daemonset_target
@click.option(
    "-o",
    "--output",
    type=click.Choice(["table", "json"]),
    default="table",
    show_default=True,
    help="json: the documented JSON document.",
)
def plan_command(daemonset: str, namespace: str, kubeconfig: str | None, output: str) -> None:
    """Show what the controller would do with DAEMONSET now, node by node, and why (a dry run:
    nothing is changed).

    Exits 0 once printed, 2 on a usage error, 3 when the DaemonSet does not exist, 4 when the API
    server cannot be reached or refuses, 130 when interrupted.
    """
    run_daemonset_command(
        lambda: _run(name=daemonset, namespace=namespace, kubeconfig=kubeconfig, output=output),
        daemonset=daemonset,
        namespace=namespace,
    )
