"""A lab: a real control plane and N simulated edge nodes in one folder, and what can be done to it.

`DIR/lab.json` is what tests and tools rely on (design §11.2): the admin kubeconfig and, per node,
its own kubeconfig (reaching the API server through the node's link) and its agent URL. Everything
else in DIR (pki/, logs/, pids/, etcd/, state.json) is the lab's own.
"""

from __future__ import annotations

import asyncio
import datetime
import functools
import json
import os
import shutil
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from edgerollout_lab import api, control_plane, images, link, processes
from edgerollout_lab import real_nodes as real_nodes_module
from edgerollout_lab.agents import STAND_IN_IMAGE, StartedAgent, start_agents
from edgerollout_lab.build import missing_components
from edgerollout_lab.control_plane import Ports
from edgerollout_lab.kubeconfig import read_kubeconfig, write_kubeconfig
from edgerollout_lab.kwok_stages import (
    FLEET_NODE_LEASE_SECONDS,
    MIN_NODE_LEASE_SECONDS,
    NODE_LEASE_SECONDS,
    kwok_config,
    node_monitor_grace_seconds,
)
from edgerollout_lab.pki import Identity, PkiPaths, create_pki, new_identity

LAB_FILE = "lab.json"
STATE_FILE = "state.json"
# The user of the lab's admin kubeconfig, as the API server (and its audit log) names it.
ADMIN_USER = "lab-admin"
CONTROLLER_KUBECONFIG = "controller"
# Stopped in this order: the simulated kubelets first, the store last.
COMPONENTS = ("kwok", "kube-scheduler", "kube-controller-manager", "link", "kube-apiserver", "etcd")

Say = Callable[[str], None]
# Ports are chosen free, but another program may bind one before our component does.
PORT_ATTEMPTS = 3


class LabError(RuntimeError):
    """The lab cannot do what was asked; the message says why and what to do."""


def node_names(count: int) -> list[str]:
    return [f"edge-{index}" for index in range(1, count + 1)]


@dataclass(frozen=True, slots=True)
class LabNode:
    name: str
    kubeconfig: Path
    agent_url: str | None
    # The bearer token the agent requires of callers (0600); None when no agent runs.
    agent_token_file: Path | None = None
    # A real kubelet and containerd (`lab up --real-nodes`), not a simulated node.
    real: bool = False
    runtime_endpoint: str | None = None

    @property
    def agent_token(self) -> str | None:
        if self.agent_token_file is None:
            return None
        return self.agent_token_file.read_text().strip()


@dataclass(frozen=True, slots=True)
class Lab:
    """What `lab.json` says about a running lab."""

    folder: Path
    kubeconfig: Path
    nodes: tuple[LabNode, ...]
    node_lease_seconds: int = NODE_LEASE_SECONDS
    # With real nodes: the lab's registry (HOST:PORT) and the workload images it holds.
    registry: str | None = None
    images: tuple[str, ...] = ()
    # The pre-pull toolbox real nodes can pull (the controller's --prepull-toolbox-image).
    toolbox_image: str | None = None
    # A revision whose container exits at once on a real node: crash-loops.
    crashing_image: str | None = None
    # With real nodes: the port where a real node's pods reach the API server, at the node's own
    # address (their status.hostIP), through the node's link (design §11.7).
    pod_api_port: int | None = None
    # A fleet lab (`lab up --fleet`): hour-long Leases, and `disconnect` marks the cut nodes
    # NotReady itself (design §11.10).
    fleet: bool = False

    @property
    def node_monitor_grace_seconds(self) -> int:
        """How long after its last Lease renewal a node is marked NotReady (Unknown)."""
        return node_monitor_grace_seconds(self.node_lease_seconds)

    @staticmethod
    def load(folder: Path) -> Lab:
        path = folder / LAB_FILE
        try:
            data = json.loads(path.read_text())
        except FileNotFoundError:
            raise LabError(f"no lab in {folder} (no {LAB_FILE}); start one with `lab up`") from None
        return Lab(
            folder=folder,
            kubeconfig=Path(data["kubeconfig"]),
            nodes=tuple(
                LabNode(
                    name=node["name"],
                    kubeconfig=Path(node["kubeconfig"]),
                    agent_url=node.get("agent_url"),
                    agent_token_file=(
                        Path(node["agent_token_file"]) if node.get("agent_token_file") else None
                    ),
                    real=bool(node.get("real", False)),
                    runtime_endpoint=node.get("runtime_endpoint"),
                )
                for node in data["nodes"]
            ),
            node_lease_seconds=int(data.get("node_lease_seconds", NODE_LEASE_SECONDS)),
            registry=data.get("registry"),
            images=tuple(data.get("images", ())),
            toolbox_image=data.get("toolbox_image"),
            crashing_image=data.get("crashing_image"),
            pod_api_port=data.get("pod_api_port"),
            fleet=bool(data.get("fleet", False)),
        )

    def node(self, name: str) -> LabNode:
        for node in self.nodes:
            if node.name == name:
                return node
        known = ", ".join(n.name for n in self.nodes)
        raise LabError(f"no node {name!r} in this lab (nodes: {known})")


def _write_json(path: Path, data: dict[str, Any]) -> None:
    temp = path.with_suffix(".tmp")
    temp.write_text(json.dumps(data, indent=2) + "\n")
    os.replace(temp, path)


def running_components(folder: Path) -> list[str]:
    return [name for name in processes.recorded_names(folder) if processes.is_running(folder, name)]


@dataclass(frozen=True, slots=True)
class _Request:
    """What `lab up` was asked for, checked by `up` and carried unchanged into each attempt."""

    nodes: int
    agents: bool
    lease_seconds: int
    real_count: int
    payload_bytes: int
    link_rate: float | None
    fleet: bool = False


def up(
    folder: Path,
    *,
    nodes: int,
    say: Say,
    agents: bool = False,
    node_lease_seconds: int = NODE_LEASE_SECONDS,
    real_nodes: int = 0,
    payload_bytes: int = images.DEFAULT_PAYLOAD_BYTES,
    link_rate: float | None = None,
    fleet: bool = False,
) -> Lab:
    """Start a lab with `nodes` simulated nodes (and `real_nodes` real ones) in folder; on any
    failure stop what was started and raise.

    `node_lease_seconds` is the nodes' Lease duration (renewed every quarter of it); the node
    lifecycle controller's grace period follows it (see `node_monitor_grace_seconds`). A `fleet`
    lab's Leases last `FLEET_NODE_LEASE_SECONDS` whatever `node_lease_seconds` says, and cutting
    a node's link marks it as the node lifecycle controller would (design §11.10)."""
    request = _Request(
        nodes=nodes,
        agents=agents,
        lease_seconds=FLEET_NODE_LEASE_SECONDS if fleet else node_lease_seconds,
        real_count=real_nodes,
        payload_bytes=payload_bytes,
        link_rate=link_rate,
        fleet=fleet,
    )
    _check_request(request)
    _check_built()
    folder = folder.resolve()
    _check_not_running(folder)
    folder.mkdir(parents=True, exist_ok=True)
    if real_nodes:
        _claim_for_real_nodes(folder, say)
    return _up_again_if_a_port_is_taken(folder, request, say)


def _check_request(request: _Request) -> None:
    if request.nodes < 1:
        raise LabError(f"--nodes must be at least 1 (got {request.nodes})")
    if request.lease_seconds < MIN_NODE_LEASE_SECONDS:
        raise LabError(
            f"--node-lease-seconds must be at least {MIN_NODE_LEASE_SECONDS} "
            f"(got {request.lease_seconds})"
        )


def _check_built() -> None:
    missing = missing_components()
    if missing:
        raise LabError(
            "the lab's programs are not built yet ("
            + ", ".join(c.name for c in missing)
            + "); run `./dev lab build` first"
        )


def _check_not_running(folder: Path) -> None:
    if running_components(folder):
        raise LabError(
            f"a lab is already running in {folder} ({', '.join(running_components(folder))}); "
            "stop it with `lab down` first"
        )


def _claim_for_real_nodes(folder: Path, say: Say) -> None:
    """Install what real nodes need and make this lab the machine's one lab with real nodes."""
    try:
        real_nodes_module.ensure_packages(say)
        real_nodes_module.claim(folder)
    except real_nodes_module.RealNodeError as error:
        raise LabError(str(error)) from None


def _up_again_if_a_port_is_taken(folder: Path, request: _Request, say: Say) -> Lab:
    """Start the lab; on any failure stop what was started, and when the failure was a port that
    another program took meanwhile, start again (at most PORT_ATTEMPTS times in all)."""
    for attempt in range(1, PORT_ATTEMPTS + 1):
        try:
            return _up(folder, request, say)
        except processes.ComponentError as error:
            down(folder, say=lambda _: None)
            if "address already in use" not in str(error) or attempt == PORT_ATTEMPTS:
                raise
            first_line = str(error).splitlines()[0]
            say(f"a port was taken by another program meanwhile; starting again ({first_line})")
        except BaseException:
            down(folder, say=lambda _: None)
            raise
    raise AssertionError("unreachable")


def _up(folder: Path, request: _Request, say: Say) -> Lab:
    """Start the lab's programs in order and describe it in lab.json (`up` stops them on failure)."""
    started = time.monotonic()
    _clear_stale_state(folder)
    simulated = node_names(request.nodes)
    real = real_nodes_module.node_names(request.real_count)
    names = [*simulated, *real]
    identities = _Identities.new(names)
    real_addresses = {name: real_nodes_module.real_node(folder, name).address for name in real}
    pki = create_pki(
        folder / "pki", identities.all(), server_addresses=tuple(real_addresses.values())
    )
    plane = _start_control_plane(folder, pki, identities.admin, say)
    plane.kubeconfig(CONTROLLER_KUBECONFIG, identities.controller)
    reals = (
        _prepare_for_real_nodes(folder, real, real_addresses, request.payload_bytes, say)
        if real
        else None
    )
    link_ports = _start_links(plane, names, reals, request.link_rate, say)
    _start_controllers_and_kwok(plane, identities, request.lease_seconds, say)
    _register_simulated_nodes(plane, simulated, say)
    node_kubeconfigs = _write_node_kubeconfigs(plane, identities.nodes, link_ports.api)
    if reals is not None:
        _start_real_nodes(
            plane, reals, node_kubeconfigs, link_ports.pulls, request.lease_seconds, say
        )
    _wait_until_ready(plane, names, simulated_count=request.nodes)
    agents_started: dict[str, StartedAgent] = {}
    if request.agents:
        agents_started = _start_node_agents(plane, names, link_ports.api, reals, request.nodes, say)
    lab_nodes = [
        _node_entry(folder, name, node_kubeconfigs[name], agents_started.get(name), real)
        for name in names
    ]
    _describe_lab(plane, request, lab_nodes, reals)
    say(
        f"lab ready in {time.monotonic() - started:.1f} s: {request.nodes} node(s), "
        f"kubeconfig {plane.admin_kubeconfig}"
    )
    return Lab.load(folder)


def _clear_stale_state(folder: Path) -> None:
    """Remove what a previous lab in folder left: its store, pids, description, state, links."""
    for stale in ("etcd", "pids", LAB_FILE, STATE_FILE, link.PORTS_FILE, link.REGISTRY_PORTS_FILE):
        path = folder / stale
        if path.is_dir():
            shutil.rmtree(path)
        else:
            path.unlink(missing_ok=True)


@dataclass(frozen=True, slots=True)
class _Identities:
    """Who uses the lab's API server: its admin, the control plane, KWOK and each node."""

    admin: Identity
    controller: Identity
    """What tests run controllers as: an admin the audit log follows (`control_plane.AUDIT_POLICY`)."""
    controller_manager: Identity
    scheduler: Identity
    kwok: Identity
    nodes: dict[str, Identity]

    @staticmethod
    def new(names: list[str]) -> _Identities:
        return _Identities(
            admin=new_identity(ADMIN_USER, "system:masters"),
            controller=new_identity(control_plane.LAB_CONTROLLER_USER, "system:masters"),
            controller_manager=new_identity("system:kube-controller-manager"),
            scheduler=new_identity("system:kube-scheduler"),
            kwok=new_identity(api.KWOK_USER, "system:masters"),
            nodes={name: new_identity(f"system:node:{name}", "system:nodes") for name in names},
        )

    def all(self) -> list[Identity]:
        return [
            self.admin,
            self.controller,
            self.controller_manager,
            self.scheduler,
            self.kwok,
            *self.nodes.values(),
        ]


@dataclass(frozen=True, slots=True)
class _ControlPlane:
    """The running API server as the lab's other programs reach it, and every component's port."""

    folder: Path
    ports: Ports
    pki: PkiPaths
    admin_kubeconfig: Path

    @property
    def server(self) -> str:
        return _server(self.ports)

    def kubeconfig(self, name: str, identity: Identity, url: str | None = None) -> Path:
        """Write `identity`'s kubeconfig, reaching the API server at url (by default directly)."""
        return _write_kubeconfig(self.folder, self.pki, name, identity, url or self.server)


def _server(ports: Ports) -> str:
    return f"https://127.0.0.1:{ports.apiserver}"


def _write_kubeconfig(folder: Path, pki: PkiPaths, name: str, identity: Identity, url: str) -> Path:
    return write_kubeconfig(
        folder / "kubeconfigs" / f"{name}.kubeconfig",
        server=url,
        ca_file=pki.ca_cert,
        user=identity.user,
        token=identity.token,
    )


def _start_control_plane(folder: Path, pki: PkiPaths, admin: Identity, say: Say) -> _ControlPlane:
    """etcd and the API server on free ports (kept in state.json), then the cut-links policy."""
    ports = Ports.allocate()
    plane = _ControlPlane(
        folder, ports, pki, _write_kubeconfig(folder, pki, "admin", admin, _server(ports))
    )
    _write_json(folder / STATE_FILE, {"ports": asdict(ports)})

    say(f"starting etcd on 127.0.0.1:{ports.etcd_client}")
    processes.start(folder, "etcd", control_plane.etcd_argv(folder, ports))
    processes.wait_until(
        folder, "etcd", lambda: control_plane.etcd_healthy(ports), timeout=30, what="healthy"
    )

    say(f"starting kube-apiserver on {plane.server}")
    processes.start(folder, "kube-apiserver", control_plane.apiserver_argv(folder, ports, pki))
    processes.wait_until(
        folder,
        "kube-apiserver",
        lambda: control_plane.apiserver_ready(ports, token=admin.token, ca_file=pki.ca_cert),
        timeout=90,
        what="ready",
    )

    asyncio.run(api.install_cut_links_policy(plane.admin_kubeconfig))
    return plane


@dataclass(frozen=True, slots=True)
class _RealNodes:
    """The lab's real nodes and what they need beside them: their addresses, the registry they
    pull from and the images it holds, and the port where their pods reach the API server."""

    names: list[str]
    addresses: dict[str, str]
    registry: images.Registry
    workload_images: list[str]
    pod_api_port: int


def _prepare_for_real_nodes(
    folder: Path, real: list[str], addresses: dict[str, str], payload_bytes: int, say: Say
) -> _RealNodes:
    """The registry holding the lab's images, a port for the nodes' pods, each node's folder and
    address: what real nodes need before the links start."""
    registry, workload_images = _start_registry(folder, say, payload_bytes=payload_bytes)
    pod_api_port = control_plane.free_port()
    for name in real:
        # Before the link starts: it listens on these addresses for the nodes' pods.
        real_nodes_module.prepare(folder, real_nodes_module.real_node(folder, name))
    return _RealNodes(real, addresses, registry, workload_images, pod_api_port)


def _start_registry(
    folder: Path, say: Say, *, payload_bytes: int
) -> tuple[images.Registry, list[str]]:
    port = control_plane.free_port()
    registry = images.Registry(address=f"127.0.0.1:{port}")
    say(f"starting the image registry on {registry.address}")
    processes.start(folder, "registry", images.registry_argv(folder, port))
    processes.wait_until(
        folder,
        "registry",
        functools.partial(images.registry_serving, registry),
        timeout=30,
        what="serving",
    )
    say("building the lab's images and pushing them to its registry")
    try:
        references = images.build_and_push(folder, registry, payload_bytes=payload_bytes)
    except images.ImageError as error:
        raise LabError(str(error)) from None
    return registry, references


@dataclass(frozen=True, slots=True)
class _LinkPorts:
    """Where each node's link listens: towards the API server and, for real nodes, the registry."""

    api: dict[str, int]
    pulls: dict[str, int]


def _start_links(
    plane: _ControlPlane,
    names: list[str],
    reals: _RealNodes | None,
    link_rate: float | None,
    say: Say,
) -> _LinkPorts:
    folder = plane.folder
    say(f"starting one network link per node ({len(names)})")
    link.write_wanted(
        folder,
        host="127.0.0.1",
        port=plane.ports.apiserver,
        links=dict.fromkeys(names, True),
        registry=reals.registry.host_and_port if reals else None,
        pulls=reals.names if reals else [],
        rate=link_rate,
        pod_api=(reals.pod_api_port, reals.addresses) if reals else None,
    )
    processes.start(folder, "link", [sys.executable, "-m", "edgerollout_lab.link", str(folder)])
    processes.wait_until(
        folder, "link", lambda: (folder / link.PORTS_FILE).exists(), timeout=30, what="listening"
    )
    return _LinkPorts(
        api=json.loads((folder / link.PORTS_FILE).read_text()),
        pulls=json.loads((folder / link.REGISTRY_PORTS_FILE).read_text()),
    )


def _start_controllers_and_kwok(
    plane: _ControlPlane, identities: _Identities, lease_seconds: int, say: Say
) -> None:
    """kube-controller-manager, kube-scheduler and KWOK, each waited for until healthy."""
    folder, ports = plane.folder, plane.ports
    say("starting kube-controller-manager and kube-scheduler")
    kcm_kubeconfig = plane.kubeconfig("kube-controller-manager", identities.controller_manager)
    processes.start(
        folder,
        "kube-controller-manager",
        control_plane.controller_manager_argv(
            folder,
            ports,
            plane.pki,
            kcm_kubeconfig,
            node_monitor_grace=node_monitor_grace_seconds(lease_seconds),
        ),
    )
    processes.start(
        folder,
        "kube-scheduler",
        control_plane.scheduler_argv(
            folder, ports, plane.kubeconfig("kube-scheduler", identities.scheduler)
        ),
    )
    kwok_config_path = folder / "kwok.yaml"
    kwok_config_path.write_text(kwok_config(lease_seconds))
    say("starting kwok (the nodes' simulated kubelets)")
    processes.start(
        folder,
        "kwok",
        control_plane.kwok_argv(ports, plane.kubeconfig("kwok", identities.kwok), kwok_config_path),
    )
    for name, port, https in (
        ("kube-controller-manager", ports.controller_manager, True),
        ("kube-scheduler", ports.scheduler, True),
        ("kwok", ports.kwok, False),
    ):
        processes.wait_until(
            folder,
            name,
            functools.partial(control_plane.component_healthy, port, https=https),
            timeout=60,
            what="healthy",
        )


def _register_simulated_nodes(plane: _ControlPlane, simulated: list[str], say: Say) -> None:
    nodes = len(simulated)
    say(
        f"registering {nodes} node(s): {simulated[0]}{' ... ' + simulated[-1] if nodes > 1 else ''}"
    )
    asyncio.run(api.create_nodes(plane.admin_kubeconfig, simulated))


def _write_node_kubeconfigs(
    plane: _ControlPlane, identities: dict[str, Identity], link_ports: dict[str, int]
) -> dict[str, Path]:
    """Each node's kubeconfig, reaching the API server through the node's link."""
    return {
        name: plane.kubeconfig(f"node-{name}", identity, f"https://127.0.0.1:{link_ports[name]}")
        for name, identity in identities.items()
    }


def _start_real_nodes(
    plane: _ControlPlane,
    reals: _RealNodes,
    node_kubeconfigs: dict[str, Path],
    pull_ports: dict[str, int],
    lease_seconds: int,
    say: Say,
) -> None:
    real = reals.names
    say(f"starting {len(real)} real node(s) (containerd and a kubelet each): {', '.join(real)}")
    for name in real:
        real_nodes_module.start(
            plane.folder,
            real_nodes_module.real_node(plane.folder, name),
            kubeconfig=node_kubeconfigs[name],
            registry=reals.registry.address,
            pull_port=pull_ports[name],
            kubelet_port=control_plane.free_port(),
            healthz_port=control_plane.free_port(),
            lease_seconds=lease_seconds,
            client_ca=plane.pki.ca_cert,
        )


def _wait_until_ready(plane: _ControlPlane, names: list[str], *, simulated_count: int) -> None:
    """Every node Ready, and the default service account made (pods need it)."""
    node_timeout = 60 + simulated_count * 0.2
    asyncio.run(api.wait_nodes(plane.admin_kubeconfig, names, status="True", timeout=node_timeout))
    asyncio.run(api.wait_default_service_account(plane.admin_kubeconfig, timeout=60))


def _start_node_agents(
    plane: _ControlPlane,
    names: list[str],
    link_ports: dict[str, int],
    reals: _RealNodes | None,
    count: int,
    say: Say,
) -> dict[str, StartedAgent]:
    say(f"starting {count} agent(s), each behind its node's link")
    return start_agents(
        plane.folder,
        admin_kubeconfig=plane.admin_kubeconfig,
        ca_file=plane.pki.ca_cert,
        link_ports=link_ports,
        nodes=names,
        stand_in_image=(reals.registry.reference(images.PAUSE_IMAGE) if reals else STAND_IN_IMAGE),
    )


def _node_entry(
    folder: Path, name: str, kubeconfig: Path, agent: StartedAgent | None, real: list[str]
) -> dict[str, Any]:
    """A node as lab.json describes it."""
    entry: dict[str, Any] = {
        "name": name,
        "kubeconfig": str(kubeconfig),
        "agent_url": agent.url if agent is not None else None,
        "agent_token_file": str(agent.token_file) if agent is not None else None,
    }
    if name in real:
        node = real_nodes_module.real_node(folder, name)
        entry.update(real=True, runtime_endpoint=node.runtime_endpoint)
    return entry


def _describe_lab(
    plane: _ControlPlane,
    request: _Request,
    lab_nodes: list[dict[str, Any]],
    reals: _RealNodes | None,
) -> None:
    """Write lab.json, what tests and tools rely on (see `Lab`)."""
    described: dict[str, Any] = {
        "kubeconfig": str(plane.admin_kubeconfig),
        "server": plane.server,
        "node_lease_seconds": request.lease_seconds,
        "fleet": request.fleet,
        "nodes": lab_nodes,
    }
    if reals is not None:
        registry = reals.registry
        described.update(
            registry=registry.address,
            images=reals.workload_images,
            toolbox_image=registry.reference(images.TOOLBOX_IMAGE),
            crashing_image=registry.reference(images.CRASHING_IMAGE),
            pod_api_port=reals.pod_api_port,
        )
    _write_json(plane.folder / LAB_FILE, described)


def down(folder: Path, *, say: Say) -> list[str]:
    """Stop every program this lab started; returns the names of those that were running."""
    folder = folder.resolve()
    stopped = []
    # Agents and other extras first, then the control plane from the kubelets down to the store.
    names = [name for name in processes.recorded_names(folder) if name not in COMPONENTS]
    names += [name for name in COMPONENTS if name in processes.recorded_names(folder)]
    for name in names:
        if processes.stop(folder, name):
            stopped.append(name)
            say(f"stopped {name}")
    for name in real_nodes_module.teardown(folder):
        say(f"tore down real node {name}: containers, mounts, cgroups, bridge, address")
    (folder / LAB_FILE).unlink(missing_ok=True)
    if not stopped:
        say(f"nothing was running in {folder}")
    return stopped


def _set_links(folder: Path, names: list[str], *, up: bool) -> Lab:
    lab = Lab.load(folder.resolve())
    for name in names:
        lab.node(name)
    link.set_up(lab.folder, dict.fromkeys(names, up))
    processes.signal_process(lab.folder, "link", signal.SIGHUP)
    since = datetime.datetime.now(datetime.UTC)
    real = {node.name for node in lab.nodes if node.real}
    asyncio.run(api.set_links(lab.kubeconfig, names, up=up, since=since, real=real, mark=lab.fleet))
    return lab


RESTARTABLE = ("etcd", "kube-apiserver")


def restart(folder: Path, component: str, *, down_for: float = 0.0) -> float:
    """Stop a control-plane component and start it again on the same ports and data, at least
    `down_for` seconds after it stopped.

    Returns the seconds it was unavailable (stopped until healthy again). Clients of the API
    server see their connections close and reconnect; etcd keeps its data directory."""
    folder = folder.resolve()
    if component not in RESTARTABLE:
        raise LabError(
            f"cannot restart {component!r}: restartable components are {', '.join(RESTARTABLE)}"
        )
    lab = Lab.load(folder)
    ports = lab_ports(folder)
    started = time.monotonic()
    processes.restart(folder, component, down_for=down_for)
    if component == "etcd":
        check = functools.partial(control_plane.etcd_healthy, ports)
        what = "healthy"
    else:
        admin = read_kubeconfig(lab.kubeconfig)
        check = functools.partial(
            control_plane.apiserver_ready, ports, token=admin.token, ca_file=admin.ca_file
        )
        what = "ready"
    processes.wait_until(folder, component, check, timeout=90, what=what)
    return time.monotonic() - started


def lab_ports(folder: Path) -> Ports:
    """The ports the running lab's programs listen on (chosen free when it started)."""
    return Ports(**json.loads((folder / STATE_FILE).read_text())["ports"])


def set_link_rate(folder: Path, name: str, rate: float | None) -> Lab:
    """Pace a real node's image pulls at `rate` bytes per second (None: unlimited)."""
    lab = Lab.load(folder.resolve())
    lab.node(name)
    try:
        link.set_rate(lab.folder, name, rate)
    except ValueError as error:
        raise LabError(str(error)) from None
    processes.signal_process(lab.folder, "link", signal.SIGHUP)
    return lab


def disconnect(folder: Path, names: list[str]) -> Lab:
    """Cut the nodes' links: their agents lose the API server and their kubelets go silent."""
    return _set_links(folder, names, up=False)


def connect(folder: Path, names: list[str]) -> Lab:
    """Restore the nodes' links: heartbeats resume and their pods report Ready again."""
    return _set_links(folder, names, up=True)


@dataclass(frozen=True, slots=True)
class NodeStatus:
    name: str
    ready: str
    link_up: bool


def status(folder: Path) -> tuple[list[str], list[NodeStatus]]:
    lab = Lab.load(folder.resolve())
    _, _, wanted = link.read_wanted(lab.folder)
    readiness = asyncio.run(api.node_readiness(lab.kubeconfig))
    nodes = [
        NodeStatus(
            name=node.name, ready=readiness.get(node.name, "absent"), link_up=wanted[node.name]
        )
        for node in lab.nodes
    ]
    return running_components(lab.folder), nodes
