"""An in-memory `Api`: the seam the controller's shell depends on, without an API server.

It keeps what the shell relies on from the real one and nothing more:
- one resourceVersion counter for every object, bumped by each write, as etcd's revision is;
- `list` in pages of `limit` items (ordered by key), filtered by namespace and by field and label
  selectors as the API server filters them, the continue token being the next offset;
- `watch_lines` serving the events a test scripts with `publish` / `send`: an event dict (sent
  as one line of JSON), an exception to raise in the stream, or `END` to close it (the server's
  timeout). Each selection (namespace, field and label selectors) has a stream of its own,
  created by its first list or watch, which gets the events whose object it selects (and every
  exception and `END`); items sent while a resource has no stream yet wait for its first;
- compare-and-swap on `replace` (409 when the body's resourceVersion is not the stored one), and
  the UID precondition on `delete` and on a `patch` that carries `metadata.uid` (409 when it does
  not match, 404 when the object is absent);
- `patch` records its body and bumps the resourceVersion but does not merge it: the tests assert
  on what was sent, the server's merge semantics are not ours to re-implement.

Every call is recorded in `calls`, before any scripted failure (`fail`) is raised, so a test can
assert on what was attempted as well as on what was stored.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

import orjson

from edgerollout.kube.api import STRATEGIC_MERGE, ApiError, ListPage, Resource
from edgerollout.kube.views import object_key
from edgerollout.settings import KUBE_CLIENT

JSON = dict[str, Any]
END: Final = None
WatchItem = JSON | BaseException | None
WRITES: Final = frozenset({"create", "replace", "patch", "delete"})


@dataclass(frozen=True, slots=True)
class Call:
    """One request as the shell made it."""

    verb: str
    resource: Resource
    name: str | None = None
    namespace: str | None = None
    body: JSON | None = None
    params: Mapping[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class _Failure:
    verb: str
    resource: Resource
    error: ApiError
    remaining: int | None


def not_found(resource: Resource, name: str) -> ApiError:
    return ApiError(404, "NotFound", f'{resource.plural} "{name}" not found')


def conflict(resource: Resource, name: str, why: str) -> ApiError:
    return ApiError(
        409, "Conflict", f'Operation cannot be fulfilled on {resource.plural} "{name}": {why}'
    )


def unreachable(what: str = "connection refused") -> ApiError:
    return ApiError(0, "Unreachable", what)


@dataclass(frozen=True, slots=True)
class Selection:
    """What one list or watch asks for."""

    namespace: str | None
    field_selector: str | None
    label_selector: str | None


def _in(obj: JSON, resource: Resource, selection: Selection) -> bool:
    return (
        (
            selection.namespace is None
            or not resource.namespaced
            or _meta(obj).get("namespace") == selection.namespace
        )
        and _selected(obj, selection.field_selector)
        and _labelled(obj, selection.label_selector)
    )


def _reaches(item: WatchItem, resource: Resource, selection: Selection) -> bool:
    """Whether a watch of `selection` gets `item`: an event about an object it selects; any
    other item (a bookmark, an error, an exception, `END`) reaches every watch."""
    if not isinstance(item, dict) or item.get("type") in ("BOOKMARK", "ERROR"):
        return True
    return _in(item.get("object") or {}, resource, selection)


def _meta(obj: JSON) -> JSON:
    meta: JSON = obj.setdefault("metadata", {})
    return meta


class FakeApi:
    def __init__(self) -> None:
        self.calls: list[Call] = []
        self.version = 0
        self._objects: dict[Resource, dict[str, JSON]] = {}
        self._streams: dict[Resource, dict[Selection, asyncio.Queue[WatchItem]]] = {}
        self._backlog: dict[Resource, list[WatchItem]] = {}
        self._failures: list[_Failure] = []
        self._uids = 0

    # What a test arranges: server-side state, watch scripts, failures.

    def put(self, resource: Resource, obj: JSON) -> JSON:
        """Store `obj` as the server would after a write: a new resourceVersion, and the stored
        object's UID (or a fresh one) when `obj` carries none."""
        stored = copy.deepcopy(obj)
        meta = _meta(stored)
        objects = self._objects.setdefault(resource, {})
        key = self._key(resource, meta.get("namespace"), meta["name"])
        if not meta.get("uid"):
            if key in objects:
                meta["uid"] = _meta(objects[key])["uid"]
            else:
                self._uids += 1
                meta["uid"] = f"uid-{self._uids}"
        self.version += 1
        meta["resourceVersion"] = str(self.version)
        objects[key] = stored
        return copy.deepcopy(stored)

    def remove(self, resource: Resource, name: str, *, namespace: str | None = None) -> JSON:
        """Drop an object from the server, as a deletion would; the removed object is returned."""
        removed = self._objects.get(resource, {}).pop(self._key(resource, namespace, name))
        self.version += 1
        _meta(removed)["resourceVersion"] = str(self.version)
        return removed

    def stored(self, resource: Resource, name: str, *, namespace: str | None = None) -> JSON | None:
        obj = self._objects.get(resource, {}).get(self._key(resource, namespace, name))
        return copy.deepcopy(obj) if obj is not None else None

    def publish(self, resource: Resource, event_type: str, obj: JSON) -> JSON:
        """Change the server's object and queue the watch event that reports the change."""
        meta = obj.get("metadata") or {}
        before = self.stored(resource, meta["name"], namespace=meta.get("namespace"))
        if event_type == "DELETED":
            changed = self.remove(resource, meta["name"], namespace=meta.get("namespace"))
        else:
            changed = self.put(resource, obj)
        event = {"type": event_type, "object": changed}
        streams = self._streams.get(resource)
        if not streams:
            self.send(resource, event)
            return changed
        # As the API server tells a selective watch: an object that comes into its selection
        # arrives as ADDED, one that leaves it as DELETED.
        for selection, stream in streams.items():
            was = before is not None and _in(before, resource, selection)
            now = _in(changed, resource, selection)
            if was or now:
                kind = event_type if was == now else ("ADDED" if now else "DELETED")
                stream.put_nowait(copy.deepcopy({"type": kind, "object": changed}))
        return changed

    def bookmark(self, resource: Resource) -> str:
        """Queue a BOOKMARK at a resourceVersion newer than anything stored; return it."""
        self.version += 1
        version = str(self.version)
        self.send(
            resource, {"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": version}}}
        )
        return version

    def expire(self, resource: Resource) -> None:
        """Queue the in-stream ERROR the server sends when a watch's version was compacted."""
        status = {
            "kind": "Status",
            "code": 410,
            "reason": "Expired",
            "message": "too old resource version",
        }
        self.send(resource, {"type": "ERROR", "object": status})

    def send(self, resource: Resource, item: WatchItem) -> None:
        """Queue a raw watch item: an event, an exception to raise mid-stream, or END."""
        streams = self._streams.get(resource)
        if not streams:
            self._backlog.setdefault(resource, []).append(
                copy.deepcopy(item) if isinstance(item, dict) else item
            )
            return
        for selection, stream in streams.items():
            if _reaches(item, resource, selection):
                stream.put_nowait(copy.deepcopy(item) if isinstance(item, dict) else item)

    def selects(
        self,
        resource: Resource,
        obj: JSON,
        *,
        namespace: str | None,
        field_selector: str | None,
        label_selector: str | None,
    ) -> bool:
        """Whether a list or watch of this selection would show `obj`."""
        return _reaches(
            {"type": "MODIFIED", "object": obj},
            resource,
            Selection(namespace, field_selector, label_selector),
        )

    def fail(
        self, verb: str, resource: Resource, error: ApiError, *, times: int | None = 1
    ) -> None:
        """Make the next `times` calls of `verb` on `resource` raise `error` (None: every call)."""
        self._failures.append(_Failure(verb, resource, error, times))

    def clear_failures(self) -> None:
        self._failures.clear()

    # What a test asserts on.

    @property
    def writes(self) -> list[Call]:
        return [call for call in self.calls if call.verb in WRITES]

    def calls_to(self, verb: str, resource: Resource) -> list[Call]:
        return [call for call in self.calls if call.verb == verb and call.resource == resource]

    # The `Api` protocol.

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
        self._record(
            "list",
            resource,
            namespace=namespace,
            limit=limit,
            continue_token=continue_token,
            field_selector=field_selector,
            label_selector=label_selector,
        )
        selection = Selection(namespace, field_selector, label_selector)
        self._stream(resource, selection)
        matching = [
            obj
            for _, obj in sorted(self._objects.get(resource, {}).items())
            if _in(obj, resource, selection)
        ]
        start = int(continue_token or 0)
        end = start + limit
        return ListPage(
            items=copy.deepcopy(matching[start:end]),
            resource_version=str(self.version),
            continue_token=str(end) if end < len(matching) else None,
        )

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
        """The events as the API server sends them: one line of JSON each (recorded as a
        `watch` call)."""
        self._record(
            "watch",
            resource,
            namespace=namespace,
            resource_version=resource_version,
            field_selector=field_selector,
            label_selector=label_selector,
            timeout_seconds=timeout_seconds,
        )
        stream = self._stream(resource, Selection(namespace, field_selector, label_selector))
        while True:
            item = await stream.get()
            if item is None:
                return
            if isinstance(item, BaseException):
                raise item
            yield orjson.dumps(item)

    async def get(self, resource: Resource, name: str, *, namespace: str | None = None) -> JSON:
        self._record("get", resource, name=name, namespace=namespace)
        return self._existing(resource, name, namespace)

    async def create(self, resource: Resource, body: JSON, *, namespace: str | None = None) -> JSON:
        self._record("create", resource, namespace=namespace, body=body)
        obj = copy.deepcopy(body)
        meta = _meta(obj)
        if namespace and resource.namespaced:
            meta["namespace"] = namespace
        if self._key(resource, meta.get("namespace"), meta["name"]) in self._objects.get(
            resource, {}
        ):
            raise ApiError(
                409, "AlreadyExists", f'{resource.plural} "{meta["name"]}" already exists'
            )
        meta.pop("uid", None)
        return self.put(resource, obj)

    async def replace(
        self, resource: Resource, name: str, body: JSON, *, namespace: str | None = None
    ) -> JSON:
        self._record("replace", resource, name=name, namespace=namespace, body=body)
        current = self._existing(resource, name, namespace)
        sent = (body.get("metadata") or {}).get("resourceVersion")
        if sent is not None and sent != _meta(current)["resourceVersion"]:
            raise conflict(
                resource,
                name,
                "the object has been modified; please apply your changes to the latest version "
                "and try again",
            )
        obj = copy.deepcopy(body)
        _meta(obj)["uid"] = _meta(current)["uid"]
        return self.put(resource, obj)

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
        extra = {"dry_run": True} if dry_run else {}
        self._record(
            "patch",
            resource,
            name=name,
            namespace=namespace,
            body=body,
            subresource=subresource,
            content_type=content_type,
            **extra,
        )
        current = self._existing(resource, name, namespace)
        self._check_uid(resource, name, current, (body.get("metadata") or {}).get("uid"))
        if dry_run:
            return copy.deepcopy(current)
        return self.put(resource, current)

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
        extra: dict[str, Any] = {"dry_run": True} if dry_run else {}
        self._record(
            "delete",
            resource,
            name=name,
            namespace=namespace,
            uid=uid,
            propagation=propagation,
            **extra,
        )
        current = self._existing(resource, name, namespace)
        self._check_uid(resource, name, current, uid)
        if not dry_run:
            self.remove(resource, name, namespace=namespace)

    # Internals.

    def _key(self, resource: Resource, namespace: str | None, name: str) -> str:
        return object_key(namespace if resource.namespaced else None, name)

    def _stream(self, resource: Resource, selection: Selection) -> asyncio.Queue[WatchItem]:
        streams = self._streams.setdefault(resource, {})
        stream = streams.get(selection)
        if stream is None:
            stream = streams[selection] = asyncio.Queue()
            for item in self._backlog.pop(resource, []):
                if _reaches(item, resource, selection):
                    stream.put_nowait(item)
        return stream

    def _existing(self, resource: Resource, name: str, namespace: str | None) -> JSON:
        obj = self._objects.get(resource, {}).get(self._key(resource, namespace, name))
        if obj is None:
            raise not_found(resource, name)
        return copy.deepcopy(obj)

    @staticmethod
    def _check_uid(resource: Resource, name: str, current: JSON, uid: str | None) -> None:
        actual = _meta(current)["uid"]
        if uid is not None and uid != actual:
            raise conflict(
                resource,
                name,
                f"Precondition failed: UID in precondition: {uid}, UID in object meta: {actual}",
            )

    def _record(
        self,
        verb: str,
        resource: Resource,
        *,
        name: str | None = None,
        namespace: str | None = None,
        body: JSON | None = None,
        **params: Any,
    ) -> None:
        self.calls.append(Call(verb, resource, name, namespace, copy.deepcopy(body), dict(params)))
        for failure in self._failures:
            if failure.verb == verb and failure.resource == resource:
                if failure.remaining is not None:
                    failure.remaining -= 1
                    if failure.remaining == 0:
                        self._failures.remove(failure)
                raise failure.error


def _selected(obj: JSON, field_selector: str | None) -> bool:
    """Whether `obj` matches a field selector of `path=value` and `path!=value` terms, as the API
    server reads one (a missing field is the empty string)."""
    for term in (field_selector or "").split(","):
        if not term:
            continue
        negated = "!=" in term
        path, value = term.split("!=" if negated else "=", 1)
        found: Any = obj
        for key in path.split("."):
            found = found.get(key, "") if isinstance(found, dict) else ""
        if (str(found) == value) == negated:
            return False
    return True


def _labelled(obj: JSON, label_selector: str | None) -> bool:
    """Whether `obj` matches a label selector of `key`, `!key`, `key=value` and `key!=value`
    terms (what the shell sends; set-based terms are not needed)."""
    labels: Mapping[str, str] = _meta(obj).get("labels") or {}
    for term in (label_selector or "").split(","):
        if not term:
            continue
        if "!=" in term:
            key, value = term.split("!=", 1)
            matched = labels.get(key) != value
        elif "=" in term:
            key, value = term.split("=", 1)
            matched = labels.get(key) == value
        elif term.startswith("!"):
            matched = term[1:] not in labels
        else:
            matched = term in labels
        if not matched:
            return False
    return True
