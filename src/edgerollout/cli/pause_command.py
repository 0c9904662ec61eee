"""`edgerollout pause DAEMONSET` / `edgerollout resume DAEMONSET` (also `kubectl edgerollout ...`).

As `kubectl rollout pause` / `resume` do for a Deployment's `spec.paused`, they set and clear the
DaemonSet's `edgerollout.io/paused` annotation (`domain.pause`), and answer as kubectl does:

| annotation before                  | pause                      | resume                      |
|------------------------------------|----------------------------|-----------------------------|
| absent, or "false"                 | set to "true": `paused`    | exit 1: `is not paused`     |
| "true" (any case, spaces ignored)  | exit 1: `is already paused`| removed: `resumed`          |
| any other value (counts as paused) | set to "true": `paused`    | removed: `resumed`          |

A value that is neither "true" nor "false" already holds the rollout (it fails closed), but it is a
mistake: `pause` replaces it with the value meant, `resume` removes it, and both say on stderr
what they replaced. `resume` removes the annotation rather than writing "false", so a resumed
DaemonSet looks like one that was never paused.

The write is a JSON merge patch of that one annotation (`null` removes it), without a
resourceVersion precondition, as kubectl's pause is a patch without one. A precondition would
guard nothing worth guarding: the patch touches no other key, and its outcome, the annotation
set or gone, is what the user asked for whatever was written in between. It would make the
command fail often, though: the native controller rewrites a DaemonSet's status, and with it its
resourceVersion, whenever a node's pod changes, which on a large fleet is most of the time. What
a race can do is word the answer wrongly (`paused` for a DaemonSet someone paused a moment
earlier), never leave it in a state other than the one asked for.

Exit codes: 0 done; 1 already in the state asked for (nothing written); 2 usage error; 3, 4 and
130 as every command about one DaemonSet (`daemonset_command`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import click

from edgerollout.cli.daemonset_command import (
    DaemonSetNotFound,
    connect,
    daemonset_target,
    read_daemonset,
    run_daemonset_command,
)
from edgerollout.domain.spec.pause import read_pause
from edgerollout.domain.vocabulary import PAUSED_ANNOTATION
from edgerollout.kube.api import DAEMONSETS, JSON, MERGE, Api, ApiError

EXIT_UNCHANGED = 1
PAUSED_VALUE = "true"


@dataclass(frozen=True, slots=True, kw_only=True)
class PauseChange:
    """What `pause` or `resume` does to a DaemonSet: the merge patch to send (None: nothing, it is
    already as asked), and the invalid value it replaces, if any, to be named to the user."""

    patch: JSON | None
    replaced: str | None = None


def plan_pause_change(annotations: Mapping[str, str], *, pause: bool) -> PauseChange:
    """The change that pauses (`pause`) or resumes a DaemonSet with these annotations (see the
    module docstring's table)."""
    setting = read_pause(annotations)
    replaced = annotations.get(PAUSED_ANNOTATION) if setting.notice is not None else None
    if setting.paused == pause and replaced is None:
        return PauseChange(patch=None)
    value = PAUSED_VALUE if pause else None
    return PauseChange(
        patch={"metadata": {"annotations": {PAUSED_ANNOTATION: value}}}, replaced=replaced
    )


def done_message(name: str, *, pause: bool) -> str:
    """kubectl's line for a changed object: `daemonset.apps/NAME paused`."""
    return f"daemonset.apps/{name} {'paused' if pause else 'resumed'}"


def unchanged_message(name: str, *, pause: bool) -> str:
    """kubectl's refusal of a pause that changes nothing: `daemonsets.apps "NAME" is ...`."""
    state = "already paused" if pause else "not paused"
    return f'error: daemonsets.apps "{name}" is {state}'


def replaced_message(value: str, *, pause: bool) -> str:
    """What a change says about the invalid value it overwrote or removed."""
    outcome = f'set to "{PAUSED_VALUE}"' if pause else "removed"
    return (
        f'warning: {PAUSED_ANNOTATION} was "{value}", which is neither "true" nor "false" and '
        f"held the rollout as paused; it is now {outcome}"
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class PauseOutcome:
    """What `change_pause` did: `changed` False when the DaemonSet already was as asked (nothing
    written); `replaced` the invalid value it overwrote or removed, if any."""

    changed: bool
    replaced: str | None = None


async def change_pause(api: Api, *, name: str, namespace: str, pause: bool) -> PauseOutcome:
    """Pause (`pause`) or resume the DaemonSet `namespace/name`: read it, then patch its pause
    annotation unless it is already as asked. `pause`, `resume` and the dashboard's buttons all
    go through here. Raises `DaemonSetNotFound`, or the `ApiError` of a refused read or patch."""
    raw = await read_daemonset(api, name=name, namespace=namespace)
    annotations = (raw.get("metadata") or {}).get("annotations") or {}
    change = plan_pause_change(annotations, pause=pause)
    if change.patch is None:
        return PauseOutcome(changed=False)
    try:
        await api.patch(DAEMONSETS, name, change.patch, namespace=namespace, content_type=MERGE)
    except ApiError as error:
        if error.not_found:  # deleted since it was read
            raise DaemonSetNotFound from None
        raise
    return PauseOutcome(changed=True, replaced=change.replaced)


async def _change(*, name: str, namespace: str, kubeconfig: str | None, pause: bool) -> int:
    api = await connect(kubeconfig)
    try:
        outcome = await change_pause(api, name=name, namespace=namespace, pause=pause)
    finally:
        await api.close()
    if not outcome.changed:
        click.echo(unchanged_message(name, pause=pause), err=True)
        return EXIT_UNCHANGED
    if outcome.replaced is not None:
        click.echo(replaced_message(outcome.replaced, pause=pause), err=True)
    click.echo(done_message(name, pause=pause))
    return 0


def _run(*, daemonset: str, namespace: str, kubeconfig: str | None, pause: bool) -> None:
    run_daemonset_command(
        lambda: _change(name=daemonset, namespace=namespace, kubeconfig=kubeconfig, pause=pause),
        daemonset=daemonset,
        namespace=namespace,
    )


@click.command()
@daemonset_target
def pause(daemonset: str, namespace: str, kubeconfig: str | None) -> None:
    """Pause the rollout of DAEMONSET: edgerollout upgrades none of its pods until resumed.

    Sets the annotation edgerollout.io/paused to "true". Exits 0 when paused, 1 when it already
    was, 2 on a usage error, 3 when the DaemonSet does not exist, 4 when the API server cannot
    be reached or refuses, 130 when interrupted.
    """
    _run(daemonset=daemonset, namespace=namespace, kubeconfig=kubeconfig, pause=True)


@click.command()
@daemonset_target
def resume(daemonset: str, namespace: str, kubeconfig: str | None) -> None:
    """Resume the paused rollout of DAEMONSET.

    Removes the annotation edgerollout.io/paused. Exits 0 when resumed, 1 when it was not paused,
    2 on a usage error, 3 when the DaemonSet does not exist, 4 when the API server cannot be
    reached or refuses, 130 when interrupted.
    """
    _run(daemonset=daemonset, namespace=namespace, kubeconfig=kubeconfig, pause=False)
