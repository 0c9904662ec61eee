"""The command lines of the lab's upstream programs and how to tell that each one is serving.

Settings that differ from upstream defaults, and why:
- node monitoring is tight (grace period 10 s) so a cut link shows as NotReady within seconds, not
  the 50 s of a production cluster; KWOK renews node Leases every 2 s to match. `lab up
  --node-lease-seconds 40` gives the production cadence instead (a Lease renewal every 10 s, grace
  period 50 s): a fifth of the Lease renewals, about half the CPU of an idle 1,000-node lab.
- client QPS and API server in-flight limits are raised so a 1,000-node lab is limited by its CPU,
  not by client-side throttling.
- etcd skips fsync: the lab's data is thrown away anyway.
- the API server keeps an audit log of pod deletions and evictions, and of the controllers' lists,
  watches and Lease writes: an independent record of who deleted which pod, with which
  preconditions, and of when each controller reached the API server again after an outage.
"""

from __future__ import annotations

import json
import random
import socket
import ssl
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from edgerollout_lab.build import binary
from edgerollout_lab.kwok_stages import NODE_LEASE_SECONDS, node_monitor_grace_seconds
from edgerollout_lab.pki import PkiPaths

NODE_MONITOR_GRACE_SECONDS = node_monitor_grace_seconds(NODE_LEASE_SECONDS)
SERVICE_CIDR = "10.96.0.0/16"


_LOWEST_PORT = 10000


def _ephemeral_start() -> int:
    """Where the kernel starts picking ports for outgoing connections (Linux default 32768)."""
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def free_port() -> int:
    """A loopback port nothing listens on, below the kernel's ephemeral range.

    A port handed out by `bind(0)` comes from the ephemeral range, and any outgoing connection
    made before the program that should listen on it starts may take it. Ports below that range
    are only ever taken by an explicit bind, so choosing one at random and checking it is free
    leaves a race only with another program doing the same.
    """
    ceiling = _ephemeral_start()
    for _ in range(200):
        port = random.randrange(_LOWEST_PORT, ceiling)  # noqa: S311 - not security
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise OSError(f"no free loopback port between {_LOWEST_PORT} and {ceiling}")


@dataclass(frozen=True, slots=True)
class Ports:
    etcd_client: int
    etcd_peer: int
    apiserver: int
    controller_manager: int
    scheduler: int
    kwok: int

    @staticmethod
    def allocate() -> Ports:
        return Ports(
            etcd_client=free_port(),
            etcd_peer=free_port(),
            apiserver=free_port(),
            controller_manager=free_port(),
            scheduler=free_port(),
            kwok=free_port(),
        )


def etcd_argv(folder: Path, ports: Ports) -> list[str]:
    client = f"http://127.0.0.1:{ports.etcd_client}"
    peer = f"http://127.0.0.1:{ports.etcd_peer}"
    return [
        str(binary("etcd")),
        "--name=lab",
        f"--data-dir={folder / 'etcd'}",
        f"--listen-client-urls={client}",
        f"--advertise-client-urls={client}",
        f"--listen-peer-urls={peer}",
        f"--initial-advertise-peer-urls={peer}",
        f"--initial-cluster=lab={peer}",
        "--unsafe-no-fsync",
        "--quota-backend-bytes=4294967296",
        "--log-level=warn",
    ]


def apiserver_argv(folder: Path, ports: Ports, pki: PkiPaths) -> list[str]:
    return [
        str(binary("kube-apiserver")),
        "--bind-address=127.0.0.1",
        "--advertise-address=127.0.0.1",
        f"--secure-port={ports.apiserver}",
        f"--etcd-servers=http://127.0.0.1:{ports.etcd_client}",
        f"--tls-cert-file={pki.serving_cert}",
        f"--tls-private-key-file={pki.serving_key}",
        f"--client-ca-file={pki.ca_cert}",
        f"--token-auth-file={pki.tokens}",
        "--authorization-mode=Node,RBAC",
        # Real nodes' kubelets are reached at their node address (logs, exec), with a client
        # certificate their kubelets trust (the lab's CA).
        "--kubelet-preferred-address-types=InternalIP",
        f"--kubelet-client-certificate={pki.kubelet_client_cert}",
        f"--kubelet-client-key={pki.kubelet_client_key}",
        "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
        f"--service-account-key-file={pki.sa_public}",
        f"--service-account-signing-key-file={pki.sa_private}",
        f"--service-cluster-ip-range={SERVICE_CIDR}",
        f"--cert-dir={folder / 'pki' / 'apiserver'}",
        "--allow-privileged=true",
        "--max-requests-inflight=1000",
        "--max-mutating-requests-inflight=500",
        "--profiling=false",
        *audit_flags(folder),
        "--v=1",
    ]


AUDIT_LOG = "audit.log"
# The audit log is rotated at this size, and this many rotated files are kept: enough for every
# round of a 10,000-node benchmark, whose deletions are counted from them.
AUDIT_LOG_MB = 200
AUDIT_LOG_BACKUPS = 20
LAB_CONTROLLER_USER = "lab-controller"
"""The user tests run edgerollout's controller processes as (`controller_kubeconfig_path`)."""
CONTROLLER_MANAGER_USER = "system:kube-controller-manager"
# What tells who deleted which pod, with which preconditions: deletes and evictions of pods, at
# Request level (the DeleteOptions body), once each (when the response is complete). And, for a
# recovery's timeline, when the controllers reached the API server: every list and watch of
# kube-controller-manager's shared informers and of the lab's controller user (a watch is logged
# when its answer starts, a list when it ends), and that user's Lease writes, at Metadata level.
# Nothing else is recorded, so the log costs the API server next to nothing.
AUDIT_POLICY = {
    "apiVersion": "audit.k8s.io/v1",
    "kind": "Policy",
    "omitStages": ["RequestReceived", "Panic"],
    "rules": [
        {
            "level": "Request",
            "verbs": ["delete", "deletecollection"],
            "resources": [{"group": "", "resources": ["pods"]}],
            "omitStages": ["ResponseStarted"],
        },
        {
            "level": "Request",
            "verbs": ["create"],
            "resources": [{"group": "", "resources": ["pods/eviction"]}],
            "omitStages": ["ResponseStarted"],
        },
        {
            "level": "Metadata",
            "users": [LAB_CONTROLLER_USER, CONTROLLER_MANAGER_USER],
            "verbs": ["list", "watch"],
        },
        {
            "level": "Metadata",
            "users": [LAB_CONTROLLER_USER],
            "verbs": ["create", "update"],
            "resources": [{"group": "coordination.k8s.io", "resources": ["leases"]}],
            "omitStages": ["ResponseStarted"],
        },
        {"level": "None"},
    ],
}


def audit_log_path(folder: Path) -> Path:
    """The API server's audit log (one JSON event a line): pod deletions and evictions, the
    controllers' lists and watches, the lab controller's Lease writes."""
    return folder / "logs" / AUDIT_LOG


def audit_logs(folder: Path) -> list[Path]:
    """Every file of the audit log, oldest first: the ones it was rotated into (each at
    `AUDIT_LOG_MB`, `audit-<time>.log`), then the current one. A 10,000-node rollout writes
    more than one file."""
    logs = folder / "logs"
    rotated = sorted(logs.glob(f"{AUDIT_LOG.removesuffix('.log')}-*.log"))
    current = logs / AUDIT_LOG
    return [*rotated, *([current] if current.exists() else [])]


def controller_kubeconfig_path(folder: Path) -> Path:
    """The kubeconfig of `LAB_CONTROLLER_USER` (written when the lab starts)."""
    return folder / "kubeconfigs" / "controller.kubeconfig"


def audit_flags(folder: Path) -> list[str]:
    policy = folder / "audit-policy.json"
    policy.write_text(json.dumps(AUDIT_POLICY))
    return [
        f"--audit-policy-file={policy}",
        f"--audit-log-path={audit_log_path(folder)}",
        f"--audit-log-maxsize={AUDIT_LOG_MB}",
        f"--audit-log-maxbackup={AUDIT_LOG_BACKUPS}",
    ]


def controller_manager_cert(folder: Path) -> Path:
    """The certificate kube-controller-manager serves with (made by itself at its first start;
    the file holds its self-signed CA too, so it also verifies the connection)."""
    return folder / "pki" / "controller-manager" / "kube-controller-manager.crt"


def controller_manager_argv(
    folder: Path,
    ports: Ports,
    pki: PkiPaths,
    kubeconfig: Path,
    *,
    node_monitor_grace: int = NODE_MONITOR_GRACE_SECONDS,
) -> list[str]:
    return [
        str(binary("kube-controller-manager")),
        f"--kubeconfig={kubeconfig}",
        f"--authentication-kubeconfig={kubeconfig}",
        f"--authorization-kubeconfig={kubeconfig}",
        "--bind-address=127.0.0.1",
        f"--secure-port={ports.controller_manager}",
        f"--cert-dir={controller_manager_cert(folder).parent}",
        "--leader-elect=false",
        "--use-service-account-credentials=true",
        f"--service-account-private-key-file={pki.sa_private}",
        f"--root-ca-file={pki.ca_cert}",
        f"--service-cluster-ip-range={SERVICE_CIDR}",
        "--controllers=*",
        "--node-monitor-period=2s",
        f"--node-monitor-grace-period={node_monitor_grace}s",
        "--kube-api-qps=500",
        "--kube-api-burst=1000",
        "--concurrent-daemonset-syncs=4",
        "--profiling=false",
        "--v=1",
    ]


def scheduler_config(folder: Path, kubeconfig: Path) -> Path:
    path = folder / "scheduler.yaml"
    path.write_text(
        json.dumps(
            {
                "apiVersion": "kubescheduler.config.k8s.io/v1",
                "kind": "KubeSchedulerConfiguration",
                "clientConnection": {"kubeconfig": str(kubeconfig), "qps": 500, "burst": 1000},
                "leaderElection": {"leaderElect": False},
            }
        )
    )
    return path


def scheduler_argv(folder: Path, ports: Ports, kubeconfig: Path) -> list[str]:
    return [
        str(binary("kube-scheduler")),
        f"--config={scheduler_config(folder, kubeconfig)}",
        f"--authentication-kubeconfig={kubeconfig}",
        f"--authorization-kubeconfig={kubeconfig}",
        "--bind-address=127.0.0.1",
        f"--secure-port={ports.scheduler}",
        f"--cert-dir={folder / 'pki' / 'scheduler'}",
        "--v=1",
    ]


def kwok_argv(ports: Ports, kubeconfig: Path, config: Path) -> list[str]:
    return [
        str(binary("kwok")),
        f"--config={config}",
        f"--kubeconfig={kubeconfig}",
        f"--server-address=127.0.0.1:{ports.kwok}",
        "--node-ip=10.255.0.1",
        # At INFO it logs every Lease renewal: 16 MB in two minutes at 1,000 nodes.
        "--v=WARN",
    ]


def _get(url: str, *, token: str | None = None, ca_file: Path | None = None) -> tuple[int, bytes]:
    if url.startswith("https://"):
        if ca_file is not None:
            context = ssl.create_default_context(cafile=str(ca_file))
        else:
            # Components serve health on a certificate they made themselves at start-up.
            context = ssl.create_default_context()
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
    else:
        context = None
    request = urllib.request.Request(url)  # noqa: S310 - loopback URLs the lab built itself
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    with urllib.request.urlopen(request, timeout=2, context=context) as response:  # noqa: S310
        return int(response.status), bytes(response.read())


def etcd_healthy(ports: Ports) -> bool:
    status, body = _get(f"http://127.0.0.1:{ports.etcd_client}/health")
    return status == 200 and json.loads(body).get("health") == "true"


def apiserver_ready(ports: Ports, *, token: str, ca_file: Path) -> bool:
    status, body = _get(f"https://127.0.0.1:{ports.apiserver}/readyz", token=token, ca_file=ca_file)
    return status == 200 and body.strip() == b"ok"


def component_healthy(port: int, *, https: bool = True) -> bool:
    scheme = "https" if https else "http"
    status, body = _get(f"{scheme}://127.0.0.1:{port}/healthz")
    return status == 200 and body.strip() == b"ok"
