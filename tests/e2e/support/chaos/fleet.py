"""The controller replicas of a chaos run, supervised as a Deployment would be, and their link.

`Fleet` starts one replica (or two with leader election), kills them on request, and restarts
any that exits by itself, as a kubelet restarts a crashed container. Every exit it did not cause
is recorded as a failure: a replica whose Lease lapsed stands again in its own process.

`Relay` puts a TCP relay (the lab's own link program) between the replicas and the API server,
so a run can cut their connections — watches included — and restore them.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from edgerollout_lab import link, processes
from edgerollout_lab.kubeconfig import read_kubeconfig, write_kubeconfig
from tests.e2e.support.controller_process import ControllerProcess

LEASE = "edgerollout-chaos"
LEASE_DURATION, RENEW_DEADLINE, RETRY_PERIOD = 4, 3, 1


@dataclass(frozen=True, slots=True)
class Exit:
    at: float
    identity: str
    code: int
    log_tail: str


@dataclass
class Fleet:
    kubeconfig: Path
    namespace: str
    logs: Path
    replicas: int = 1
    extra: tuple[str, ...] = ()
    processes: dict[str, ControllerProcess] = field(default_factory=dict)
    exits: list[Exit] = field(default_factory=list)
    kills: int = 0
    _killed: set[str] = field(default_factory=set)
    _supervisor: asyncio.Task[None] | None = None

    @property
    def leader_elect(self) -> bool:
        return self.replicas > 1

    def _argv(self, identity: str) -> list[str]:
        argv = [f"--namespace={self.namespace}", f"--identity={identity}", *self.extra]
        if self.leader_elect:
            argv += [
                "--leader-elect",
                f"--leader-election-namespace={self.namespace}",
                f"--leader-election-name={LEASE}",
                f"--lease-duration={LEASE_DURATION}",
                f"--renew-deadline={RENEW_DEADLINE}",
                f"--retry-period={RETRY_PERIOD}",
            ]
        return argv

    def launch(self, identity: str) -> None:
        self.processes[identity] = ControllerProcess.launch(
            self.kubeconfig, self.logs / f"{identity}.log", *self._argv(identity)
        )

    async def start(self) -> None:
        self.logs.mkdir(parents=True, exist_ok=True)
        for index in range(self.replicas):
            self.launch(f"replica-{index}")
        for replica in self.processes.values():
            await replica.wait_ready()
        self._supervisor = asyncio.create_task(self._supervise(), name="fleet")

    async def _supervise(self) -> None:
        while True:
            await asyncio.sleep(0.2)
            for identity, replica in list(self.processes.items()):
                code = replica.process.poll()
                if code is None or identity in self._killed:
                    continue
                tail = "\n".join(replica.log_text().splitlines()[-30:])
                self.exits.append(Exit(time.time(), identity, code, tail))
                self.launch(identity)

    def kill(self, identity: str) -> None:
        """SIGKILL the replica (it is not restarted until `revive`)."""
        self._killed.add(identity)
        self.processes[identity].kill()
        self.kills += 1

    def revive(self, identity: str) -> None:
        self._killed.discard(identity)
        self.launch(identity)

    def unexpected_exits(self) -> list[Exit]:
        return list(self.exits)

    async def stop(self) -> dict[str, int]:
        """SIGTERM every replica still running; their exit codes (each must be 0)."""
        if self._supervisor is not None:
            self._supervisor.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._supervisor
        codes: dict[str, int] = {}
        for identity, replica in self.processes.items():
            if identity not in self._killed:
                # A replica started moments ago has no SIGTERM handler yet: let it get there.
                await replica.wait_ready()
                codes[identity] = await asyncio.to_thread(replica.stop)
        return codes

    def logs_text(self) -> str:
        return "\n".join(
            f"--- {identity} log (tail) ---\n" + "\n".join(replica.log_text().splitlines()[-60:])
            for identity, replica in self.processes.items()
        )


class Relay:
    """One cuttable TCP relay from a loopback port to the API server (the lab's link program)."""

    NAME = "controller"

    def __init__(self, folder: Path, *, apiserver: str, admin_kubeconfig: Path) -> None:
        self.folder = folder
        host, _, port = apiserver.removeprefix("https://").rpartition(":")
        self.host, self.port = host, int(port)
        self.admin_kubeconfig = admin_kubeconfig
        self.kubeconfig = folder / "controller.kubeconfig"
        self.cuts = 0

    async def start(self) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        link.write_wanted(self.folder, host=self.host, port=self.port, links={self.NAME: True})
        argv = [sys.executable, "-m", "edgerollout_lab.link", str(self.folder)]
        processes.start(self.folder, "relay", argv)
        ports_file = self.folder / link.PORTS_FILE
        for _ in range(150):
            if ports_file.exists():
                break
            await asyncio.sleep(0.1)
        port = json.loads(ports_file.read_text())[self.NAME]
        admin = read_kubeconfig(self.admin_kubeconfig)
        write_kubeconfig(
            self.kubeconfig,
            server=f"https://127.0.0.1:{port}",
            ca_file=admin.ca_file,
            user=admin.user,
            token=admin.token,
        )

    def _set(self, up: bool) -> None:
        link.write_wanted(self.folder, host=self.host, port=self.port, links={self.NAME: up})
        processes.signal_process(self.folder, "relay", signal.SIGHUP)

    def cut(self) -> None:
        """Close every open connection (watches too) and refuse new ones."""
        self._set(False)
        self.cuts += 1

    def restore(self) -> None:
        self._set(True)

    def stop(self) -> None:
        processes.stop(self.folder, "relay", grace=2)
