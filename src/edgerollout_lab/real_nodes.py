"""Real nodes beside the simulated ones: a kubelet and a containerd each (design §11.7).

A real node `real-N` is, on this machine:

- the address 10.254.99.N on `lo`: the kubelet refuses a loopback node IP, and this kernel has no
  dummy interfaces;
- a cgroup root `/edgerollout-lab/real-N` under every cgroup v1 controller (the kubelet's cgroupfs
  driver; `cpuset` needs its CPUs and memory nodes copied from the parent);
- a containerd whose root, state, socket, runc root, CNI configuration and registry hosts are in
  the node's folder; its network namespaces are mounted under its state folder too; it pulls the
  lab's images through the node's link (paced at the node's rate, cut with it);
- a bridge `erlab-real-N` with host-local addresses for ordinary pods (10.254.(100+N).0/24, no
  masquerading, so no iptables rule);
- a kubelet with its root folder, certificates and pod logs in the node's folder, reaching the API
  server through the node's link (`lab disconnect` cuts it like a simulated node's).

The node's folder is `/var/lib/edgerollout-lab/<hash of DIR>/real-N`, linked as `DIR/real/real-N`:
unix socket paths (containerd's, the kubelet's) must stay under 108 bytes, and DIR may be deep.

These names are the machine's, not the lab's: one lab at a time may run real nodes, and
`/run/edgerollout-lab-real-nodes` names it. `teardown` undoes every piece whatever state it is in,
and a lab that starts real nodes first tears down what a lab that is gone left behind.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import psutil

from edgerollout_lab import packages, processes
from edgerollout_lab.build import binary

# Debian package → what shows it is installed.
PACKAGES = {
    "containerd": "/usr/bin/containerd",
    "runc": "/usr/sbin/runc",
    "containernetworking-plugins": "/usr/lib/cni/bridge",
    "docker-registry": "/usr/bin/docker-registry",
    "skopeo": "/usr/bin/skopeo",
    "umoci": "/usr/bin/umoci",
    "busybox-static": "/bin/busybox",
}
CNI_BIN = Path("/usr/lib/cni")
CGROUP_V1 = Path("/sys/fs/cgroup")
CGROUP_PARENT = "edgerollout-lab"
CONTAINER_LOG_LINKS = Path("/var/log/containers")
OWNER_FILE = Path("/run/edgerollout-lab-real-nodes")
# Unix socket paths (containerd's, the kubelet's) must be short: a lab's folder may be deep, so each
# node's state is kept here, under a hash of the lab's folder, and linked from it.
STATE = Path("/var/lib/edgerollout-lab")


class RealNodeError(RuntimeError):
    """A real node cannot be set up here; the message says why and what to do."""


def node_names(count: int) -> list[str]:
    return [f"real-{index}" for index in range(1, count + 1)]


@dataclass(frozen=True, slots=True)
class RealNode:
    name: str
    index: int
    folder: Path  # STATE/<hash of the lab's folder>/real-N, linked from DIR/real/real-N

    @property
    def address(self) -> str:
        return f"10.254.99.{self.index}"

    @property
    def pod_subnet(self) -> str:
        return f"10.254.{100 + self.index}.0/24"

    @property
    def bridge(self) -> str:
        return f"erlab-{self.name}"

    @property
    def cgroup_root(self) -> str:
        return f"/{CGROUP_PARENT}/{self.name}"

    @property
    def socket(self) -> Path:
        return self.folder / "containerd" / "containerd.sock"

    @property
    def runtime_endpoint(self) -> str:
        return f"unix://{self.socket}"

    @property
    def pod_logs(self) -> Path:
        return self.folder / "pod-logs"


def real_node(folder: Path, name: str) -> RealNode:
    index = int(name.removeprefix("real-"))
    digest = hashlib.sha256(str(folder).encode()).hexdigest()[:12]
    return RealNode(name=name, index=index, folder=STATE / digest / name)


# --- set-up ---------------------------------------------------------------------------------


def missing_packages() -> list[str]:
    return packages.missing(PACKAGES)


def ensure_packages(say: Callable[[str], None]) -> None:
    """Install the Debian packages real nodes need, or say which are missing and why not."""
    try:
        packages.ensure(PACKAGES, purpose="real nodes", say=say)
    except packages.PackageError as error:
        raise RealNodeError(str(error)) from None


def claim(folder: Path) -> None:
    """Make this lab the machine's one lab with real nodes, clearing what a gone lab left."""
    if OWNER_FILE.exists():
        owner = Path(OWNER_FILE.read_text().strip())
        if owner != folder and any(
            processes.is_running(owner, name)
            for name in processes.recorded_names(owner)
            if name.startswith("kubelet-")
        ):
            raise RealNodeError(
                f"the lab in {owner} runs real nodes; one lab at a time may: stop it with "
                f"`lab down --dir {owner}` first"
            )
        teardown(owner)
    OWNER_FILE.write_text(f"{folder}\n")


def _ip(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [processes.tool("ip"), *args], capture_output=True, text=True, check=False
    )


def _controllers(*, unified: bool = False) -> list[Path]:
    """The cgroup v1 hierarchies (and with `unified`, the v2 one, where runc adds its own)."""
    return [
        path
        for path in sorted(CGROUP_V1.iterdir())
        if path.is_dir()
        and (path / "cgroup.procs").exists()
        and (unified or path.name != "unified")
    ]


def prepare(folder: Path, node: RealNode) -> None:
    """The node's folder (linked from the lab's, so that teardown finds it) and its address on lo,
    where its link listens for its pods too. Doing it again does no harm."""
    node.folder.mkdir(parents=True, exist_ok=True)
    link = folder / "real" / node.name
    link.parent.mkdir(exist_ok=True)
    if not link.is_symlink():
        link.symlink_to(node.folder)
    added = _ip("addr", "add", f"{node.address}/32", "dev", "lo")
    if added.returncode != 0 and not any(
        already in added.stderr for already in ("File exists", "Address already assigned")
    ):
        raise RealNodeError(f"cannot add {node.address} to lo: {added.stderr.strip()}")


def _make_cgroups(node: RealNode) -> None:
    for controller in _controllers():
        path = controller / node.cgroup_root.lstrip("/")
        path.mkdir(parents=True, exist_ok=True)
        if controller.name == "cpuset":
            for step in (path.parent, path):
                for name in ("cpuset.cpus", "cpuset.mems"):
                    value = (step.parent / name).read_text()
                    if not (step / name).read_text().strip():
                        (step / name).write_text(value)


def _containerd_config(node: RealNode, registry: str, pull_port: int) -> Path:
    """Write the node's registry hosts, CNI configuration and containerd config; returns the last."""
    _write_registry_hosts(node, registry, pull_port)
    _write_cni_config(node)
    config = node.folder / "containerd" / "config.toml"
    config.write_text(_containerd_toml(node, registry))
    return config


def _write_registry_hosts(node: RealNode, registry: str, pull_port: int) -> None:
    """containerd's hosts for the lab's registry: pulls go through the node's link."""
    hosts = node.folder / "containerd" / "certs.d" / registry
    hosts.mkdir(parents=True, exist_ok=True)
    # Images are named after the registry; this node reaches it through its link.
    through_link = f"http://127.0.0.1:{pull_port}"
    (hosts / "hosts.toml").write_text(
        f'server = "{through_link}"\n\n'
        f'[host."{through_link}"]\n  capabilities = ["pull", "resolve"]\n'
    )


def _write_cni_config(node: RealNode) -> None:
    """A bridge with host-local addresses for the node's pods (see the module's description)."""
    cni = node.folder / "cni"
    (cni / "net.d").mkdir(parents=True, exist_ok=True)
    conflist = {
        "cniVersion": "1.0.0",
        "name": f"erlab-{node.name}",
        "plugins": [
            {
                "type": "bridge",
                "bridge": node.bridge,
                "isGateway": True,
                "ipMasq": False,
                "ipam": {
                    "type": "host-local",
                    "dataDir": str(cni / "ipam"),
                    "ranges": [[{"subnet": node.pod_subnet}]],
                    "routes": [{"dst": "0.0.0.0/0"}],
                },
            },
            {"type": "loopback"},
        ],
    }
    (cni / "net.d" / "10-lab.conflist").write_text(json.dumps(conflist, indent=2))


def _containerd_toml(node: RealNode, registry: str) -> str:
    """containerd's config.toml: its root, state, socket, runc root and CNI in the node's folder."""
    base = node.folder / "containerd"
    cni = node.folder / "cni"
    cri = 'plugins."io.containerd.grpc.v1.cri"'
    return f"""version = 2
root = "{base / "root"}"
state = "{base / "state"}"
[grpc]
  address = "{node.socket}"
[ttrpc]
  address = "{node.socket}.ttrpc"
[debug]
  address = ""
[plugins."io.containerd.internal.v1.opt"]
  path = "{base / "opt"}"
[{cri}]
  sandbox_image = "{registry}/pause:lab"
  # Root here may not raise a process's OOM score adjustment: without this every sandbox fails.
  restrict_oom_score_adj = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  # Every mount of the node below its folder, so that teardown finds them all.
  netns_mounts_under_state_dir = true
  [{cri}.containerd]
    default_runtime_name = "runc"
    [{cri}.containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [{cri}.containerd.runtimes.runc.options]
        Root = "{node.folder / "runc"}"
  [{cri}.cni]
    bin_dir = "{CNI_BIN}"
    conf_dir = "{cni / "net.d"}"
  [{cri}.registry]
    config_path = "{base / "certs.d"}"
"""


def _kubelet_config(
    node: RealNode, *, port: int, healthz_port: int, lease_seconds: int, client_ca: Path
) -> Path:
    config = {
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "kind": "KubeletConfiguration",
        "address": node.address,
        "port": port,
        "readOnlyPort": 0,
        "healthzBindAddress": "127.0.0.1",
        "healthzPort": healthz_port,
        "cgroupDriver": "cgroupfs",
        "cgroupRoot": node.cgroup_root,
        # This machine has cgroup v1 hierarchies, and swap may be on.
        "failCgroupV1": False,
        "failSwapOn": False,
        "podLogsDir": str(node.pod_logs),
        # Only the API server's client certificate (signed by the lab's CA): `kubectl logs`.
        "authentication": {
            "anonymous": {"enabled": False},
            "webhook": {"enabled": False},
            "x509": {"clientCAFile": str(client_ca)},
        },
        "authorization": {"mode": "AlwaysAllow"},
        # A lab shares the machine's disk: never evict or collect images for want of space.
        "evictionHard": {
            "memory.available": "1Mi",
            "nodefs.available": "1%",
            "imagefs.available": "1%",
        },
        "imageGCHighThresholdPercent": 100,
        "imageGCLowThresholdPercent": 99,
        "nodeLeaseDurationSeconds": lease_seconds,
        "containerRuntimeEndpoint": node.runtime_endpoint,
        "localStorageCapacityIsolation": False,
        "resolvConf": "/etc/resolv.conf",
    }
    path = node.folder / "kubelet.json"
    path.write_text(json.dumps(config, indent=2))
    return path


def start(
    folder: Path,
    node: RealNode,
    *,
    kubeconfig: Path,
    registry: str,
    pull_port: int,
    kubelet_port: int,
    healthz_port: int,
    lease_seconds: int,
    client_ca: Path,
) -> None:
    """Set up one real node and start its containerd and kubelet (Ready is waited for elsewhere)."""
    prepare(folder, node)
    _make_cgroups(node)
    config = _containerd_config(node, registry, pull_port)
    processes.start(
        folder, f"containerd-{node.name}", [processes.tool("containerd"), "--config", str(config)]
    )
    processes.wait_until(
        folder, f"containerd-{node.name}", node.socket.exists, timeout=30, what="listening"
    )
    kubelet_config = _kubelet_config(
        node,
        port=kubelet_port,
        healthz_port=healthz_port,
        lease_seconds=lease_seconds,
        client_ca=client_ca,
    )
    processes.start(
        folder,
        f"kubelet-{node.name}",
        [
            str(binary("kubelet")),
            f"--config={kubelet_config}",
            f"--kubeconfig={kubeconfig}",
            f"--root-dir={node.folder / 'kubelet'}",
            f"--cert-dir={node.folder / 'pki'}",
            f"--hostname-override={node.name}",
            f"--node-ip={node.address}",
            "--node-labels=lab.edgerollout.io/real=true",
            "--v=1",
        ],
    )


# --- teardown -------------------------------------------------------------------------------


def recorded(folder: Path) -> list[RealNode]:
    """The real nodes this lab set up (their folders exist), in order."""
    real = folder / "real"
    if not real.is_dir():
        return []
    names = sorted(path.name for path in real.iterdir() if path.name.startswith("real-"))
    return [real_node(folder, name) for name in names]


def _cgroup_pids(node: RealNode) -> set[int]:
    pids: set[int] = set()
    for controller in _controllers(unified=True):
        root = controller / node.cgroup_root.lstrip("/")
        if root.is_dir():
            for procs in root.rglob("cgroup.procs"):
                with contextlib.suppress(OSError, ValueError):
                    pids.update(int(line) for line in procs.read_text().split())
    return pids


def _shim_pids(node: RealNode) -> set[int]:
    """containerd's shims outlive it: found by the socket they were given."""
    pids = set()
    for proc in psutil.process_iter(["cmdline"]):
        cmdline = proc.info["cmdline"] or []
        if "-address" in cmdline and str(node.socket) in cmdline:
            pids.add(proc.pid)
    return pids


def _kill(pids: set[int]) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(_running(pid) for pid in pids):
        time.sleep(0.05)


def _running(pid: int) -> bool:
    """Whether `pid` is still a process that is not a zombie (one that ends while it is looked
    at is not)."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _mounts_under(folder: Path) -> list[str]:
    targets = []
    with open("/proc/self/mountinfo") as mountinfo:
        for line in mountinfo:
            target = line.split()[4].replace("\\040", " ")
            if target == str(folder) or target.startswith(f"{folder}/"):
                targets.append(target)
    return targets


def _remove_cgroups(node: RealNode) -> None:
    for controller in _controllers(unified=True):
        root = controller / node.cgroup_root.lstrip("/")
        if not root.is_dir():
            continue
        for path in sorted((p for p in root.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts)):
            with contextlib.suppress(OSError):
                path.rmdir()
        with contextlib.suppress(OSError):
            root.rmdir()
        with contextlib.suppress(OSError):
            root.parent.rmdir()  # the shared parent, once its last node is gone


def teardown(folder: Path) -> list[str]:
    """Undo every real node of the lab in folder; returns the names of those torn down."""
    nodes = recorded(folder)
    for node in nodes:
        for name in (f"kubelet-{node.name}", f"containerd-{node.name}"):
            processes.stop(folder, name)
        _kill(_cgroup_pids(node) | _shim_pids(node))
        for target in sorted(_mounts_under(node.folder), key=len, reverse=True):
            subprocess.run(
                [processes.tool("umount"), "-l", target], capture_output=True, check=False
            )
        _remove_cgroups(node)
        _ip("link", "del", node.bridge)
        _ip("addr", "del", f"{node.address}/32", "dev", "lo")
        if CONTAINER_LOG_LINKS.is_dir():
            for link in CONTAINER_LOG_LINKS.iterdir():
                if link.is_symlink() and str(os.readlink(link)).startswith(f"{node.pod_logs}/"):
                    link.unlink()
        shutil.rmtree(node.folder, ignore_errors=True)
        (folder / "real" / node.name).unlink(missing_ok=True)
        for empty in (node.folder.parent, STATE, folder / "real"):
            with contextlib.suppress(OSError):
                empty.rmdir()
    if OWNER_FILE.exists() and Path(OWNER_FILE.read_text().strip()) == folder:
        OWNER_FILE.unlink()
    return [node.name for node in nodes]
