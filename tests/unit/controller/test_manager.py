"""The controller process's leading loop: it never ends quietly while it should be working."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import uuid
from typing import Any

import pytest
from prometheus_client import REGISTRY

from edgerollout.cli.logging_setup import structured_fields
from edgerollout.controller.manager import Controller, default_identity
from edgerollout.controller.reconciler import NotLeader, Outcome
from edgerollout.kube.api import LEASES, PODS
from edgerollout.kube.informer import Informer
from edgerollout.kube.leader import LeadershipLost
from edgerollout.settings import ControllerSettings, WorkQueueSettings
from tests.unit.kube.fake_api import FakeApi, unreachable
from tests.unit.kube.running import until


async def test_workers_stopped_by_lost_leadership_end_the_term_as_a_lost_lease() -> None:
    # Every worker that meets NotLeader stops; once all have, nothing reconciles any more. The
    # term must then end as on a lost Lease (the replica stands again), not return as if the
    # process had been asked to stop (exit 0, nothing in the log saying why).
    controller = Controller(ControllerSettings(workers=2), FakeApi())  # type: ignore[arg-type]
    for informer in controller.cache.informers:
        informer.synced.set()
    reconciled: list[str] = []

    async def not_leader(key: str) -> Outcome:
        reconciled.append(key)
        raise NotLeader("not the leader: refusing to write")

    controller.reconciler.reconcile = not_leader  # type: ignore[method-assign]
    controller.queue.add("ns/a")
    controller.queue.add("ns/b")

    with pytest.raises(LeadershipLost, match="stopped writing: this replica is not the leader"):
        await asyncio.wait_for(controller.lead(), timeout=5)
    assert sorted(reconciled) == ["ns/a", "ns/b"]


async def test_what_the_caches_listed_is_kept_out_of_the_garbage_collectors_scans(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    controller = Controller(ControllerSettings(workers=1), FakeApi())  # type: ignore[arg-type]
    frozen_when_synced: list[bool] = []
    monkeypatch.setattr(
        "edgerollout.controller.manager.gc.freeze",
        lambda: frozen_when_synced.append(controller.cache.synced),
    )

    async def done(key: str) -> Outcome:
        controller.queue.shut_down()
        return Outcome(plan=None)

    controller.reconciler.reconcile = done  # type: ignore[method-assign]
    leading = asyncio.create_task(controller.lead())
    await asyncio.sleep(0.05)
    assert frozen_when_synced == []  # nothing listed yet
    for informer in controller.cache.informers:
        informer.synced.set()
    controller.queue.add("ns/a")
    await asyncio.wait_for(leading, timeout=5)

    assert frozen_when_synced == [True]


async def test_a_failed_reconcile_is_logged_with_its_daemonset_error_and_retry_delay(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr("edgerollout.controller.manager.gc.freeze", lambda: None)
    controller = Controller(ControllerSettings(workers=1), FakeApi())  # type: ignore[arg-type]
    for informer in controller.cache.informers:
        informer.synced.set()

    async def fail(key: str) -> Outcome:
        controller.queue.shut_down()
        raise RuntimeError("the API server said no")

    controller.reconciler.reconcile = fail  # type: ignore[method-assign]
    controller.queue.add("ns/a")
    with caplog.at_level(logging.INFO, logger="edgerollout.controller"):
        await asyncio.wait_for(controller.lead(), timeout=5)

    assert [(r.levelname, r.getMessage(), structured_fields(r)) for r in caplog.records] == [
        ("INFO", "caches synced; reconciling the opted-in DaemonSets", {"count": 0}),
        (
            "WARNING",
            "reconcile failed; retrying",
            {"daemonset": "ns/a", "error": "the API server said no", "retry_after": 0.005},
        ),
    ]


def test_default_identity_is_the_host_and_a_new_uuid_for_each_process() -> None:
    # A container restarted in its pod has the same host name and pid 1 again: only a fresh
    # UUID keeps it from taking its dead predecessor's Lease at once.
    first, second = default_identity(), default_identity()
    host = socket.gethostname()

    assert first != second
    for identity in (first, second):
        name, _, suffix = identity.rpartition("_")
        assert (name, str(uuid.UUID(suffix))) == (host, suffix)


def test_the_size_of_each_cache_is_a_metric() -> None:
    controller = Controller(ControllerSettings(workers=1), FakeApi())  # type: ignore[arg-type]
    for uid, keys in (("uid-web", ["default/web-a", "default/web-b"]), ("uid-api", ["default/a"])):
        informer: Informer[Any] = Informer(FakeApi(), PODS, lambda obj: obj)
        informer.store = dict.fromkeys(keys)
        controller.cache.pods[uid] = informer
    controller.cache.nodes.store = {"edge-1": None}  # type: ignore[dict-item]

    sizes = {
        resource: REGISTRY.get_sample_value("edgerollout_cache_objects", {"resource": resource})
        for resource in ("daemonsets", "pods", "controllerrevisions", "nodes", "jobs")
    }

    assert sizes == {
        "daemonsets": 0.0,
        "pods": 3.0,
        "controllerrevisions": 0.0,
        "nodes": 1.0,
        "jobs": 0.0,
    }


async def test_a_replica_whose_lease_lapsed_stands_again_in_process_and_leads_again() -> None:
    # The API server went away past the renew deadline: leading stopped. The process does not
    # exit (its caches stay warm): it stands again, and leads again once the API server answers.
    api = FakeApi()
    settings = ControllerSettings(
        leader_elect=True, lease_duration=0.3, renew_deadline=0.2, retry_period=0.05
    )
    controller = Controller(settings, api)  # type: ignore[arg-type]
    elector = controller.elector
    assert elector is not None
    terms: list[float] = []
    leading = asyncio.Event()

    async def lead() -> None:
        terms.append(asyncio.get_running_loop().time())
        leading.set()
        await asyncio.Event().wait()

    controller.lead = lead  # type: ignore[method-assign]
    standing = asyncio.create_task(controller._stand(elector))
    try:
        await asyncio.wait_for(leading.wait(), 1.0)
        leading.clear()
        api.fail("get", LEASES, unreachable(), times=None)
        await until(lambda: not elector.is_leader, what="the lease lapsed")
        await asyncio.sleep(0.1)
        assert not standing.done()
        assert len(terms) == 1

        api.clear_failures()
        await asyncio.wait_for(leading.wait(), 1.0)

        assert len(terms) == 2
        assert elector.is_leader
    finally:
        standing.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await standing


async def test_reconciles_that_failed_are_retried_once_the_caches_reach_the_api_again() -> None:
    settings = ControllerSettings(queue=WorkQueueSettings(base_delay=60.0, max_delay=300.0))
    controller = Controller(settings, FakeApi())  # type: ignore[arg-type]
    controller.queue.add_rate_limited("ns/a")
    assert len(controller.queue) == 0

    controller.cache.reconnect.answered()

    assert len(controller.queue) == 1
    controller.queue.shut_down()


async def test_a_daemonset_over_10000_nodes_is_reconciled_again_only_after_its_pause(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A plan over 10,000 nodes rests its key 0.2 s: the events of that time bring one reconcile
    # at its end, not one each.
    monkeypatch.setattr("edgerollout.controller.manager.gc.freeze", lambda: None)
    controller = Controller(ControllerSettings(workers=1), FakeApi())  # type: ignore[arg-type]
    assert controller.settings.reconcile.pause_after(10_000) == pytest.approx(0.2)
    for informer in controller.cache.informers:
        informer.synced.set()
    loop = asyncio.get_running_loop()
    started: list[float] = []

    async def planned(key: str) -> Outcome:
        started.append(loop.time())
        if len(started) == 2:
            controller.queue.shut_down()
        return Outcome(plan=None, nodes=10_000)

    controller.reconciler.reconcile = planned  # type: ignore[method-assign]
    controller.queue.add("ns/a")
    leading = asyncio.create_task(controller.lead())
    await until(lambda: len(started) == 1, what="the first reconcile")
    for _ in range(5):
        controller.queue.add("ns/a")
        await asyncio.sleep(0.02)
    assert len(started) == 1

    await asyncio.wait_for(leading, timeout=5)
    assert len(started) == 2
    assert started[1] - started[0] >= 0.19


def test_the_pause_grows_with_the_nodes_up_to_its_cap() -> None:
    settings = ControllerSettings().reconcile
    assert settings.pause_after(0) == 0.0
    assert settings.pause_after(1_000) == pytest.approx(0.02)
    assert settings.pause_after(100_000) == settings.pace_max_seconds == 0.5
