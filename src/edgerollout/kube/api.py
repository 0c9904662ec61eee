"""The one seam between edgerollout and the API server.

Everything that reads or writes the cluster goes through `KubeApi`: a handful of verbs (list, watch,
delete, patch, create, get, update) on raw JSON. kubernetes_asyncio supplies what a client library
should (kubeconfig and in-cluster credentials, TLS, token refresh, the aiohttp session); its model
classes are bypassed, because decoding thousands of pods into generated models costs more CPU and
memory than the controller itself — objects are parsed with orjson and reduced to the few fields the
decisions read (see `views`).

`Api` is the protocol the rest of the code depends on; tests may pass any object that has these
methods. Every request is counted in `rest_client_requests_total` (by code and method).
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import urllib.parse
import urllib.request
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any, Protocol

import aiohttp
import orjson
from kubernetes_asyncio import client, config
from kubernetes_asyncio.config.config_exception import ConfigException

from edgerollout.settings import KUBE_CLIENT

JSON = dict[str, Any]
STRATEGIC_MERGE = "application/strategic-merge-patch+json"
MERGE = "application/merge-patch+json"

RequestObserver = Callable[[str, str], None]  # (method, code) -> None


class ApiError(Exception):
    """The API server answered with an error status (or could not be reached: status 0)."""

    def __init__(self, status: int, reason: str, message: str) -> None:
        super().__init__(f"{status} {reason}: {message}")
        self.status = status
        self.reason = reason
        self.message = message

    @property
    def not_found(self) -> bool:
        return self.status == 404

    @property
    def conflict(self) -> bool:
        return self.status == 409

    @property
    def gone(self) -> bool:
        return self.status == 410


@dataclass(frozen=True, slots=True)
class Resource:
    """Where a kind of object lives in the API: `/api/v1/pods`, `/apis/apps/v1/daemonsets`, ..."""

    group_version: str
    plural: str
    namespaced: bool = True

    def path(self, namespace: str | None = None, name: str | None = None) -> str:
        prefix = "/api/v1" if self.group_version == "v1" else f"/apis/{self.group_version}"
        parts = [prefix]
        if namespace and self.namespaced:
            parts.append(f"namespaces/{namespace}")
        parts.append(self.plural)
        if name:
            parts.append(name)
        return "/".join(parts)


PODS = Resource("v1", "pods")
NODES = Resource("v1", "nodes", namespaced=False)
EVENTS = Resource("v1", "events")
NAMESPACES = Resource("v1", "namespaces", namespaced=False)
SERVICE_ACCOUNTS = Resource("v1", "serviceaccounts")
DAEMONSETS = Resource("apps/v1", "daemonsets")
CONTROLLER_REVISIONS = Resource("apps/v1", "controllerrevisions")
LEASES = Resource("coordination.k8s.io/v1", "leases")
JOBS = Resource("batch/v1", "jobs")
ROLE_BINDINGS = Resource("rbac.authorization.k8s.io/v1", "rolebindings")


@dataclass(frozen=True, slots=True)
class ListPage:
    items: list[JSON]
    resource_version: str
    continue_token: str | None


class Api(Protocol):
    async def list(
        self,
        resource: Resource,
        *,
        namespace: str | None = None,
        field_selector: str | None = None,
        label_selector: str | None = None,
        limit: int = KUBE_CLIENT.watch.page_size,
        continue_token: str | None = None,
    ) -> ListPage: ...

    def watch_lines(
        self,
        resource: Resource,
        *,
        resource_version: str,
        namespace: str | None = None,
        field_selector: str | None = None,
        label_selector: str | None = None,
        timeout_seconds: int = KUBE_CLIENT.watch.default_timeout_seconds,
    ) -> AsyncIterator[bytes]: ...

    async def get(self, resource: Resource, name: str, *, namespace: str | None = None) -> JSON: ...

    async def create(
        self, resource: Resource, body: JSON, *, namespace: str | None = None
    ) -> JSON: ...

    async def replace(
        self, resource: Resource, name: str, body: JSON, *, namespace: str | None = None
    ) -> JSON: ...

    async def patch(
        self,
        resource: Resource,
        name: str,
        body: JSON,
        *,
        namespace: str | None = None,
        subresource: str | None = None,
        content_type: str = STRATEGIC_MERGE,
        dry_run: bool = False,
    ) -> JSON: ...

    async def delete(
        self,
        resource: Resource,
        name: str,
        *,
        namespace: str | None = None,
        uid: str | None = None,
        propagation: str | None = None,
        dry_run: bool = False,
    ) -> None: ...


def _describe(error: BaseException) -> str:
    """A short account of a transport failure (aiohttp's reprs run to hundreds of characters)."""
    if isinstance(error, aiohttp.ClientConnectorError):
        cause = error.os_error.strerror or type(error.os_error).__name__
        return f"cannot connect to {error.host}:{error.port}: {cause}"
    if isinstance(error, TimeoutError):
        return "timed out"
    text = str(error)
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def _error_from(status: int, body: bytes | str | None) -> ApiError:
    reason, message = "", ""
    if body:
        try:
            parsed = orjson.loads(body)
            reason = str(parsed.get("reason", ""))
            message = str(parsed.get("message", ""))
        except (orjson.JSONDecodeError, AttributeError):
            message = body if isinstance(body, str) else body.decode(errors="replace")
    return ApiError(status, reason or "Error", message or "(no message)")


WATCH_READ_BUFFER = 2**21
# An event no object can make (etcd holds objects up to 1.5 MiB): the stream is not a watch's.
MAX_WATCH_EVENT = 2 * WATCH_READ_BUFFER


def environment_proxy(host: str) -> str | None:
    """The proxy the environment names for the API server at `host` (`HTTPS_PROXY`,
    `HTTP_PROXY`, `NO_PROXY`), or None. As in client-go, a loopback server is never proxied."""
    url = urllib.parse.urlsplit(host)
    hostname = url.hostname
    if not hostname or hostname == "localhost":
        return None
    with contextlib.suppress(ValueError):
        if ipaddress.ip_address(hostname).is_loopback:
            return None
    if urllib.request.proxy_bypass(hostname):
        return None
    return urllib.request.getproxies().get(url.scheme)


def _read_environment_once(api_client: Any) -> None:
    """Resolve the environment's proxy for the API server once, not on every request.

    kubernetes_asyncio's session trusts the environment, so aiohttp looks up the proxy variables
    and reads `~/.netrc` in a worker thread before each request: two thread hops per request,
    about a tenth of the controller's CPU in a 1,000-node rollout. client-go reads the proxy
    variables once per process and never reads `.netrc`; so does this, keeping the session's
    connection pool and TLS settings."""
    configuration = api_client.configuration
    if configuration.proxy is None:
        configuration.proxy = environment_proxy(str(configuration.host))
    rest = api_client.rest_client
    rest.proxy = configuration.proxy
    trusting = rest.pool_manager
    if not trusting.trust_env:
        return
    connector = trusting.connector
    trusting.detach()
    # The read buffer kubernetes_asyncio gives its session: a watch event may carry an object
    # as large as etcd allows (1.5 MiB).
    rest.pool_manager = aiohttp.ClientSession(connector=connector, read_bufsize=WATCH_READ_BUFFER)


class KubeApi:
    """`Api` over a kubernetes_asyncio `ApiClient` (credentials, TLS and session come from it)."""

    def __init__(
        self,
        api_client: Any,
        *,
        observe: RequestObserver | None = None,
        watch_batch: float = KUBE_CLIENT.watch.batch_seconds,
    ) -> None:
        _read_environment_once(api_client)
        self._client = api_client
        self._observe = observe or (lambda method, code: None)
        self._watch_batch = watch_batch

    @staticmethod
    async def connect(
        kubeconfig: str | None = None, *, observe: RequestObserver | None = None
    ) -> KubeApi:
        """Credentials from `kubeconfig`, else in-cluster, else the default kubeconfig."""
        configuration = client.Configuration()
        if kubeconfig:
            await config.load_kube_config(
                config_file=kubeconfig, client_configuration=configuration
            )
        else:
            try:
                config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
            except ConfigException:
                await config.load_kube_config(client_configuration=configuration)
        return KubeApi(client.ApiClient(configuration), observe=observe)

    @property
    def host(self) -> str:
        return str(self._client.configuration.host)

    async def close(self) -> None:
        await self._client.close()

    async def _send(
        self,
        method: str,
        path: str,
        *,
        query: list[tuple[str, str]] | None = None,
        body: Any = None,
        content_type: str = "application/json",
        timeout: aiohttp.ClientTimeout | float | None = KUBE_CLIENT.request_timeout,
    ) -> aiohttp.ClientResponse:
        try:
            response = await self._request(
                method, path, query=query, body=body, content_type=content_type, timeout=timeout
            )
        except (aiohttp.ClientError, TimeoutError, OSError) as error:
            self._observe(method, "<error>")
            raise ApiError(0, "Unreachable", f"{method} {path}: {_describe(error)}") from error
        self._observe(method, str(response.status))
        if not 200 <= response.status <= 299:
            async with response:
                raise _error_from(response.status, await response.read())
        return response

    async def _request(
        self,
        method: str,
        path: str,
        *,
        query: list[tuple[str, str]] | None,
        body: Any,
        content_type: str,
        timeout: aiohttp.ClientTimeout | float | None,
    ) -> aiohttp.ClientResponse:
        """One request on the client's session, as its `call_api` sends it, without the work
        that serves its generated models: the body is JSON already (orjson, not a walk of
        `sanitize_for_serialization` then `json.dumps`), the query plain pairs. The credentials
        come from the client's configuration at each request (a refreshed token included), the
        TLS settings with its session; its proxy and TLS server name are passed as it passes
        them. That walk was a twelfth of the controller's CPU in a rollout."""
        api_client = self._client
        headers = {
            **api_client.default_headers,
            "Content-Type": content_type,
            "Accept": "application/json",
        }
        params = list(query or [])
        await api_client.update_params_for_auth(headers, params, ["BearerToken"])
        url = api_client.configuration.host + path
        if params:
            url += "?" + urllib.parse.urlencode(params)
        rest = api_client.rest_client
        extra: dict[str, Any] = {}
        if rest.proxy:
            extra["proxy"] = rest.proxy
        if rest.proxy_headers:
            extra["proxy_headers"] = rest.proxy_headers
        if rest.server_hostname:
            extra["server_hostname"] = rest.server_hostname
        if not isinstance(timeout, aiohttp.ClientTimeout):
            timeout = aiohttp.ClientTimeout(total=timeout)
        session: aiohttp.ClientSession = rest.pool_manager
        response: aiohttp.ClientResponse = await session.request(
            method,
            url,
            headers=headers,
            data=None if body is None else orjson.dumps(body),
            timeout=timeout,
            **extra,
        )
        return response

    async def served(self, group_version: str) -> frozenset[str]:
        """The resources the API server serves in `group_version` ("v1" for the core group),
        from its discovery document; empty if it does not serve that group version at all."""
        path = "/api/v1" if group_version == "v1" else f"/apis/{group_version}"
        try:
            document = await self._json("GET", path)
        except ApiError as error:
            if error.not_found:
                return frozenset()
            raise
        return frozenset(resource["name"] for resource in document.get("resources", []))

    async def _json(self, method: str, path: str, **kwargs: Any) -> JSON:
        response = await self._send(method, path, **kwargs)
        try:
            async with response:
                data = await response.read()
        except (aiohttp.ClientError, TimeoutError, OSError) as error:
            # The connection broke after the headers, in the body: to callers, a server that
            # could not be reached, like any other transport failure.
            raise ApiError(0, "Unreachable", f"{method} {path}: {_describe(error)}") from error
        parsed: JSON = orjson.loads(data) if data else {}
        return parsed

    async def list(
        self,
        resource: Resource,
        *,
        namespace: str | None = None,
        field_selector: str | None = None,
        label_selector: str | None = None,
        limit: int = KUBE_CLIENT.watch.page_size,
        continue_token: str | None = None,
    ) -> ListPage:
        query = [("limit", str(limit))]
        if field_selector:
            query.append(("fieldSelector", field_selector))
        if label_selector:
            query.append(("labelSelector", label_selector))
        if continue_token:
            query.append(("continue", continue_token))
        data = await self._json(
            "GET", resource.path(namespace), query=query, timeout=KUBE_CLIENT.list_timeout
        )
        meta = data.get("metadata") or {}
        return ListPage(
            items=list(data.get("items") or []),
            resource_version=str(meta.get("resourceVersion", "")),
            continue_token=meta.get("continue") or None,
        )

    async def watch(
        self,
        resource: Resource,
        *,
        resource_version: str,
        namespace: str | None = None,
        field_selector: str | None = None,
        label_selector: str | None = None,
        timeout_seconds: int = KUBE_CLIENT.watch.default_timeout_seconds,
    ) -> AsyncIterator[JSON]:
        """Watch events as the API server sends them (`type`, `object`), bookmarks included.

        With a selector, an object that comes to match arrives as ADDED and one that stops
        matching as DELETED, so a cache of what matches stays exact."""
        lines = self.watch_lines(
            resource,
            resource_version=resource_version,
            namespace=namespace,
            field_selector=field_selector,
            label_selector=label_selector,
            timeout_seconds=timeout_seconds,
        )
        async for line in lines:
            event: JSON = orjson.loads(line)
            yield event

    async def watch_lines(
        self,
        resource: Resource,
        *,
        resource_version: str,
        namespace: str | None = None,
        field_selector: str | None = None,
        label_selector: str | None = None,
        timeout_seconds: int = KUBE_CLIENT.watch.default_timeout_seconds,
    ) -> AsyncIterator[bytes]:
        """`watch`'s events undecoded: one line of JSON each, for a cache that decodes only what
        it reads (`kube/watch_events.py`)."""
        query = [
            ("watch", "true"),
            ("allowWatchBookmarks", "true"),
            ("resourceVersion", resource_version),
            ("timeoutSeconds", str(timeout_seconds)),
        ]
        if field_selector:
            query.append(("fieldSelector", field_selector))
        if label_selector:
            query.append(("labelSelector", label_selector))
        # No total timeout: the server ends the stream after timeoutSeconds; a read stalled
        # well past that means the connection is dead.
        timeout = aiohttp.ClientTimeout(
            total=None,
            sock_connect=KUBE_CLIENT.watch_connect_timeout,
            sock_read=timeout_seconds + KUBE_CLIENT.watch_read_slack,
        )
        response = await self._send("GET", resource.path(namespace), query=query, timeout=timeout)
        async with response:
            content = response.content
            connection = response.connection
            # The connection's socket, not read between reads for `batch_seconds`
            # (settings.WatchSettings): its transport is paused, not aiohttp's parser, which
            # would hold back what follows the first event it parses next.
            reader = connection.transport if connection is not None and self._watch_batch else None
            pending = b""
            try:
                # Whatever has arrived, split into its lines: one JSON event each.
                while data := await content.readany():
                    if pending:
                        data = pending + data
                    lines = data.split(b"\n")
                    pending = lines.pop()
                    if len(pending) > MAX_WATCH_EVENT:
                        raise ValueError(
                            f"watch {resource.plural}: an event longer than {MAX_WATCH_EVENT} bytes"
                        )
                    for line in lines:
                        if line.strip():
                            yield line
                    if reader is not None:
                        reader.pause_reading()
                        try:
                            await asyncio.sleep(self._watch_batch)
                        finally:
                            reader.resume_reading()
                if pending.strip():
                    yield pending
            except (aiohttp.ClientError, TimeoutError) as error:
                raise ApiError(
                    0, "Unreachable", f"watch {resource.plural}: {_describe(error)}"
                ) from error

    async def get(self, resource: Resource, name: str, *, namespace: str | None = None) -> JSON:
        return await self._json("GET", resource.path(namespace, name))

    async def create(self, resource: Resource, body: JSON, *, namespace: str | None = None) -> JSON:
        return await self._json("POST", resource.path(namespace), body=body)

    async def replace(
        self, resource: Resource, name: str, body: JSON, *, namespace: str | None = None
    ) -> JSON:
        return await self._json("PUT", resource.path(namespace, name), body=body)

    async def patch(
        self,
        resource: Resource,
        name: str,
        body: JSON,
        *,
        namespace: str | None = None,
        subresource: str | None = None,
        content_type: str = STRATEGIC_MERGE,
        dry_run: bool = False,
    ) -> JSON:
        path = resource.path(namespace, name)
        if subresource:
            path = f"{path}/{subresource}"
        # dryRun=All: admission runs in full, nothing is stored.
        query = [("dryRun", "All")] if dry_run else None
        return await self._json("PATCH", path, query=query, body=body, content_type=content_type)

    async def delete(
        self,
        resource: Resource,
        name: str,
        *,
        namespace: str | None = None,
        uid: str | None = None,
        propagation: str | None = None,
        dry_run: bool = False,
    ) -> None:
        body: JSON = {"apiVersion": "v1", "kind": "DeleteOptions"}
        if dry_run:
            # Admission runs in full, nothing is deleted.
            body["dryRun"] = ["All"]
        if propagation is not None:
            body["propagationPolicy"] = propagation
        if uid is not None:
            # The API server deletes only the object we looked at: a pod recreated under the same
            # name since then has another UID and the delete fails with 409 Conflict.
            body["preconditions"] = {"uid": uid}
        response = await self._send("DELETE", resource.path(namespace, name), body=body)
        # The status says the deletion was accepted; the body (the object) is not needed, and a
        # connection that breaks while it is sent does not undo the deletion.
        with contextlib.suppress(aiohttp.ClientError, TimeoutError, OSError):
            async with response:
                await response.read()
