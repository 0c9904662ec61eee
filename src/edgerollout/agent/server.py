"""The node-local OTA API (design §8), compatible with OpenYurt's YurtHub and ACK Edge's edge-hub.

| route                                                     | answer                                  |
|-----------------------------------------------------------|-----------------------------------------|
| GET  /pods                                                | this node's pods as a v1 PodList        |
| POST /openyurt.io/v1/namespaces/{ns}/pods/{pod}/imagepull | `Image pre-pull requested for pod ns/p` |
| POST /openyurt.io/v1/namespaces/{ns}/pods/{pod}/upgrade   | `Start updating pod ns/p`               |
| POST /edgerollout.io/v1/namespaces/{ns}/pods/{pod}/hold   | `Upgrade of pod ns/p held until T`      |
| DELETE the same                                           | `Hold on pod ns/p lifted`               |
| GET  /healthz, /readyz, /metrics, /openapi.json           |                                         |

A refusal is a JSON body `{"code", "reason", "message"}` and changes nothing.

Guards, in the order they are applied (design §8.3): at most `max_in_flight_requests` at once
(503); a request from a browser (an `Origin` header, `Sec-Fetch-Site: cross-site` or `same-site`)
or naming a host that is not loopback or the listen address (DNS rebinding) is refused 403 on every
route; with a token (the default), every route but the health probes needs it (401); upgrade and
imagepull answer 503 `NodeScopingNotEnforced` while the API server is not proven to confine the
agent to its node (`agent/scoping.py`), and a second upgrade of a pod being upgraded 409
`UpgradeInProgress`. A refusal of a guard, and any API server error an unauthenticated caller
(`--auth=none`) provokes, carries a generic message; the details go to the log. Upgrade and imagepull
read the pod and its DaemonSet fresh from the API server (a node must not act on a stale view) and
answer 503 within `cloud_timeout` when the API server cannot be reached; an upgrade while the
DaemonSet's rollout is paused is refused 409 `RolloutPaused` (`agent/pause_refusal.py`). GET /pods
answers from the cache, with its staleness in `X-Edgerollout-Cache-Age` (seconds).

`hold` (design §8.4, `domain/planning/hold_requests.py`) takes or lifts the node's hold on a pod
of an opted-in DaemonSet of either strategy, as the condition `edgerollout.io/UpgradeHeld`; it is
guarded as upgrade and imagepull are, and an admission policy installed before holds existed,
which refuses that condition, is answered 503 `HoldNotAdmitted` with nothing changed.
"""

from __future__ import annotations

import asyncio
import datetime
import hmac
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

import orjson
from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from edgerollout.agent import metrics
from edgerollout.agent.metrics import AUTH_DISABLED, DURATION, REQUESTS
from edgerollout.agent.node_pods import NodePods
from edgerollout.agent.openapi import openapi_document
from edgerollout.agent.pause_refusal import judge_pause
from edgerollout.agent.pod_hold import opted_in_pod, write_hold
from edgerollout.agent.pod_read import read_pod
from edgerollout.agent.refused import Refused
from edgerollout.agent.scoping import NodeScoping, ScopingProbe
from edgerollout.domain.model import ConditionStatus, PodUID, PodView
from edgerollout.domain.planning.conditions import plan_image_ready
from edgerollout.domain.planning.hold_requests import (
    hold_condition,
    lift_condition,
    read_hold_body,
)
from edgerollout.domain.planning.ota_requests import (
    Action,
    PodFacts,
    Refusal,
    check_names,
    judge_pod,
    judge_request,
    newest_revision,
    not_ota,
)
from edgerollout.domain.spec.strategy import UpdateStrategy, choose_strategy
from edgerollout.domain.timestamps import format_rfc3339
from edgerollout.domain.vocabulary import (
    MALFORMED_HOLD,
    NODE_SCOPING_NOT_ENFORCED,
    UPGRADE_HELD,
    UPGRADE_IN_PROGRESS,
    WAIT_PULL_IMAGE,
)
from edgerollout.kube.api import DAEMONSETS, PODS, Api, ApiError
from edgerollout.kube.manifests import condition_patch
from edgerollout.kube.views import daemonset_from_api, object_uid, pod_facts_from_api
from edgerollout.logfields import LogFields
from edgerollout.settings import AgentSettings

JSON = dict[str, Any]
CACHE_AGE_HEADER = "X-Edgerollout-Cache-Age"
POD_ROUTE = "/openyurt.io/v1/namespaces/{ns}/pods/{pod}"
# edgerollout's own verb, beside OpenYurt's: under its own group, not OpenYurt's.
HOLD_ROUTE = "/edgerollout.io/v1/namespaces/{ns}/pods/{pod}/hold"

LOOPBACK_HOSTS = frozenset({"127.0.0.1", "::1", "localhost"})
BROWSER_SITES = frozenset({"cross-site", "same-site"})
HEALTH_PROBES = frozenset({"/healthz", "/readyz"})
# What a refused caller is told; why it was refused goes to the log.
FORBIDDEN = Refusal(403, "Forbidden", "this request is not served; the agent's log says why")

log = logging.getLogger("edgerollout.agent")
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def refusal_response(refusal: Refusal, headers: dict[str, str] | None = None) -> web.Response:
    body = {"code": refusal.code, "reason": refusal.reason, "message": refusal.message}
    return web.Response(
        status=refusal.code,
        body=orjson.dumps(body),
        content_type="application/json",
        headers=headers,
    )


_HTTP_REASONS = {
    400: "BadRequest",
    401: "Unauthorized",
    404: "NotFound",
    405: "MethodNotAllowed",
    413: "RequestEntityTooLarge",
}


def host_name(header: str) -> str:
    """The host a `Host` header names, without its port: `[::1]:80`, `::1` and `LocalHost.` too."""
    if header.startswith("["):
        name = header[1 : header.find("]")]
    elif header.count(":") == 1:
        name = header.partition(":")[0]
    else:
        name = header
    return name.lower().rstrip(".")


class Agent:
    def __init__(
        self,
        settings: AgentSettings,
        api: Api,
        pods: NodePods,
        scoping: NodeScoping | None = None,
        *,
        token: str | None,
        probe: ScopingProbe | None = None,
    ) -> None:
        self.settings = settings
        # None: --auth=none, every caller is served without a token.
        self.token = token
        self.api = api
        self.pods = pods
        self.scoping = scoping if scoping is not None else NodeScoping()
        # Proves the scoping again right before each change (None: the last verdict decides).
        self.probe = probe
        # The listen address's host is accepted in `Host` headers besides the loopback names.
        self.allowed_hosts = LOOPBACK_HOSTS | {host_name(settings.listen.host)}
        self.in_flight = 0
        self.upgrading: set[tuple[str, str]] = set()
        AUTH_DISABLED.set(1 if token is None else 0)

    # --- middleware: auth, JSON errors, metrics ---------------------------------------------

    @web.middleware
    async def middleware(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        route = request.match_info.route.resource
        template = route.canonical if route is not None else "unmatched"
        started = time.monotonic()
        if self.in_flight >= self.settings.max_in_flight_requests:
            log.warning(
                "refused a request: too many in flight",
                extra=LogFields(method=request.method, path=request.path, count=self.in_flight),
            )
            response: web.StreamResponse = refusal_response(
                Refusal(503, "TooManyRequests", "too many requests at once; try again shortly"),
                {"Retry-After": "1"},
            )
        else:
            self.in_flight += 1
            try:
                response = await self._answer(request, handler)
            finally:
                self.in_flight -= 1
        REQUESTS.labels(route=template, code=str(response.status)).inc()
        DURATION.labels(route=template).observe(time.monotonic() - started)
        return response

    async def _answer(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        try:
            self._admit(request)
            return await handler(request)
        except Refused as refused:
            if refused.refusal.code >= 400:
                log.info(
                    "refused a request",
                    extra=LogFields(
                        method=request.method,
                        path=request.path,
                        code=refused.refusal.code,
                        reason=refused.refusal.reason,
                    ),
                )
            return refusal_response(refused.refusal, refused.headers)
        except web.HTTPException as error:
            if error.status < 400:
                raise
            reason = _HTTP_REASONS.get(error.status, "Error")
            message = f"{request.method} {request.path}: {error.reason}"
            headers = {}
            if isinstance(error, web.HTTPMethodNotAllowed):
                allowed = ", ".join(sorted(error.allowed_methods))
                message = f"{request.method} is not allowed on {request.path} (allowed: {allowed})"
                headers["Allow"] = allowed
            elif error.status == 404:
                message = f"no such route: {request.path}"
            elif error.status == 413:
                message = f"bodies are limited to {self.settings.max_body_bytes} bytes"
            return refusal_response(Refusal(error.status, reason, message), headers)

    def _admit(self, request: web.Request) -> None:
        """Refuse a request before it is handled: with a body too large (known from its headers,
        before anything else is read), from a browser, to a foreign host name, or without
        credentials."""
        limit = self.settings.max_body_bytes
        if request.content_length is not None and request.content_length > limit:
            raise Refused(
                Refusal(413, "RequestEntityTooLarge", f"bodies are limited to {limit} bytes")
            )
        self._refuse_browsers(request)
        if request.path not in HEALTH_PROBES:
            self._authorize(request)

    def _refuse_browsers(self, request: web.Request) -> None:
        """A web page shown on the node must reach nothing: browsers send `Origin` on every
        cross-origin request (and on POSTs) and `Sec-Fetch-Site`; a rebound DNS name keeps the
        page's host name in `Host`, which browsers always send (a request without one, HTTP/1.0
        or a script's, is not a browser's)."""
        why = None
        host = request.headers.get("Host")
        if "Origin" in request.headers:
            why = f"a browser's request (Origin: {request.headers['Origin']})"
        elif request.headers.get("Sec-Fetch-Site", "").lower() in BROWSER_SITES:
            why = f"a browser's request (Sec-Fetch-Site: {request.headers['Sec-Fetch-Site']})"
        elif host is not None and host_name(host) not in self.allowed_hosts:
            why = f"the Host header names {host!r}, not loopback or the listen address"
        if why is not None:
            log.warning(
                "refused a request",
                extra=LogFields(method=request.method, path=request.path, code=403, error=why),
            )
            raise Refused(FORBIDDEN)

    def _authorize(self, request: web.Request) -> None:
        if self.token is None:
            return
        # A header that is not UTF-8 arrives with its bytes kept as surrogates: compared as the
        # bytes sent, it is simply not the token (never a 500).
        given = request.headers.get("Authorization", "").encode("utf-8", "surrogateescape")
        expected = f"Bearer {self.token}".encode()
        if not hmac.compare_digest(given, expected):
            raise Refused(
                Refusal(
                    401, "Unauthorized", "a valid bearer token is required (Authorization header)"
                ),
                headers={"WWW-Authenticate": 'Bearer realm="edgerollout-agent"'},
            )

    # --- routes ------------------------------------------------------------------------------

    async def healthz(self, _: web.Request) -> web.Response:
        return web.Response(text="ok")

    async def readyz(self, _: web.Request) -> web.Response:
        if not self.pods.ready:
            raise Refused(Refusal(503, "CacheNotReady", "the pod cache has not been filled yet"))
        # /readyz answers anyone (the kubelet's probe carries no token): the probe's detail,
        # which names pods and repeats the API server's words, stays in the log and in the
        # refusals of authenticated changes.
        self._require_scoping(detailed=False)
        return web.Response(text="ok")

    async def _prove_scoping(self) -> None:
        """Probe again before a change: a policy removed since the last periodic probe is seen
        now, not an interval later (design §8.3). Without an answer the last verdict stands."""
        if self.probe is not None:
            await self.probe.check(self.pods.pods())
        self._require_scoping()

    def _require_scoping(self, *, detailed: bool = True) -> None:
        if self.scoping.enforced:
            return
        message = (
            "the API server is not proven to confine this agent to its node, so it changes "
            f"nothing: {self.scoping.verdict.detail}"
            if detailed
            else "the API server is not proven to confine this agent to its node; the agent's "
            "log says why"
        )
        raise Refused(Refusal(503, NODE_SCOPING_NOT_ENFORCED, message))

    async def metrics(self, _: web.Request) -> web.Response:
        return web.Response(
            body=generate_latest(metrics.REGISTRY), headers={"Content-Type": CONTENT_TYPE_LATEST}
        )

    async def openapi(self, _: web.Request) -> web.Response:
        return web.json_response(openapi_document())

    async def list_pods(self, _: web.Request) -> web.Response:
        if not self.pods.ready:
            raise Refused(
                Refusal(503, "CacheNotReady", "no pods known yet: the API server has not answered")
            )
        envelope = {
            "apiVersion": "v1",
            "kind": "PodList",
            "metadata": {"resourceVersion": self.pods.informer.resource_version},
        }
        # The same bytes as dumping the whole PodList, with the items encoded once per change.
        body = orjson.dumps(envelope)[:-1] + b',"items":' + self.pods.encoded_pods() + b"}"
        return web.Response(
            body=body,
            content_type="application/json",
            headers={CACHE_AGE_HEADER: f"{self.pods.age():.1f}"},
        )

    async def _checked_pod(self, request: web.Request, action: Action) -> tuple[JSON, PodFacts]:
        await request.read()  # enforces the body limit on chunked uploads too
        namespace, name = request.match_info["ns"], request.match_info["pod"]
        refusal = check_names(namespace, name)
        if refusal is not None:
            raise Refused(refusal)
        pod = await read_pod(self.api, namespace=namespace, name=name)
        facts = pod_facts_from_api(pod)
        refusal = judge_pod(facts, node_name=self.settings.node_name)
        if refusal is not None:
            raise Refused(refusal)
        assert facts.owner_name is not None
        try:
            owner = await self.api.get(DAEMONSETS, facts.owner_name, namespace=namespace)
        except ApiError as error:
            if error.not_found:
                raise Refused(not_ota(facts, "no longer exists")) from None
            raise
        daemonset = daemonset_from_api(owner).view
        choice = choose_strategy(
            annotations=daemonset.annotations,
            update_strategy_type=daemonset.update_strategy_type,
        )
        if choice.strategy is not UpdateStrategy.OTA:
            raise Refused(not_ota(facts, "does not use the OTA update strategy"))
        refusal = judge_pause(facts, daemonset=daemonset, action=action)
        if refusal is None:
            refusal = judge_request(facts, action)
        if refusal is not None:
            raise Refused(refusal)
        return pod, facts

    async def _with_cloud(
        self, work: Callable[[list[str]], Awaitable[web.Response]]
    ) -> web.Response:
        """Run `work` within the cloud timeout; it names the write it starts in `sent`."""
        sent: list[str] = []
        try:
            async with asyncio.timeout(self.settings.cloud_timeout):
                return await work(sent)
        except TimeoutError:
            raise Refused(self._unreachable("did not answer in time", sent)) from None
        except ApiError as error:
            if error.status == 0:
                raise Refused(self._unreachable(error.message, sent)) from None
            log.warning(
                "the API server refused",
                extra=LogFields(code=error.status, reason=error.reason, error=error.message),
            )
            # Only a caller who proved it holds the node's token learns what the server said.
            detail = error.message if self.token is not None else "see the agent's log"
            raise Refused(
                Refusal(
                    error.status if error.status in (403, 404, 409) else 502,
                    error.reason or "ApiServerError",
                    f"the API server refused: {detail}",
                )
            ) from None

    def _unreachable(self, detail: str, sent: list[str]) -> Refusal:
        if self.token is None:
            log.warning(
                "the API server cannot be reached",
                extra=LogFields(node=self.settings.node_name, error=detail),
            )
            detail = "see the agent's log"
        if sent:
            # The request left the node: the API server may have carried it out.
            outcome = (
                f"the {sent[0]} was sent but not confirmed, so it may or may not have happened; "
                "list the pods again once the link is back"
            )
        else:
            outcome = "nothing was changed, try again once the link is back"
        return Refusal(
            503,
            "CloudUnreachable",
            f"the API server cannot be reached from node {self.settings.node_name} ({detail}); "
            f"{outcome}",
        )

    async def upgrade(self, request: web.Request) -> web.Response:
        await self._prove_scoping()
        target = (request.match_info["ns"], request.match_info["pod"])
        if target in self.upgrading:
            raise Refused(
                Refusal(
                    409,
                    UPGRADE_IN_PROGRESS,
                    f"pod {target[0]}/{target[1]} is being upgraded by an earlier request",
                )
            )
        self.upgrading.add(target)
        try:
            return await self._upgrade(request)
        finally:
            self.upgrading.discard(target)

    async def _upgrade(self, request: web.Request) -> web.Response:
        async def work(sent: list[str]) -> web.Response:
            pod, facts = await self._checked_pod(request, Action.UPGRADE)
            uid = object_uid(pod)
            sent.append("deletion of the pod")
            try:
                await self.api.delete(PODS, facts.name, namespace=facts.namespace, uid=uid)
            except ApiError as error:
                if error.conflict or error.not_found:
                    raise Refused(
                        Refusal(
                            409,
                            "PodChanged",
                            f"pod {facts.namespace}/{facts.name} changed while it was being "
                            "upgraded; list the pods again",
                        )
                    ) from None
                raise
            log.info(
                "upgrade: deleted pod",
                extra=LogFields(pod=f"{facts.namespace}/{facts.name}", uid=uid),
            )
            return web.Response(text=f"Start updating pod {facts.namespace}/{facts.name}")

        return await self._with_cloud(work)

    async def imagepull(self, request: web.Request) -> web.Response:
        await self._prove_scoping()

        async def work(sent: list[str]) -> web.Response:
            pod, facts = await self._checked_pod(request, Action.IMAGE_PULL)
            revision = newest_revision(facts)
            if revision is None:
                raise Refused(
                    Refusal(
                        409,
                        "NoUpgradeAvailable",
                        f"pod {facts.namespace}/{facts.name} names no newer revision yet",
                    )
                )
            view = PodView(
                namespace=facts.namespace,
                name=facts.name,
                uid=PodUID(object_uid(pod)),
                node_name=None,
                conditions=facts.conditions,
            )
            write = plan_image_ready(
                view,
                status=ConditionStatus.FALSE,
                reason=WAIT_PULL_IMAGE,
                revision_hash=revision,
                now=datetime.datetime.now(datetime.UTC),
            )
            if write is not None:
                sent.append("pre-pull request")
                body = condition_patch(write)
                await self.api.patch(
                    PODS, facts.name, body, namespace=facts.namespace, subresource="status"
                )
            log.info(
                "imagepull: requested",
                extra=LogFields(pod=f"{facts.namespace}/{facts.name}", revision=revision),
            )
            return web.Response(
                text=f"Image pre-pull requested for pod {facts.namespace}/{facts.name}"
            )

        return await self._with_cloud(work)

    async def hold(self, request: web.Request) -> web.Response:
        await self._prove_scoping()
        now = datetime.datetime.now(datetime.UTC)
        namespace, name = self._names(request)
        raw = await request.read()

        async def work(sent: list[str]) -> web.Response:
            # The pod first: a request for a pod that is not this node's is refused as such,
            # whatever its body says, as for upgrade.
            pod, facts, daemonset = await opted_in_pod(
                self.api, node_name=self.settings.node_name, namespace=namespace, name=name
            )
            try:
                body = orjson.loads(raw)
            except orjson.JSONDecodeError:
                raise Refused(
                    Refusal(400, MALFORMED_HOLD, "the body is not JSON: expected {until, reason}")
                ) from None
            asked_for = read_hold_body(body, now=now)
            if isinstance(asked_for, Refusal):
                raise Refused(asked_for)
            held = hold_condition(facts, asked_for, annotations=daemonset.annotations, now=now)
            if isinstance(held, Refusal):
                raise Refused(held)
            await write_hold(self.api, pod, facts, held, sent)
            log.info(
                "hold: taken",
                extra=LogFields(pod=f"{namespace}/{name}", condition=UPGRADE_HELD, status="True"),
            )
            return web.Response(
                text=f"Upgrade of pod {namespace}/{name} held until "
                f"{format_rfc3339(asked_for.until)}"
            )

        return await self._with_cloud(work)

    async def lift(self, request: web.Request) -> web.Response:
        await self._prove_scoping()
        now = datetime.datetime.now(datetime.UTC)
        namespace, name = self._names(request)
        await request.read()  # enforces the body limit on chunked uploads too

        async def work(sent: list[str]) -> web.Response:
            pod, facts, _ = await opted_in_pod(
                self.api, node_name=self.settings.node_name, namespace=namespace, name=name
            )
            lifted = lift_condition(facts, now=now)
            if lifted is not None:
                await write_hold(self.api, pod, facts, lifted, sent)
                log.info(
                    "hold: lifted",
                    extra=LogFields(
                        pod=f"{namespace}/{name}", condition=UPGRADE_HELD, status="False"
                    ),
                )
            return web.Response(text=f"Hold on pod {namespace}/{name} lifted")

        return await self._with_cloud(work)

    @staticmethod
    def _names(request: web.Request) -> tuple[str, str]:
        namespace, name = request.match_info["ns"], request.match_info["pod"]
        refusal = check_names(namespace, name)
        if refusal is not None:
            raise Refused(refusal)
        return namespace, name

    def app(self) -> web.Application:
        app = web.Application(
            middlewares=[self.middleware], client_max_size=self.settings.max_body_bytes
        )
        app.router.add_get("/healthz", self.healthz)
        app.router.add_get("/readyz", self.readyz)
        app.router.add_get("/metrics", self.metrics)
        app.router.add_get("/openapi.json", self.openapi)
        app.router.add_get("/pods", self.list_pods)
        app.router.add_post(f"{POD_ROUTE}/upgrade", self.upgrade)
        app.router.add_post(f"{POD_ROUTE}/imagepull", self.imagepull)
        app.router.add_post(HOLD_ROUTE, self.hold)
        app.router.add_delete(HOLD_ROUTE, self.lift)
        return app
