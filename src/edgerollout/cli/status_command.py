"""`edgerollout status DAEMONSET`: where a rollout stands, node by node (also `kubectl edgerollout`).

The shell around `domain.rollout_status`: it reads the DaemonSet, its pods, its ControllerRevisions
and the Nodes once (`rollout_read`), and prints what `status_render` makes of them. `--watch` reads them all again every
`STATUS.poll_seconds` (1 s) and prints again whenever the output changes, until the rollout is
complete.

Exit codes: 0 complete; 1 not complete (without `--watch`); 2 usage error; 3 DaemonSet not
found; 4 the API server cannot be reached or refuses the request; 130 interrupted (Ctrl-C) —
the last three shared with every command about one DaemonSet (`daemonset_command`).
"""

from __future__ import annotations

import asyncio
import sys
from datetime import UTC, datetime

import click

from edgerollout.cli.daemonset_command import connect, daemonset_target, run_daemonset_command
from edgerollout.cli.rollout_read import RolloutViews, read_rollout
from edgerollout.cli.status_render import render_json, render_table
from edgerollout.domain.reporting.rollout_status import RolloutStatus, rollout_status
from edgerollout.kube.api import Api
from edgerollout.settings import STATUS

EXIT_NOT_COMPLETE = 1


async def read_status(api: Api, *, name: str, namespace: str) -> RolloutStatus:
    """Read the DaemonSet and its objects once and compute its rollout status."""
    views = await read_rollout(api, name=name, namespace=namespace)
    return status_of(views, now=datetime.now(UTC))


def status_of(views: RolloutViews, *, now: datetime) -> RolloutStatus:
    """The rollout status of views read once: what `status` shows, and `list` of each row."""
    return rollout_status(
        daemonset=views.daemonset,
        revisions=views.revisions,
        pods=views.pods,
        nodes=views.nodes,
        now=now,
        spec_observed=views.spec_observed,
        rollback=views.rollback,
    )


def _render(status: RolloutStatus, output: str) -> str:
    if output == "json":
        return render_json(status)
    return render_table(status, wide=output == "wide")


async def _run(
    *, name: str, namespace: str, kubeconfig: str | None, watch: bool, output: str
) -> int:
    api = await connect(kubeconfig)
    try:
        shown = ""
        redraw = watch and output != "json" and sys.stdout.isatty()
        while True:
            status = await read_status(api, name=name, namespace=namespace)
            text = _render(status, output)
            if text != shown:
                if redraw:
                    click.clear()
                click.echo(text, nl=False)
                shown = text
            if status.complete:
                return 0
            if not watch:
                return EXIT_NOT_COMPLETE
            await asyncio.sleep(STATUS.poll_seconds)
    finally:
        await api.close()


@click.command()
@daemonset_target
@click.option(
    "-w", "--watch", is_flag=True, help="Keep printing changes until the rollout is complete."
)
@click.option(
    "-o",
    "--output",
    type=click.Choice(["table", "wide", "json"]),
    default="table",
    show_default=True,
    help="wide: also the revision hash; json: the documented JSON document.",
)
def status(
    daemonset: str, namespace: str, kubeconfig: str | None, watch: bool, output: str
) -> None:
    """Show the rollout of DAEMONSET node by node.

    Exits 0 when the rollout is complete, 1 when it is not (without --watch), 2 on a usage error,
    3 when the DaemonSet does not exist, 4 when the API server cannot be reached or refuses,
    130 when interrupted.
    """
    run_daemonset_command(
        lambda: _run(
            name=daemonset, namespace=namespace, kubeconfig=kubeconfig, watch=watch, output=output
        ),
        daemonset=daemonset,
        namespace=namespace,
    )
