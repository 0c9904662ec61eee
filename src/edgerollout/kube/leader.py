"""Leader election on a `coordination.k8s.io` Lease, as client-go's leaderelection does it.

Two controller replicas run; only the holder of the Lease writes. A replica takes the Lease when
the record it last saw has not changed for a whole lease duration (measured on its own monotonic
clock, so clock skew between machines does not matter), renews it every retry period, and gives
up the moment it has not renewed for the renew deadline: `is_leader` turns False at that instant,
before any renewal attempt fails, and every write checks it. On a clean shutdown the holder
releases the Lease so the standby takes over at once instead of after a lease duration.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import logging
import time
from collections.abc import Callable, Coroutine
from typing import Any

from edgerollout.kube.api import LEASES, Api, ApiError
from edgerollout.logfields import LogFields
from edgerollout.settings import CONTROLLER

log = logging.getLogger(__name__)


class LeadershipLost(RuntimeError):
    """The Lease could not be renewed in time: leading has stopped (every write with it)."""


def _now_micro() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class LeaderElector:
    def __init__(
        self,
        api: Api,
        *,
        namespace: str,
        name: str,
        identity: str,
        lease_duration: float = CONTROLLER.lease_duration,
        renew_deadline: float = CONTROLLER.renew_deadline,
        retry_period: float = CONTROLLER.retry_period,
        on_change: Callable[[bool], None] | None = None,
    ) -> None:
        self.api = api
        self.namespace = namespace
        self.name = name
        self.identity = identity
        self.lease_duration = lease_duration
        self.renew_deadline = renew_deadline
        self.retry_period = retry_period
        self.on_change = on_change or (lambda leading: None)
        self._renewed_at: float | None = None
        self._observed: tuple[Any, ...] | None = None
        self._observed_at = 0.0
        self._lease: dict[str, Any] | None = None
        self.released = False

    @property
    def lease_key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def is_leader(self) -> bool:
        renewed = self._renewed_at
        return renewed is not None and time.monotonic() - renewed < self.renew_deadline

    def _set_leader(self, renewed_at: float | None) -> None:
        was = self._renewed_at is not None
        self._renewed_at = renewed_at
        if was != (renewed_at is not None):
            self.on_change(renewed_at is not None)

    async def _try_acquire_or_renew(self) -> bool:
        now = _now_micro()
        try:
            lease = await self.api.get(LEASES, self.name, namespace=self.namespace)
        except ApiError as error:
            if not error.not_found:
                raise
            return await self._create(now)

        spec = lease.get("spec") or {}
        holder = spec.get("holderIdentity") or ""
        record = (holder, spec.get("renewTime"), spec.get("leaseDurationSeconds"))
        if record != self._observed:
            # A record seen for the first time may have been renewed just before this replica
            # looked: it waits two retry periods longer than one that watched the holder renew
            # (which saw the last renewal at most one retry period late). So when a leader's
            # container crashes and is restarted at once, the standby takes over, not the
            # restarted process with its cold caches (design §10.6).
            first_sight = self._observed is None
            self._observed = record
            self._observed_at = time.monotonic() + (2 * self.retry_period if first_sight else 0.0)
        duration = float(spec.get("leaseDurationSeconds") or self.lease_duration)
        if holder and holder != self.identity and time.monotonic() - self._observed_at < duration:
            return False  # held by another replica that renewed within a lease duration
        transitions = int(spec.get("leaseTransitions") or 0)
        new_spec = dict(spec)
        new_spec.update(
            holderIdentity=self.identity,
            leaseDurationSeconds=max(1, round(self.lease_duration)),
            renewTime=now,
        )
        if holder != self.identity:
            new_spec["acquireTime"] = now
            new_spec["leaseTransitions"] = transitions + 1
        lease["spec"] = new_spec
        try:
            # The lease's resourceVersion makes this a compare-and-swap: 409 if it moved meanwhile.
            self._lease = await self.api.replace(LEASES, self.name, lease, namespace=self.namespace)
        except ApiError as error:
            if error.conflict:
                return False
            raise
        return True

    async def _create(self, now: str) -> bool:
        """Create the Lease, held by this replica; False when another created it first."""
        body = {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": self.name, "namespace": self.namespace},
            "spec": {
                "holderIdentity": self.identity,
                "leaseDurationSeconds": max(1, round(self.lease_duration)),
                "acquireTime": now,
                "renewTime": now,
                "leaseTransitions": 0,
            },
        }
        try:
            self._lease = await self.api.create(LEASES, body, namespace=self.namespace)
        except ApiError as error:
            if error.conflict:  # someone else created it first
                return False
            raise
        return True

    async def _attempt(self) -> bool:
        try:
            # asyncio.timeout, not wait_for: on Python 3.11 wait_for can swallow a cancellation
            # that arrives as the attempt completes, and a stopping replica would keep renewing.
            async with asyncio.timeout(self.retry_period * 2):
                return await self._try_acquire_or_renew()
        except (ApiError, TimeoutError) as error:
            log.warning(
                "could not take or renew the lease",
                extra=LogFields(lease=self.lease_key, error=str(error)),
            )
            return False

    async def run(self, lead: Callable[[], Coroutine[Any, Any, None]]) -> None:
        """Wait for the Lease, then run `lead()` while renewing; raise LeadershipLost if it lapses."""
        while not await self._attempt():  # noqa: ASYNC110 - retrying on a period is the protocol
            await asyncio.sleep(self.retry_period)
        started = time.monotonic()
        self._set_leader(started)
        log.info("became leader", extra=LogFields(lease=self.lease_key, identity=self.identity))
        leading = asyncio.create_task(lead(), name="leading")
        try:
            while True:
                done, _ = await asyncio.wait({leading}, timeout=self.retry_period)
                if done:
                    try:
                        leading.result()
                    except LeadershipLost:
                        # Its workers found the Lease lapsed: this replica leads no more.
                        self._set_leader(None)
                        raise
                    return
                attempt_started = time.monotonic()
                renewed = await self._attempt()
                if renewed and self.is_leader:
                    self._set_leader(attempt_started)
                elif not self.is_leader:
                    # Past the renew deadline writes have stopped; a late success does not undo
                    # that: this replica steps down (and exits), as client-go's do.
                    self._set_leader(None)
                    raise LeadershipLost(
                        f"could not renew lease {self.namespace}/{self.name} "
                        f"within {self.renew_deadline:.0f} s"
                    )
        finally:
            if not leading.done():
                leading.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await leading

    async def release(self) -> None:
        """Give the Lease up (on shutdown) so another replica can take it at once."""
        if self._lease is None or not self.is_leader:
            return
        self.released = True
        self._set_leader(None)
        lease = dict(self._lease)
        spec = dict(lease.get("spec") or {})
        spec.update(holderIdentity="", leaseDurationSeconds=1, renewTime=_now_micro())
        lease["spec"] = spec
        try:
            await self.api.replace(LEASES, self.name, lease, namespace=self.namespace)
        except ApiError as error:
            log.warning(
                "could not release the lease",
                extra=LogFields(lease=self.lease_key, error=str(error)),
            )
