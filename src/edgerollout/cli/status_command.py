"""`edgerollout status DAEMONSET`: where a rollout stands, node by node (also `kubectl edgerollout`).

The shell around `domain.rollout_status`: it reads the DaemonSet, its pods (its label selector,
then its UID in their owner reference), its ControllerRevisions and the Nodes, reduces them with
`kube.views`, and prints what `status_render` makes of them. `--watch` reads them all again every
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

from edgerollout.cli.daemonset_command import (
    connect,
    daemonset_target,
    read_daemonset,
    run_daemonset_command,
)
from edgerollout.cli.status_render import render_json, render_table
from edgerollout.domain.rollout_status import RolloutStatus, rollout_status
from edgerollout.kube.api import CONTROLLER_REVISIONS, JSON, NODES, PODS, Api, Resource
from edgerollout.kube.views import (
    daemonset_from_api,
    node_from_api,
    pod_from_api,
    pod_selector,
    revision_from_api,
)
from edgerollout.settings import STATUS

EXIT_NOT_COMPLETE = 1


async def _list_all(
    api: Api, resource: Resource, *, namespace: str | None = None, selector: str | None = None
) -> list[JSON]:
    items: list[JSON] = []
    token: str | None = None
    while True:
        page = await api.list(
            resource, namespace=namespace, label_selector=selector, continue_token=token
        )
        items += page.items
        token = page.continue_token
        if token is None:
            return items


async def read_status(api: Api, *, name: str, namespace: str) -> RolloutStatus:
    """Read the DaemonSet and its objects once and compute its rollout status."""
    raw = await read_daemonset(api, name=name, namespace=namespace)
    daemonset = daemonset_from_api(raw)
    uid = daemonset.view.uid
    selector = pod_selector(raw)
    pods = [
        pod_from_api(obj)
        for obj in await _list_all(api, PODS, namespace=namespace, selector=selector)
    ]
    revisions = [
        revision
        for obj in await _list_all(
            api, CONTROLLER_REVISIONS, namespace=namespace, selector=selector
        )
        if (revision := revision_from_api(obj)).owner_uid == uid
    ]
    nodes = [node_from_api(obj) for obj in await _list_all(api, NODES)]
    return rollout_status(
        daemonset=daemonset.view,
        revisions=[revision.view for revision in revisions],
        pods=[pod.view for pod in pods if pod.owner_uid == uid],
        nodes=nodes,
        now=datetime.now(UTC),
        spec_observed=daemonset.observed_generation >= daemonset.generation,
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
