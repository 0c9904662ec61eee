"""One watch event, decoded to what a cache needs of it: its kind, its object's key and
resourceVersion, and what the cache keeps of the object.

A cache reads each line of a watch stream with its own `EventDecoder`: the generic one
(`json_events`) parses the whole object with orjson and hands it to the cache's transform; a pod
cache decodes only the fields it reads (`pod_fields`), which is most of what an event costs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Generic, TypeVar

import orjson

from edgerollout.kube.api import ApiError

T = TypeVar("T")


def object_key(namespace: str | None, name: str) -> str:
    """A cache's key of an object: `namespace/name`, or `name` for a cluster-scoped one."""
    return f"{namespace}/{name}" if namespace else name


def api_time(raw: str | None) -> datetime | None:
    """An RFC 3339 time as the API server writes it (None for none)."""
    if not raw:
        return None
    return datetime.fromisoformat(raw.replace("Z", "+00:00"))


@dataclass(frozen=True, slots=True)
class WatchEvent(Generic[T]):
    """`type` (ADDED, MODIFIED, DELETED, BOOKMARK, ERROR); `key` and `resource_version` of its
    object ("" and None where it has none); `kept`, what the cache keeps of an added or modified
    object (None: not one it keeps); `error`, an ERROR event's status as an `ApiError`."""

    type: str
    key: str
    resource_version: str | None
    kept: T | None = None
    error: ApiError | None = None


EventDecoder = Callable[[bytes], WatchEvent[T]]


def error_event(code: int, reason: str, message: str) -> WatchEvent[Any]:
    """An ERROR event: the code, reason and message of the API server's Status."""
    return WatchEvent("ERROR", "", None, error=ApiError(code, reason, message))


def json_events(transform: Callable[[dict[str, Any]], T | None]) -> EventDecoder[T]:
    """Each line parsed whole, its object passed to `transform` (not for a deletion)."""

    def decode(line: bytes) -> WatchEvent[T]:
        event = orjson.loads(line)
        kind = str(event.get("type"))
        obj = event.get("object") or {}
        if kind == "ERROR":
            return error_event(
                int(obj.get("code") or 0), str(obj.get("reason", "")), str(obj.get("message", ""))
            )
        meta = obj.get("metadata") or {}
        version = meta.get("resourceVersion")
        version = None if version is None else str(version)
        if kind == "BOOKMARK":
            return WatchEvent(kind, "", version)
        key = object_key(meta.get("namespace"), meta["name"])
        kept = None if kind == "DELETED" else transform(obj)
        return WatchEvent(kind, key, version, kept)

    return decode
