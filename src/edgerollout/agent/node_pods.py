"""The pods bound to this node, kept by a watch and saved on disk, served even when the link is down.

An edge node must be able to ask "which of my pods can be upgraded?" while its uplink is gone, and
after the agent restarts while it is gone. So the cache follows a list+watch of this node's pods
(`fieldSelector=spec.nodeName=<node>`), writes them to `<cache-dir>/pods.json` (atomically, at most
once a second), and on start-up serves the saved copy until the API server answers. `age()` says
how stale the answer may be: 0 while the watch is connected, else the seconds since the API server
last answered.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from pathlib import Path
from typing import Any

import orjson

from edgerollout.kube.api import PODS, Api
from edgerollout.kube.informer import Informer
from edgerollout.kube.views import namespaced_name, object_key
from edgerollout.logfields import LogFields
from edgerollout.settings import AGENT, AgentSettings

JSON = dict[str, Any]
log = logging.getLogger("edgerollout.agent")


def _slim(pod: JSON) -> JSON:
    """The pod as served by GET /pods, without the bulky field-ownership bookkeeping."""
    meta = pod.get("metadata")
    if isinstance(meta, dict) and "managedFields" in meta:
        pod = {**pod, "metadata": {k: v for k, v in meta.items() if k != "managedFields"}}
    return pod


class NodePods:
    def __init__(
        self,
        api: Api,
        *,
        node_name: str,
        cache_dir: Path | None,
        settings: AgentSettings = AGENT,
    ) -> None:
        self.node_name = node_name
        self.cache_dir = cache_dir
        self.save_interval = settings.cache_save_interval
        self.informer: Informer[JSON] = Informer(
            api,
            PODS,
            _slim,
            field_selector=f"spec.nodeName={node_name}",
            relist_after_failure=True,
            max_backoff=settings.watch_max_backoff,
        )
        self.informer.on_contact = self._contact
        self.informer.on_lost = self._lost
        self.informer.subscribe(lambda old, new: self._changed())
        self.connected = False
        self.last_contact: float | None = None  # wall clock: it survives restarts on disk
        self.loaded_from_disk = False
        self._dirty = asyncio.Event()
        # Bumped on every change of the cache; the encoded pod list is kept until it moves.
        self._generation = 0
        self._encoded: tuple[int, bytes] | None = None

    @property
    def ready(self) -> bool:
        """Whether there is anything to serve: a list from the API server, or a saved copy."""
        return self.informer.synced.is_set() or self.loaded_from_disk

    def age(self) -> float:
        if self.connected or self.last_contact is None:
            return 0.0
        return max(0.0, time.time() - self.last_contact)

    def pods(self) -> list[JSON]:
        return sorted(self.informer.store.values(), key=namespaced_name)

    def encoded_pods(self) -> bytes:
        """`pods()` as JSON, encoded once per change of the cache rather than once per request:
        GET /pods is asked far more often than a node's pods change."""
        if self._encoded is None or self._encoded[0] != self._generation:
            self._encoded = (self._generation, orjson.dumps(self.pods()))
        return self._encoded[1]

    def get(self, namespace: str, name: str) -> JSON | None:
        return self.informer.get(f"{namespace}/{name}")

    def _contact(self) -> None:
        if not self.connected:
            log.info(
                "connected to the API server; pod cache is current",
                extra=LogFields(node=self.node_name),
            )
        self.connected = True
        self.last_contact = time.time()
        self._dirty.set()

    def _lost(self, error: Exception) -> None:
        if self.connected:
            # The watch was live until now: the cache was current up to this moment.
            self.last_contact = time.time()
            log.warning(
                "lost the API server; serving pods from the cache",
                extra=LogFields(node=self.node_name, error=str(error)),
            )
        self.connected = False

    def _changed(self) -> None:
        self._generation += 1
        self._dirty.set()

    @property
    def _file(self) -> Path | None:
        return self.cache_dir / "pods.json" if self.cache_dir is not None else None

    def load(self) -> None:
        """Serve the pods saved by an earlier run, if they are this node's."""
        path = self._file
        if path is None or not path.exists():
            return
        try:
            saved = orjson.loads(path.read_bytes())
        except (OSError, orjson.JSONDecodeError) as error:
            log.warning(
                "ignoring an unreadable pod cache",
                extra=LogFields(path=str(path), error=str(error)),
            )
            return
        if saved.get("node") != self.node_name:
            log.warning(
                "ignoring a pod cache saved for another node",
                extra=LogFields(path=str(path), node=str(saved.get("node"))),
            )
            return
        for pod in saved.get("items") or []:
            self.informer.store[object_key(*namespaced_name(pod))] = pod
        self.informer.resource_version = str(saved.get("resourceVersion") or "")
        self.last_contact = saved.get("lastContact")
        self.loaded_from_disk = True
        self._generation += 1
        log.info(
            "serving the pods saved at the last contact",
            extra=LogFields(node=self.node_name, count=len(self.informer.store)),
        )

    def save(self) -> None:
        path = self._file
        if path is None:
            return
        # The node's pod specs (their environment included) are for the agent alone: the
        # directory 0700, the file 0600, whatever umask or earlier run made them.
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.chmod(path.parent, 0o700)
        data = {
            "node": self.node_name,
            "lastContact": self.last_contact,
            "resourceVersion": self.informer.resource_version,
            "items": self.pods(),
        }
        temp = path.with_suffix(".tmp")
        descriptor = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(descriptor, "wb") as file:
            os.fchmod(file.fileno(), 0o600)
            file.write(orjson.dumps(data))
        os.replace(temp, path)

    async def run(self) -> None:
        self.load()
        saver = asyncio.create_task(self._save_loop(), name="pod-cache-saver")
        try:
            await self.informer.run()
        finally:
            saver.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await saver
            if self.informer.synced.is_set():
                self.save()

    async def _save_loop(self) -> None:
        while True:
            await self._dirty.wait()
            self._dirty.clear()
            if self.informer.synced.is_set():
                try:
                    self.save()
                except OSError as error:
                    log.warning(
                        "could not save the pod cache",
                        extra=LogFields(path=str(self._file), error=str(error)),
                    )
            await asyncio.sleep(self.save_interval)
