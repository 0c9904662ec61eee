"""The controller process: caches, work queue, workers, leader election, health and metrics.

Start-up: connect, start the caches, serve /healthz, /readyz and /metrics. Then, with leader
election, wait for the Lease; without it, lead at once. Leading means: wait until every cache has
listed, enqueue every opted-in DaemonSet once, and run the workers. Losing the Lease stops every
write at once (the write guard reads the Lease's renew time) and ends the process with an error,
so its supervisor restarts it as a standby — the way client-go controllers behave. SIGTERM stops the
workers after their current reconcile, releases the Lease and exits 0.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import gc
import logging
import signal
import socket
import time
import uuid

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, generate_latest

from edgerollout.controller import metrics
from edgerollout.controller.cluster_cache import ClusterCache
from edgerollout.controller.pool_metrics import PoolNodes
from edgerollout.controller.reconciler import NotLeader, Reconciler
from edgerollout.controller.rollout_state import RolloutStates
from edgerollout.controller.workqueue import QueueShutDown, WorkQueue
from edgerollout.kube.api import (
    CONTROLLER_REVISIONS,
    DAEMONSETS,
    JOBS,
    NODES,
    PODS,
    ApiError,
    KubeApi,
)
from edgerollout.kube.leader import LeaderElector, LeadershipLost
from edgerollout.kube.recorder import EventRecorder
from edgerollout.logfields import LogFields
from edgerollout.settings import ControllerSettings

log = logging.getLogger("edgerollout.controller")


def default_identity() -> str:
    """This process's Lease holder name: the host (the pod's name in a pod) and a random UUID."""
    return f"{socket.gethostname()}_{uuid.uuid4()}"


class Controller:
    def __init__(self, settings: ControllerSettings, api: KubeApi) -> None:
        self.settings = settings
        self.api = api
        self.identity = settings.identity or default_identity()
        self.queue = WorkQueue(
            name=metrics.CONTROLLER,
            base_delay=settings.queue.base_delay,
            max_delay=settings.queue.max_delay,
        )
        self.states = RolloutStates(settings=settings.reconcile, clock=time.monotonic)
        self.cache = ClusterCache(
            api, namespace=settings.namespace, enqueue=self.queue.add, changes=self.states
        )
        for resource in (DAEMONSETS, PODS, CONTROLLER_REVISIONS, NODES, JOBS):
            metrics.CACHE_OBJECTS.labels(resource=resource.plural).set_function(
                functools.partial(self._cached, resource.plural)
            )
        self.elector: LeaderElector | None = None
        if settings.leader_elect:
            self.elector = LeaderElector(
                api,
                namespace=settings.leader_election_namespace,
                name=settings.leader_election_name,
                identity=self.identity,
                lease_duration=settings.lease_duration,
                renew_deadline=settings.renew_deadline,
                retry_period=settings.retry_period,
                on_change=self._on_leadership,
            )
        metrics.LEADER.labels(name=settings.leader_election_name).set(0)
        recorder = EventRecorder(api, instance=self.identity)
        self.reconciler = Reconciler(
            cache=self.cache,
            states=self.states,
            api=api,
            recorder=recorder,
            may_write=self.may_write,
            settings=settings,
        )
        self.pool_nodes = PoolNodes(self.cache, self.states)
        self.leading = False
        # Reconciles that failed while the API server was away are retried as soon as the caches
        # reach it again, not after their backoff (design §10.2).
        self.cache.reconnect.on_answered = self.queue.retry_failed

    def _on_leadership(self, leading: bool) -> None:
        metrics.LEADER.labels(name=self.settings.leader_election_name).set(1 if leading else 0)
        if leading:
            return
        lease = LogFields(lease=self.elector.lease_key) if self.elector is not None else None
        if self.elector is not None and self.elector.released:
            log.info("released the leader lease", extra=lease)
        else:
            log.error("lost the leader lease: every write stops now", extra=lease)

    def may_write(self) -> bool:
        if self.elector is None:
            return True
        return self.elector.is_leader

    async def _worker(self) -> None:
        while True:
            try:
                key = await self.queue.get()
            except QueueShutDown:
                return
            started = time.monotonic()
            result = "success"
            pause = 0.0
            try:
                outcome = await self.reconciler.reconcile(key)
            except asyncio.CancelledError:
                # Leading ended (the Lease lapsed): the key is free for the next term's workers.
                self.queue.done(key, seconds=time.monotonic() - started)
                raise
            except NotLeader:
                result = "error"
                self.queue.done(key, seconds=time.monotonic() - started)
                return
            except Exception as error:
                result = "error"
                metrics.RECONCILE_ERRORS.labels(controller=metrics.CONTROLLER).inc()
                delay = self.queue.add_rate_limited(key)
                log.warning(
                    "reconcile failed; retrying",
                    extra=LogFields(daemonset=key, error=str(error), retry_after=round(delay, 3)),
                )
            else:
                self.queue.forget(key)
                pause = self.settings.reconcile.pause_after(outcome.nodes)
                if outcome.requeue_after is not None:
                    result = "requeue_after"
                    self.queue.add_after(key, outcome.requeue_after)
            finally:
                elapsed = time.monotonic() - started
                metrics.RECONCILE_TIME.labels(controller=metrics.CONTROLLER).observe(elapsed)
                metrics.RECONCILE_TOTAL.labels(controller=metrics.CONTROLLER, result=result).inc()
            self.queue.done(key, seconds=elapsed, pause=pause)

    def _cached(self, plural: str) -> int:
        return self.cache.counts()[plural]

    async def lead(self) -> None:
        self.leading = True
        await self.cache.wait_synced()
        # Everything listed so far lives as long as the process: keep the cyclic garbage
        # collector from scanning it on every full collection (a tenth of a reconcile's time at
        # 1,000 pods, more with more). Objects made later are collected as usual.
        gc.freeze()
        log.info(
            "caches synced; reconciling the opted-in DaemonSets",
            extra=LogFields(count=len(self.cache.opted_in_keys())),
        )
        for key in self.cache.keys_to_reconcile():
            self.queue.add(key)
        async with asyncio.TaskGroup() as group:
            for index in range(self.settings.workers):
                group.create_task(self._worker(), name=f"worker-{index}")
        if not self.queue.shutting_down:
            # A worker stops only when the queue shuts down or a write found this replica no
            # longer leading. With every worker stopped nothing is reconciled any more: end as on
            # a lost Lease, so the supervisor restarts this replica as a standby.
            raise LeadershipLost("every worker stopped writing: this replica is not the leader")

    async def _stand(self, elector: LeaderElector) -> None:
        """Stand for the Lease and lead while it is held; when it lapses (the API server was out
        of reach past the renew deadline), every worker has stopped writing: stand again, with the
        caches still warm. The Lease still names this replica, so once the API server answers
        it renews at once, where a restarted process would wait out a lease duration as a
        stranger (design §10.6)."""
        while True:
            try:
                await elector.run(self.lead)
            except LeadershipLost as lost:
                self.leading = False
                log.warning(
                    "stepped down; standing for the lease again",
                    extra=LogFields(lease=elector.lease_key, error=str(lost)),
                )
                continue
            return

    async def serve_http(self) -> list[web.AppRunner]:
        async def healthz(_: web.Request) -> web.Response:
            return web.Response(text="ok")

        async def readyz(_: web.Request) -> web.Response:
            if not self.cache.synced:
                return web.Response(status=503, text="caches not synced")
            return web.Response(text="ok")

        async def metrics_handler(_: web.Request) -> web.Response:
            return web.Response(
                body=generate_latest(), headers={"Content-Type": CONTENT_TYPE_LATEST}
            )

        runners = []
        health = web.Application()
        health.router.add_get("/healthz", healthz)
        health.router.add_get("/readyz", readyz)
        served = [(health, self.settings.health_address)]
        if self.settings.metrics_address == self.settings.health_address:
            health.router.add_get("/metrics", metrics_handler)
        else:
            app = web.Application()
            app.router.add_get("/metrics", metrics_handler)
            served.append((app, self.settings.metrics_address))
        for app, address in served:
            runner = web.AppRunner(app, access_log=None)
            await runner.setup()
            await web.TCPSite(runner, address.host, address.port).start()
            runners.append(runner)
        return runners

    async def run(self) -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, stop.set)
        REGISTRY.register(self.pool_nodes)
        runners = await self.serve_http()
        informers = asyncio.create_task(self.cache.run(), name="informers")
        if self.elector is not None:
            work = asyncio.create_task(self._stand(self.elector), name="elector")
        else:
            work = asyncio.create_task(self.lead(), name="lead")
        stopper = asyncio.create_task(stop.wait(), name="stop")
        try:
            done, _ = await asyncio.wait(
                {work, informers, stopper}, return_when=asyncio.FIRST_COMPLETED
            )
            if work in done:
                work.result()  # LeadershipLost or a crash: raise it
                # Leading never ends by itself while the process runs: say so, do not exit 0.
                raise RuntimeError("the controller stopped leading without an error")
            if informers in done:
                # The caches never end on their own: without them nothing is seen, so stop
                # with an error for the supervisor to restart us rather than idle "healthy".
                informers.result()
                raise RuntimeError("the watch caches stopped")
        finally:
            self.queue.shut_down()
            for task in (work, informers, stopper):
                task.cancel()
            for task in (work, informers, stopper):
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
            # Events of deletions already made, before the Lease is released (a few seconds
            # at most: each is one request).
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.settings.shutdown_report_grace):
                    await self.reconciler.reports_sent()
            if self.elector is not None:
                await self.elector.release()
            for runner in runners:
                await runner.cleanup()
            REGISTRY.unregister(self.pool_nodes)
            await self.api.close()
            log.info("controller stopped", extra=LogFields(identity=self.identity))


ADMISSION_POLICIES = "admissionregistration.k8s.io/v1"
POLICY_RESOURCES = frozenset({"validatingadmissionpolicies", "validatingadmissionpolicybindings"})


class AdmissionPoliciesNotServed(RuntimeError):
    """The API server cannot enforce the policies that confine the controller's identity."""


async def require_admission_policies(api: KubeApi, *, retry: float) -> None:
    """Return once the API server is seen to serve ValidatingAdmissionPolicy; raise
    `AdmissionPoliciesNotServed` if it does not. Unanswered, ask again every `retry` seconds.

    Without that API the controller's policies (design §10.9) cannot be installed, and RBAC alone
    would let its identity run any Job, delete any pod and rewrite any DaemonSet: the controller
    refuses to start rather than run unconfined. The chart says the same with `kubeVersion`; this
    holds for `kubectl apply -k deploy/base` too, which applies the rest without the policies."""
    while True:
        try:
            served = await api.served(ADMISSION_POLICIES)
        except ApiError as error:
            log.warning(
                "cannot read the API server's discovery; asking again",
                extra=LogFields(error=error.message, retry_after=retry),
            )
            await asyncio.sleep(retry)
            continue
        if served >= POLICY_RESOURCES:
            return
        raise AdmissionPoliciesNotServed(
            f"the API server does not serve ValidatingAdmissionPolicy ({ADMISSION_POLICIES}, "
            "Kubernetes 1.30 or later): the admission policies that confine the controller's "
            "identity cannot be in force, so the controller does not start"
        )


async def run_controller(settings: ControllerSettings) -> None:
    host = ""

    def observe(method: str, code: str) -> None:
        metrics.REST_CLIENT_REQUESTS.labels(code=code, method=method, host=host).inc()

    api = await KubeApi.connect(settings.kubeconfig, observe=observe)
    host = api.host
    try:
        await require_admission_policies(api, retry=settings.retry_period)
    except BaseException:
        await api.close()
        raise
    await Controller(settings, api).run()
