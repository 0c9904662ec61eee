"""Lease-based leader election: who writes, when another may take over, and when to stop.

Durations are a few tenths of a second so that takeovers and lapses happen within a test; the
fake API answers at once, so only the elector's own timing is measured.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import pytest

from edgerollout.kube.api import LEASES, ApiError, Resource
from edgerollout.kube.leader import LeaderElector, LeadershipLost

from .fake_api import JSON, Call, FakeApi, conflict, unreachable
from .running import until

NAMESPACE = "kube-system"
NAME = "edgerollout-controller"
LEASE_DURATION = 0.3
RENEW_DEADLINE = 0.2
RETRY_PERIOD = 0.05


@dataclass
class Replica:
    """One controller replica: its elector, and what its leading coroutine went through."""

    elector: LeaderElector
    started_leading: asyncio.Event = field(default_factory=asyncio.Event)
    leading_cancelled: bool = False
    transitions: list[bool] = field(default_factory=list)
    task: asyncio.Task[None] | None = None

    async def lead(self) -> None:
        self.started_leading.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            self.leading_cancelled = True
            raise

    def start(self) -> asyncio.Task[None]:
        self.task = asyncio.create_task(self.elector.run(self.lead))
        return self.task

    async def stop(self) -> None:
        """Cancel `run()`, again if a cancellation is lost (see the xfail test below), and wait."""
        task = self.task
        if task is None:
            return
        while not task.done():
            task.cancel()
            await asyncio.wait({task}, timeout=RETRY_PERIOD)
        with contextlib.suppress(asyncio.CancelledError, LeadershipLost):
            task.result()


TIMING = {
    "lease_duration": LEASE_DURATION,
    "renew_deadline": RENEW_DEADLINE,
    "retry_period": RETRY_PERIOD,
}


def elector(
    api: FakeApi,
    identity: str,
    timing: Mapping[str, float] = TIMING,
    on_change: Callable[[bool], None] | None = None,
) -> LeaderElector:
    """An elector for this file's Lease, with this file's short durations unless told."""
    return LeaderElector(
        api, namespace=NAMESPACE, name=NAME, identity=identity, on_change=on_change, **timing
    )


def replica(api: FakeApi, identity: str) -> Replica:
    transitions: list[bool] = []
    return Replica(
        elector=elector(api, identity, on_change=transitions.append), transitions=transitions
    )


@contextlib.asynccontextmanager
async def replicas(api: FakeApi, *identities: str) -> AsyncIterator[list[Replica]]:
    started = [replica(api, identity) for identity in identities]
    try:
        yield started
    finally:
        for one in started:
            await one.stop()


def lease_spec(api: FakeApi) -> dict[str, Any]:
    lease = api.stored(LEASES, NAME, namespace=NAMESPACE)
    assert lease is not None, "no Lease stored"
    spec: dict[str, Any] = lease["spec"]
    return spec


def seconds_since(start: float) -> float:
    return time.monotonic() - start


async def wait_leading(one: Replica, within: float = 1.0) -> None:
    await asyncio.wait_for(one.started_leading.wait(), within)


def assert_never_led(one: Replica) -> None:
    """`one` has not led: its leading coroutine never started and it was never told it leads."""
    assert not one.started_leading.is_set()
    assert not one.elector.is_leader
    assert one.transitions == []


@contextlib.asynccontextmanager
async def leader_and_standby(api: FakeApi) -> AsyncIterator[tuple[Replica, Replica]]:
    """replica-a leading, and replica-b started after it."""
    async with replicas(api, "replica-a", "replica-b") as (a, b):
        await start_leading(a)
        b.start()
        yield a, b


async def start_leading(one: Replica) -> asyncio.Task[None]:
    """Start `one` and wait until it leads; its `run()` task."""
    task = one.start()
    await wait_leading(one)
    return task


async def test_replica_creates_the_missing_lease_and_leads() -> None:
    api = FakeApi()
    async with replicas(api, "replica-a") as (a,):
        await start_leading(a)

        assert a.elector.is_leader
        assert a.transitions == [True]
        creates = api.calls_to("create", LEASES)
        assert len(creates) == 1
        assert creates[0].namespace == NAMESPACE
        spec = lease_spec(api)
        assert spec["holderIdentity"] == "replica-a"
        assert spec["leaseTransitions"] == 0
        await until(lambda: len(api.calls_to("replace", LEASES)) >= 2, what="renewals")
        assert lease_spec(api)["holderIdentity"] == "replica-a"


async def test_standby_waits_while_the_leader_renews() -> None:
    api = FakeApi()
    async with leader_and_standby(api) as (a, b):
        await asyncio.sleep(LEASE_DURATION * 2)

        assert_never_led(b)
        assert a.elector.is_leader
        assert lease_spec(api)["holderIdentity"] == "replica-a"


async def test_standby_takes_over_a_lease_duration_after_the_record_stops_changing() -> None:
    api = FakeApi()
    async with leader_and_standby(api) as (a, b):
        await asyncio.sleep(LEASE_DURATION)
        acquired_before = lease_spec(api)["acquireTime"]

        await a.stop()  # crashes: no release, the record just stops changing
        stopped = time.monotonic()
        await wait_leading(b)
        waited = seconds_since(stopped)

        # The last renewal happened at most a retry period before the crash. A Lease holds whole
        # seconds (at least 1), so the standby waits the written duration, not the configured 0.3.
        written = max(1, round(LEASE_DURATION))
        assert lease_spec(api)["leaseDurationSeconds"] == written
        assert written - 2 * RETRY_PERIOD <= waited < written + 4 * RETRY_PERIOD
        assert b.elector.is_leader
        spec = lease_spec(api)
        assert spec["holderIdentity"] == "replica-b"
        assert spec["leaseTransitions"] == 1
        assert spec["acquireTime"] != acquired_before


async def test_the_standby_takes_over_before_a_replica_that_started_after_the_crash(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A leader's container crashes and the kubelet starts it again at once: the restarted
    # process sees the record before the standby's next look has seen its last renewal.
    now = [0.0]
    monkeypatch.setattr("edgerollout.kube.leader.time.monotonic", lambda: now[0])
    api = FakeApi()

    timing = {"lease_duration": 15, "renew_deadline": 10, "retry_period": 2}
    leader, standby, restarted = (
        elector(api, identity, timing) for identity in ("a", "b", "a-restarted")
    )

    async def attempt(one: LeaderElector, at: float) -> bool:
        now[0] = at
        return await one._try_acquire_or_renew()

    assert await attempt(leader, 0.0)
    assert not await attempt(standby, 0.1)
    assert await attempt(leader, 1.9)  # its last renewal: it crashes at 2.0
    assert not await attempt(restarted, 2.0)  # first sight
    assert not await attempt(standby, 3.8)  # sees the last renewal, 1.9 s late

    assert not await attempt(restarted, 17.1)  # 15.1 s after its first sight
    assert await attempt(standby, 18.9)  # 15.1 s after the renewal it saw
    assert lease_spec(api)["holderIdentity"] == "b"


async def test_leadership_lapses_at_the_renew_deadline_when_renewals_fail() -> None:
    api = FakeApi()
    async with replicas(api, "replica-a") as (a,):
        task = await start_leading(a)
        last_renewals = len(api.calls_to("replace", LEASES))
        await until(lambda: len(api.calls_to("replace", LEASES)) > last_renewals, what="renewal")
        renewed = time.monotonic()
        api.fail("get", LEASES, unreachable(), times=None)
        assert a.elector.is_leader

        await until(lambda: not a.elector.is_leader, what="leadership lapsed")
        lapsed_after = seconds_since(renewed)

        assert RENEW_DEADLINE - 2 * RETRY_PERIOD <= lapsed_after < RENEW_DEADLINE + 2 * RETRY_PERIOD
        with pytest.raises(LeadershipLost):
            await asyncio.wait_for(task, 1.0)


async def test_run_raises_leadership_lost_and_cancels_the_leading_coroutine() -> None:
    api = FakeApi()
    async with replicas(api, "replica-a") as (a,):
        task = await start_leading(a)
        api.fail("get", LEASES, unreachable(), times=None)

        with pytest.raises(LeadershipLost, match=f"could not renew lease {NAMESPACE}/{NAME}"):
            await asyncio.wait_for(task, 1.0)

        assert a.leading_cancelled
        assert not a.elector.is_leader
        assert a.transitions == [True, False]


async def test_conflict_on_replace_does_not_acquire() -> None:
    api = FakeApi()
    api.put(
        LEASES,
        {
            "metadata": {"name": NAME, "namespace": NAMESPACE},
            "spec": {"holderIdentity": "", "leaseDurationSeconds": 1, "leaseTransitions": 3},
        },
    )
    api.fail("replace", LEASES, conflict(LEASES, NAME, "the object has been modified"), times=None)
    async with replicas(api, "replica-b") as (b,):
        b.start()
        await until(lambda: len(api.calls_to("replace", LEASES)) >= 3, what="three attempts")

        assert_never_led(b)

        api.clear_failures()
        await wait_leading(b)
        assert lease_spec(api)["holderIdentity"] == "replica-b"
        assert lease_spec(api)["leaseTransitions"] == 4


class RacingApi(FakeApi):
    """Another replica writes the Lease right after each read: every replace comes too late."""

    async def get(self, resource: Resource, name: str, *, namespace: str | None = None) -> JSON:
        seen = await super().get(resource, name, namespace=namespace)
        self.put(
            LEASES, {**seen, "spec": {"holderIdentity": "replica-c", "leaseDurationSeconds": 1}}
        )
        return seen


async def test_lease_changed_between_read_and_write_does_not_acquire() -> None:
    api = RacingApi()
    api.put(
        LEASES,
        {
            "metadata": {"name": NAME, "namespace": NAMESPACE},
            "spec": {"holderIdentity": "", "leaseDurationSeconds": 1},
        },
    )
    async with replicas(api, "replica-b") as (b,):
        b.start()
        await until(lambda: len(api.calls_to("replace", LEASES)) >= 1, what="an attempt")
        await asyncio.sleep(RETRY_PERIOD * 3)

        assert_never_led(b)
        assert lease_spec(api)["holderIdentity"] == "replica-c"


class LapsingApi(FakeApi):
    """The Lease cannot be read while `elector` still counts as leader; from its lapse on, it can."""

    elector: LeaderElector | None = None

    async def get(self, resource: Resource, name: str, *, namespace: str | None = None) -> JSON:
        if self.elector is not None and self.elector.is_leader:
            self.calls.append(Call("get", resource, name, namespace))
            raise unreachable()
        self.elector = None
        return await super().get(resource, name, namespace=namespace)


async def test_renewal_that_succeeds_after_the_deadline_passed_still_ends_leadership() -> None:
    api = LapsingApi()
    async with replicas(api, "replica-a") as (a,):
        task = await start_leading(a)
        api.elector = a.elector
        await until(lambda: not a.elector.is_leader, what="leadership lapsed")
        await until(
            lambda: task.done() or a.elector.is_leader, what="run ended or leadership resumed"
        )

        assert not a.elector.is_leader, "leadership resumed after it had lapsed"
        with pytest.raises(LeadershipLost):
            await task
        assert a.leading_cancelled
        assert a.transitions == [True, False]


class CancelDuringRenewalApi(FakeApi):
    """Cancels `victim` from inside a Lease write that then completes at once.

    This is a shutdown (`task.cancel()`) arriving while a renewal is being answered.
    """

    victim: asyncio.Task[None] | None = None

    async def replace(
        self, resource: Resource, name: str, body: JSON, *, namespace: str | None = None
    ) -> JSON:
        if self.victim is not None:
            self.victim.cancel()
            self.victim = None
        return await super().replace(resource, name, body, namespace=namespace)


async def test_cancelling_run_while_a_renewal_is_answered_stops_it() -> None:
    api = CancelDuringRenewalApi()
    async with replicas(api, "replica-a") as (a,):
        task = await start_leading(a)
        renewals = len(api.calls_to("replace", LEASES))

        api.victim = task
        await until(lambda: len(api.calls_to("replace", LEASES)) > renewals, what="renewal")
        await until(lambda: task.done(), what="run() stopped after its cancellation", within=0.5)

        assert task.cancelled()
        assert a.leading_cancelled


async def test_conflict_on_create_means_another_replica_won() -> None:
    api = FakeApi()
    api.fail("create", LEASES, ApiError(409, "AlreadyExists", "leases already exists"), times=None)
    async with replicas(api, "replica-a") as (a,):
        a.start()
        await until(lambda: len(api.calls_to("create", LEASES)) >= 2, what="two attempts")

        assert_never_led(a)


async def test_release_empties_the_holder_so_the_standby_takes_over_at_once() -> None:
    api = FakeApi()
    async with replicas(api, "replica-a", "replica-b") as (a, b):
        await start_leading(a)
        await a.stop()
        await a.elector.release()

        spec = lease_spec(api)
        assert spec["holderIdentity"] == ""
        assert spec["leaseDurationSeconds"] == 1
        assert not a.elector.is_leader
        assert a.transitions == [True, False]

        started = time.monotonic()
        b.start()
        await wait_leading(b)
        assert seconds_since(started) < LEASE_DURATION / 2
        assert lease_spec(api)["holderIdentity"] == "replica-b"


async def test_release_by_a_replica_that_does_not_lead_writes_nothing() -> None:
    api = FakeApi()
    elector = replica(api, "replica-a").elector

    await elector.release()

    assert api.calls == []


async def test_a_leader_that_lapsed_takes_its_own_lease_back_as_soon_as_the_api_answers() -> None:
    # The API server was away past the renew deadline: the leader stopped. Standing again in the
    # same process, it finds the Lease still naming it and renews at its first answered attempt,
    # without waiting out a lease duration as a stranger would, and without a new transition.
    api = FakeApi()
    async with replicas(api, "replica-a", "replica-b") as (a, b):
        task = await start_leading(a)
        b.start()
        api.fail("get", LEASES, unreachable(), times=None)
        with pytest.raises(LeadershipLost):
            await asyncio.wait_for(task, 1.0)
        a.started_leading.clear()

        a.start()
        api.clear_failures()
        back = time.monotonic()
        await wait_leading(a)

        assert seconds_since(back) < LEASE_DURATION / 2
        assert a.transitions == [True, False, True]
        assert lease_spec(api)["holderIdentity"] == "replica-a"
        assert lease_spec(api)["leaseTransitions"] == 0
        assert_never_led(b)
