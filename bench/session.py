"""One lab for a group of scenarios: its folder, the admin's API client, the API server's metrics,
and (when asked) edgerollout's controller beside it."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path

from bench.controller import READY_TIMEOUT, Controller, start_controller
from bench.machine import Usage, lab_pids
from bench.metrics import Endpoint, Samples
from edgerollout.kube.api import KubeApi
from edgerollout_lab import cluster
from edgerollout_lab.control_plane import audit_logs
from edgerollout_lab.images import DEFAULT_PAYLOAD_BYTES
from edgerollout_lab.kwok_stages import NODE_LEASE_SECONDS

Say = Callable[[str], None]


@dataclass
class Session:
    folder: Path
    lab: cluster.Lab
    api: KubeApi
    apiserver: Endpoint
    controller_manager: Endpoint
    say: Say
    profile: Path | None = None
    controllers: list[Controller] = field(default_factory=list)
    profilers: list[subprocess.Popen[bytes]] = field(default_factory=list)

    @property
    def node_names(self) -> list[str]:
        return [node.name for node in self.lab.nodes]

    def apiserver_samples(self) -> Samples:
        return self.apiserver.read()

    def lab_usage(self) -> Usage:
        return Usage.of(lab_pids(self.folder))

    async def controller(
        self, *, namespace: str | None, name: str = "controller", extra: tuple[str, ...] = ()
    ) -> Controller:
        """Start edgerollout's controller and wait until its caches have listed."""
        handle = start_controller(
            self.lab.kubeconfig,
            self.folder / "logs" / f"{name}.log",
            namespace=namespace,
            extra=extra,
        )
        self.controllers.append(handle)
        if self.profile is not None:
            self.profilers.append(_profiler(handle, self.profile / f"{name}.speedscope.json"))
        handle.ready_seconds = await handle.wait_ready(timeout=READY_TIMEOUT)
        return handle

    async def disconnect(self, names: list[str]) -> None:
        await asyncio.to_thread(cluster.disconnect, self.folder, names)

    async def connect(self, names: list[str]) -> None:
        await asyncio.to_thread(cluster.connect, self.folder, names)

    def stop_controllers(self) -> None:
        for profiler in self.profilers:
            profiler.send_signal(signal.SIGINT)  # py-spy writes its profile when interrupted
            profiler.wait(timeout=60)
        self.profilers.clear()
        for handle in self.controllers:
            handle.stop()
        self.controllers.clear()


def _profiler(controller: Controller, output: Path) -> subprocess.Popen[bytes]:
    """py-spy sampling the controller (all its threads, native frames left out) until stopped."""
    output.parent.mkdir(parents=True, exist_ok=True)
    argv = [
        str(Path(sys.executable).parent / "py-spy"),
        "record",
        f"--pid={controller.pid}",
        "--format=speedscope",
        f"--output={output}",
        "--rate=50",
    ]
    log = output.with_suffix(".log")
    with log.open("wb") as out:
        return subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT)


def _copy_logs(folder: Path, into: Path) -> None:
    """The controllers' logs (what each decision was and when) and the API server's audit log
    of pod deletions (who deleted which pod), kept past the lab."""
    into.mkdir(parents=True, exist_ok=True)
    for log in [*(folder / "logs").glob("controller*.log"), *audit_logs(folder)]:
        shutil.copy(log, into / f"{folder.name}-{log.name}")


@contextlib.asynccontextmanager
async def lab_session(
    *,
    nodes: int,
    say: Say,
    agents: bool = False,
    parent: Path | None = None,
    profile: Path | None = None,
    keep_logs: Path | None = None,
    node_lease_seconds: int = NODE_LEASE_SECONDS,
    real_nodes: int = 0,
    payload_bytes: int = DEFAULT_PAYLOAD_BYTES,
    link_rate: float | None = None,
    fleet: bool = False,
) -> AsyncIterator[Session]:
    """A fresh lab of `nodes` nodes for the duration of the block; stopped and removed after."""
    folder = Path(tempfile.mkdtemp(prefix="edgerollout-bench-", dir=parent))
    real = f" and {real_nodes} real" if real_nodes else ""
    say(f"lab: starting {nodes} node(s){real}{' with agents' if agents else ''} in {folder}")
    try:
        # The lab's own functions run their own event loops: give them a thread.
        lab = await asyncio.to_thread(
            functools.partial(
                cluster.up,
                folder,
                nodes=nodes,
                say=lambda _: None,
                agents=agents,
                node_lease_seconds=node_lease_seconds,
                real_nodes=real_nodes,
                payload_bytes=payload_bytes,
                link_rate=link_rate,
                fleet=fleet,
            )
        )
        api = await KubeApi.connect(str(lab.kubeconfig))
        apiserver = Endpoint.apiserver(lab.kubeconfig)
        session = Session(
            folder=folder,
            lab=lab,
            api=api,
            apiserver=apiserver,
            controller_manager=Endpoint.controller_manager(folder, apiserver.token),
            say=say,
            profile=profile,
        )
        try:
            yield session
        finally:
            session.stop_controllers()
            await api.close()
            if keep_logs is not None:
                _copy_logs(folder, keep_logs)
    finally:
        await asyncio.to_thread(cluster.down, folder, say=lambda _: None)
        shutil.rmtree(folder, ignore_errors=True)
