"""`list --watch`: the opted-in DaemonSets' rollouts kept up to date from watches, not by polling.

Five informers (`kube.informer`: one list each, then a watch from the list's resourceVersion, a
new list only after `410 Gone`) feed one `RolloutIndex`, the same `list` reads once: the
DaemonSets, pods and ControllerRevisions of the namespace (or of all), the Nodes, and the
install's rollback switches (RoleBindings `edgerollout-controller-rollback`; a reader refused
them gets rollouts planned as if switched off, told so, and the others go on). Each change
names the DaemonSets whose rollout it may change; `changes` hands those out in batches, a burst
of changes settling first (`LIST.settle_seconds`). The Nodes are watched because an edge node
going offline changes a rollout's state before any of its pods changes, the ControllerRevisions
because a new one makes every pod of its DaemonSet outdated.

Some readings change on the clock alone: a pod becomes available after minReadySeconds, a
progress deadline passes, a maintenance window opens. For those `look_again` takes the delay the
controller's own plan would look again after (`RolloutStatus.look_again_after`), so a row moves
when the controller would act, and nothing is polled otherwise.

A failure of a list or a watch ends the command with its one-line error (before the table, nothing
is printed), as kubectl's `get --watch` ends: a watch that quietly retried would show rows that
no longer hold. A `410 Gone` is no failure: the informer lists again and reports the differences.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import Any, TypeVar

from edgerollout.cli.rollout_read import (
    FORBIDDEN,
    ROLLBACK_BINDING_FIELD,
    RolloutIndex,
    daemonset_pod,
    dated_revision,
    opted_in_daemonset,
    switched_on_in,
)
from edgerollout.kube.api import (
    CONTROLLER_REVISIONS,
    DAEMONSETS,
    NODES,
    PODS,
    ROLE_BINDINGS,
    Api,
    ApiError,
)
from edgerollout.kube.informer import Informer
from edgerollout.kube.views import node_from_api
from edgerollout.settings import LIST

T = TypeVar("T")


class RolloutWatch:
    """The informers of `list --watch` and the index they keep (see the module docstring).

    `start` before anything else, and `stop` in every case once started."""

    def __init__(self, api: Api, *, namespace: str | None) -> None:
        self.index = RolloutIndex()
        self._dirty: set[str] = set()
        self._due: dict[str, float] = {}
        self._woken = asyncio.Event()
        self._failure: Exception | None = None
        self._tasks: list[asyncio.Task[None]] = []
        index = self.index
        self._informers: list[Informer[Any]] = [
            self._informer(
                Informer(api, DAEMONSETS, opted_in_daemonset, namespace=namespace),
                index.daemonset_changed,
            ),
            self._informer(
                Informer(api, CONTROLLER_REVISIONS, dated_revision, namespace=namespace),
                index.revision_changed,
            ),
            self._informer(
                Informer(api, PODS, daemonset_pod, namespace=namespace), index.pod_changed
            ),
            self._informer(Informer(api, NODES, node_from_api), index.node_changed),
        ]
        # The install's rollback switches (design §13.4.1): a reader who may not read them gets
        # rollouts planned as if switched off, and the word that they could not be read.
        self._switches = self._informer(
            Informer(
                api,
                ROLE_BINDINGS,
                switched_on_in,
                namespace=namespace,
                field_selector=ROLLBACK_BINDING_FIELD,
            ),
            index.switch_changed,
        )
        self._switches.on_lost = self._switches_lost
        self._switches_forbidden = False
        self._informers.append(self._switches)

    def _informer(
        self, informer: Informer[T], changed: Callable[[T | None, T | None], set[str]]
    ) -> Informer[T]:
        def handle(old: T | None, new: T | None) -> None:
            self._dirty |= changed(old, new)
            self._woken.set()

        informer.subscribe(handle)
        informer.on_listed = self._woken.set
        informer.on_lost = self._lost
        return informer

    def _switches_lost(self, error: Exception) -> None:
        if not (isinstance(error, ApiError) and error.status == FORBIDDEN):
            self._lost(error)
            return
        self._switches_forbidden = True
        self._dirty |= self.index.switches_unknown()
        self._woken.set()
        # Asking again would be refused again: the informer stops here.
        asyncio.get_running_loop().call_soon(
            self._tasks[self._informers.index(self._switches)].cancel
        )

    def _lost(self, error: Exception) -> None:
        if isinstance(error, ApiError) and error.gone:
            return  # 410 Gone: the informer lists again, and reports what changed meanwhile
        if self._failure is None:
            self._failure = error
        self._woken.set()

    def _raise_failure(self) -> None:
        if self._failure is not None:
            raise _as_api_error(self._failure)

    async def start(self) -> None:
        """Start the informers and wait until each has listed once; raise the first failure
        (an `ApiError` when the API server cannot be reached or refuses)."""
        _INFORMER_LOG.addFilter(_quiet)
        self._tasks = [asyncio.create_task(informer.run()) for informer in self._informers]
        while True:
            self._woken.clear()
            self._raise_failure()
            if all(
                informer.synced.is_set()
                or (informer is self._switches and self._switches_forbidden)
                for informer in self._informers
            ):
                break
            await self._woken.wait()
        self._dirty.clear()

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        _INFORMER_LOG.removeFilter(_quiet)

    def look_again(self, key: str, after: float | None) -> None:
        """Hand `key` out again `after` seconds from now, even if nothing changes (None: only
        on a change)."""
        if after is None:
            self._due.pop(key, None)
        else:
            self._due[key] = asyncio.get_running_loop().time() + after

    async def changes(self) -> set[str]:
        """The DaemonSets whose rollout may have changed since the last call, once at least one
        has (changed objects, or a `look_again` come due); raise the failure of an informer."""
        loop = asyncio.get_running_loop()
        while True:
            self._woken.clear()
            self._raise_failure()
            if self._dirty or self._due_now(loop.time()):
                break
            timeout = min(self._due.values()) - loop.time() if self._due else None
            # `asyncio.timeout`, not `wait_for`: on Python 3.11 a cancellation (Ctrl-C) that
            # comes as the event is set is lost in `wait_for`, and the command would not end.
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(timeout):
                    await self._woken.wait()
        await asyncio.sleep(LIST.settle_seconds)
        self._raise_failure()
        due = self._due_now(loop.time())
        for key in due:
            del self._due[key]
        changed, self._dirty = self._dirty | due, set()
        return changed

    def _due_now(self, now: float) -> set[str]:
        return {key for key, when in self._due.items() if when <= now}


# The informers log their retries for a controller's operators; here a failure ends the command
# with its own one-line message instead, and logging's last resort would print both.
_INFORMER_LOG = logging.getLogger(Informer.__module__)


def _quiet(record: logging.LogRecord) -> bool:
    return False


def _as_api_error(error: Exception) -> Exception:
    """A failure to reach the API server as the `ApiError` every command reports; another
    failure (a bug) as it is."""
    if isinstance(error, OSError | TimeoutError):
        return ApiError(0, "Unreachable", f"{type(error).__name__}: {error}")
    return error
