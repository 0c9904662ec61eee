"""`edgerollout list`: one row per opted-in DaemonSet, where its rollout stands (also
`kubectl edgerollout list`).

Each row is what `status` reads of that DaemonSet (`status_command.status_of` over the views of
`rollout_read`), counted and given its phase by the domain (`rollout_phase`), so `list` and
`status` cannot disagree. The read costs one list per resource whatever the number of DaemonSets:
the DaemonSets, then, if any is opted in, the ControllerRevisions, the pods and the Nodes
(`rollout_read.read_rollouts`). `--watch` prints the table, then a row each time a DaemonSet's
row changes, from watches (`list_watch`), until interrupted or until a list or watch fails.

As kubectl's `get`: `-n NAMESPACE` (default "default", as every command here), `-A` for all
namespaces (then a NAMESPACE column); "No resources found in NS namespace." on stderr and exit 0
when no DaemonSet is opted in. Exit codes: 0 listed; 1 the API server cannot be reached or
refuses, or no kubeconfig is usable (`error: ...` on stderr, nothing on stdout); 2 usage error;
130 interrupted (Ctrl-C), the way out of `--watch`.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from itertools import zip_longest

import click

from edgerollout.cli.daemonset_command import connect, run_command
from edgerollout.cli.list_render import (
    Layout,
    ListedStatus,
    aligned,
    column_widths,
    no_resources,
    render_item_json,
    render_json,
    render_table,
)
from edgerollout.cli.list_watch import RolloutWatch
from edgerollout.cli.param_types import DEFAULT_NAMESPACE, kubeconfig_option, namespaces_options
from edgerollout.cli.rollout_read import ListedRollout, listing_order, read_rollouts
from edgerollout.cli.status_command import status_of
from edgerollout.kube.api import Api

EXIT_ERROR = 1


def now() -> datetime:
    """The time rows are read at (the one clock of this command)."""
    return datetime.now(UTC)


def listed_status(rollout: ListedRollout, *, at: datetime) -> ListedStatus:
    """One row's reading: `status`'s status of the DaemonSet, and its newest revision's age."""
    status = status_of(rollout.views, now=at)
    newest = status.newest_revision
    created = None if newest is None else rollout.revisions_created.get(newest)
    return ListedStatus(status=status, revision_created=created)


async def _list_once(api: Api, *, namespace: str | None, layout: Layout, json: bool) -> None:
    rollouts = await read_rollouts(api, namespace=namespace)
    at = now()
    listed = [listed_status(rollout, at=at) for rollout in rollouts]
    if json:
        click.echo(render_json(listed), nl=False)
    elif not listed:
        click.echo(no_resources(namespace), err=True)
    else:
        click.echo(render_table(listed, layout=layout, now=at), nl=False)


async def watch_rollouts(
    api: Api,
    *,
    namespace: str | None,
    layout: Layout,
    json: bool,
    write: Callable[[str], None],
) -> None:
    """Write the rows, then each row that changes (its age aside), until cancelled."""
    watch = RolloutWatch(api, namespace=namespace)
    rows = _RowWriter(layout, json=json, write=write)
    try:
        await watch.start()
        keys = watch.index.daemonsets()
        if not keys and not json:
            click.echo(no_resources(namespace), err=True)
        while True:
            at = now()
            listed: dict[str, ListedStatus | None] = {}
            for key in keys:
                rollout = watch.index.rollout(key)
                item = None if rollout is None else listed_status(rollout, at=at)
                watch.look_again(key, None if item is None else item.status.look_again_after)
                listed[key] = item
            rows.write(listed, now=at)
            changed = await watch.changes()
            keys = sorted(changed, key=listing_order)
    finally:
        await watch.stop()


class _RowWriter:
    """What `list --watch` has written: a row per DaemonSet whose row changed, the header before
    the first, the columns as wide as the widest cell written so far."""

    def __init__(self, layout: Layout, *, json: bool, write: Callable[[str], None]) -> None:
        self.layout = layout
        self.json = json
        self._write = write
        self._shown: dict[str, tuple[str, ...]] = {}
        self._widths: list[int] = []

    def write(self, listed: dict[str, ListedStatus | None], *, now: datetime) -> None:
        """Write the rows of `listed` that differ from those written last (None: the DaemonSet
        is gone, or no longer opted in: nothing to write)."""
        fresh: list[tuple[ListedStatus, list[str]]] = []
        for key, item in listed.items():
            if item is None:
                self._shown.pop(key, None)
                continue
            cells = self.layout.cells(item, now=now)
            compared = self.layout.without_age(cells)
            if self._shown.get(key) != compared:
                self._shown[key] = compared
                fresh.append((item, cells))
        if self.json:
            for item, _ in fresh:
                self._write(render_item_json(item))
            return
        if not fresh:
            return
        header = self.layout.header()
        rows = [cells for _, cells in fresh]
        first = not self._widths
        widths = column_widths([header, *rows])
        self._widths = [max(a, b) for a, b in zip_longest(self._widths, widths, fillvalue=0)]
        if first:
            self._write(aligned(header, self._widths) + "\n")
        for cells in rows:
            self._write(aligned(cells, self._widths) + "\n")


async def _run(
    *, namespace: str | None, kubeconfig: str | None, layout: Layout, json: bool, watch: bool
) -> int:
    api = await connect(kubeconfig)
    try:
        if watch:
            await watch_rollouts(
                api,
                namespace=namespace,
                layout=layout,
                json=json,
                write=lambda text: click.echo(text, nl=False),
            )
        else:
            await _list_once(api, namespace=namespace, layout=layout, json=json)
    finally:
        await api.close()
    return 0


@click.command(name="list")
@namespaces_options("list")
@click.option(
    "-o",
    "--output",
    type=click.Choice(["table", "wide", "json"]),
    default="table",
    show_default=True,
    help="wide: also max-unavailable, budget, revision and warnings; json: the documented "
    "JSON document.",
)
@click.option("-w", "--watch", is_flag=True, help="After the table, print each row that changes.")
@kubeconfig_option()
def list_command(
    namespace: str | None,
    all_namespaces: bool,
    output: str,
    watch: bool,
    kubeconfig: str | None,
) -> None:
    """List the opted-in DaemonSets, one row each: strategy, updated/total, offline, broken and
    held pods, wave, state and the age of the newest revision.

    Exits 0 once listed (also when there is nothing to list), 1 when the API server cannot be
    reached or refuses, 2 on a usage error, 130 when interrupted.
    """
    if all_namespaces and namespace is not None:
        raise click.UsageError("-n/--namespace and -A/--all-namespaces cannot be used together")
    scope = None if all_namespaces else namespace or DEFAULT_NAMESPACE
    layout = Layout(all_namespaces=all_namespaces, wide=output == "wide")
    run_command(
        lambda: _run(
            namespace=scope,
            kubeconfig=kubeconfig,
            layout=layout,
            json=output == "json",
            watch=watch,
        ),
        api_exit=EXIT_ERROR,
    )
