"""The dashboard's one view of the fleet: `list --watch`'s watches, read once for every page.

One `RolloutWatch` (the informers of `list --watch`: DaemonSets, pods, ControllerRevisions and
Nodes, watched, never polled) keeps the index; each batch of changes it hands out is read once
into each changed DaemonSet's `ListedStatus` (what `list` and `status` read), and every page
that shows one of those DaemonSets is woken (`Subscription`). A DaemonSet is read at most once a
`DASHBOARD.read_interval_seconds`: a change sooner is read when that time has passed. A page
takes the newest reading when it is ready for it, so a slow page skips readings instead of
queueing them: the server's memory is one reading per DaemonSet, and one set of pending names
per page.

When a list or a watch fails (the API server unreachable, a kubeconfig without the rights to
list), the readings stay as they were, every page is told (`connection`), and the watches start
again after a back-off (`DASHBOARD.reconnect_seconds`, doubling); once they have listed again,
every page is told and every DaemonSet read again.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from datetime import UTC, datetime

from edgerollout.cli.daemonset_command import describe_api_error
from edgerollout.cli.dashboard.documents import SeenSince, cluster_since, podless_nodes
from edgerollout.cli.list_command import listed_status
from edgerollout.cli.list_render import ListedStatus
from edgerollout.cli.list_watch import RolloutWatch
from edgerollout.cli.rollout_read import RolloutViews, listing_order
from edgerollout.kube.api import Api, ApiError
from edgerollout.settings import DASHBOARD

log = logging.getLogger("edgerollout.dashboard")


@dataclass(frozen=True, slots=True, kw_only=True)
class Reading:
    """A DaemonSet as last read: `list`'s reading, the views it was read from, and when each of
    its cells entered its state."""

    listed: ListedStatus
    views: RolloutViews
    since: dict[str, datetime]


@dataclass(frozen=True, slots=True, kw_only=True)
class Connection:
    """Whether the watches stand (`ok`), and if not, what failed, as `list` would say it."""

    ok: bool
    message: str = ""


class Subscription:
    """A page's interest: the DaemonSets it shows (None: every one, the home page), those that
    changed since it last looked, and whether the connection did."""

    def __init__(self, key: str | None) -> None:
        self.key = key
        self.pending: set[str] = set()
        self.connection_changed = False
        self.woken = asyncio.Event()

    def tell(self, keys: set[str]) -> None:
        wanted = keys if self.key is None else keys & {self.key}
        if wanted:
            self.pending |= wanted
            self.woken.set()

    def take(self) -> tuple[set[str], bool]:
        """The DaemonSets changed since the last call, and whether the connection changed."""
        keys, self.pending = self.pending, set()
        connection, self.connection_changed = self.connection_changed, False
        self.woken.clear()
        return keys, connection


class Fleet:
    """The readings of every opted-in DaemonSet of `namespace` (None: of all), kept by `run`."""

    def __init__(self, api: Api, *, namespace: str | None) -> None:
        self.api = api
        self.namespace = namespace
        self.connection = Connection(ok=False, message="connecting to the API server")
        self._readings: dict[str, Reading] = {}
        self._read_at: dict[str, float] = {}
        self._seen: dict[str, SeenSince] = {}
        self._subscriptions: set[Subscription] = set()

    def shown(self) -> list[str]:
        """The DaemonSets read, in `list`'s order."""
        return sorted(self._readings, key=listing_order)

    def reading(self, key: str) -> Reading | None:
        return self._readings.get(key)

    def subscribe(self, key: str | None) -> Subscription:
        subscription = Subscription(key)
        self._subscriptions.add(subscription)
        return subscription

    def unsubscribe(self, subscription: Subscription) -> None:
        self._subscriptions.discard(subscription)

    def on_a_page(self, key: str) -> bool:
        """Whether a page shows the DaemonSet `key` now."""
        return any(subscription.key == key for subscription in self._subscriptions)

    async def run(self) -> None:
        """Keep the readings until cancelled, starting the watches again after each failure."""
        delay = DASHBOARD.reconnect_seconds
        while True:
            watch = RolloutWatch(self.api, namespace=self.namespace)
            try:
                await watch.start()
                self._read_at.clear()  # everything is read again at once
                self._connected(True, "")
                delay = DASHBOARD.reconnect_seconds
                changed = set(watch.index.daemonsets()) | set(self._readings)
                while True:
                    self._read(watch, changed)
                    changed = await watch.changes()
            except ApiError as error:
                message = describe_api_error(error)
                log.warning("the watches failed: %s; trying again in %.0f s", message, delay)
                self._connected(False, f"{message} (trying again in {delay:.0f} s)")
            finally:
                await watch.stop()
            await asyncio.sleep(delay)
            delay = min(delay * 2, DASHBOARD.reconnect_ceiling_seconds)

    def _connected(self, ok: bool, message: str) -> None:
        self.connection = Connection(ok=ok, message=message)
        for subscription in self._subscriptions:
            subscription.connection_changed = True
            subscription.woken.set()

    def _read(self, watch: RolloutWatch, keys: set[str]) -> None:
        now = datetime.now(UTC)
        clock = asyncio.get_running_loop().time()
        read = set()
        for key in keys:
            rollout = watch.index.rollout(key)
            if rollout is None:  # deleted, or no longer opted in
                self._readings.pop(key, None)
                self._read_at.pop(key, None)
                self._seen.pop(key, None)
                watch.look_again(key, None)
                read.add(key)
                continue
            last = self._read_at.get(key)
            if last is not None and clock - last < DASHBOARD.read_interval_seconds:
                watch.look_again(key, last + DASHBOARD.read_interval_seconds - clock)
                continue
            self._read_at[key] = clock
            read.add(key)
            listed = listed_status(rollout, at=now)
            seen = self._seen.setdefault(key, SeenSince())
            podless = podless_nodes(listed.status, rollout.views)
            known = cluster_since(listed.status.rows, rollout.views, podless)
            since = dict(seen.update(listed.status.rows, now=now, podless=podless, known=known))
            self._readings[key] = Reading(listed=listed, views=rollout.views, since=since)
            watch.look_again(key, listed.status.look_again_after)
        for subscription in self._subscriptions:
            subscription.tell(read)
