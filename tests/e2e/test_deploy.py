"""What a cluster operator installs (`deploy/base`), applied to a lab as `kubectl apply -k` does.

The lab's nodes are simulated, so the image never runs here: what is proven is that the API server
accepts every object, that each ServiceAccount can do exactly what the code needs and a
representative set of what it must not, and that the workloads are shaped as documented.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from edgerollout.lab import cluster

BASE = Path(__file__).resolve().parents[2] / "deploy" / "base"
NAMESPACE = "edgerollout-system"
CONTROLLER = f"system:serviceaccount:{NAMESPACE}:edgerollout-controller"
AGENT = f"system:serviceaccount:{NAMESPACE}:edgerollout-agent"
UPDATE_STRATEGY = "apps.openyurt.io/update-strategy"


def _kubectl(
    kubeconfig: Path, *args: str, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(Path(sys.executable).parent / "kubectl"), f"--kubeconfig={kubeconfig}", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def _rendered() -> list[dict[str, Any]]:
    result = subprocess.run(
        [str(Path(sys.executable).parent / "kubectl"), "kustomize", str(BASE)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return [doc for doc in yaml.safe_load_all(result.stdout) if doc]


@dataclass(frozen=True)
class Installed:
    kubeconfig: Path
    objects: list[dict[str, Any]]
    dry_run: subprocess.CompletedProcess[str]


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Installed]:
    folder = tmp_path_factory.mktemp("deploy-lab")
    lab = cluster.up(folder, nodes=2, say=lambda _: None)
    try:
        objects = _rendered()
        # A server dry run creates nothing, so it cannot create the Namespace the other objects
        # go into: apply only the rendered Namespace first, then dry-run everything.
        namespace = next(obj for obj in objects if obj["kind"] == "Namespace")
        created = _kubectl(
            lab.kubeconfig, "apply", "--server-side", "-f", "-", stdin=yaml.safe_dump(namespace)
        )
        assert created.returncode == 0, created.stderr
        dry_run = _kubectl(
            lab.kubeconfig, "apply", "--server-side", "--dry-run=server", "-k", str(BASE)
        )
        applied = _kubectl(lab.kubeconfig, "apply", "--server-side", "-k", str(BASE))
        assert applied.returncode == 0, applied.stderr
        yield Installed(kubeconfig=lab.kubeconfig, objects=objects, dry_run=dry_run)
    finally:
        cluster.down(folder, say=lambda _: None)


def _get(installed: Installed, kind: str, name: str) -> dict[str, Any]:
    result = _kubectl(installed.kubeconfig, "get", kind, name, "-n", NAMESPACE, "-o", "json")
    assert result.returncode == 0, result.stderr
    obj: dict[str, Any] = json.loads(result.stdout)
    return obj


def test_server_dry_run_accepts_every_object(installed: Installed) -> None:
    assert installed.dry_run.returncode == 0, installed.dry_run.stderr
    accepted = set()
    for line in installed.dry_run.stdout.splitlines():
        reference, _, outcome = line.partition(" ")
        assert outcome == "serverside-applied (server dry run)", line
        kind_and_group, _, name = reference.partition("/")
        accepted.add((kind_and_group.split(".")[0], name))
    expected = {(obj["kind"].lower(), obj["metadata"]["name"]) for obj in installed.objects}
    assert accepted == expected
    assert ("validatingadmissionpolicy", "edgerollout-agent-own-node") in accepted


@dataclass(frozen=True)
class Access:
    account: str
    verb: str
    resource: str
    namespace: str | None
    allowed: bool
    subresource: str | None = None

    @property
    def id(self) -> str:
        who = "controller" if self.account == CONTROLLER else "agent"
        what = f"{self.resource}/{self.subresource}" if self.subresource else self.resource
        where = self.namespace or "cluster"
        return f"{who}-{'may' if self.allowed else 'may-not'}-{self.verb}-{what}-in-{where}"


def _may(
    account: str, verb: str, resource: str, namespace: str | None = "default", **kw: Any
) -> Access:
    return Access(account, verb, resource, namespace, allowed=True, **kw)


def _may_not(
    account: str, verb: str, resource: str, namespace: str | None = "default", **kw: Any
) -> Access:
    return Access(account, verb, resource, namespace, allowed=False, **kw)


LEASE = "leases/edgerollout-controller"

ACCESS = [
    # The controller's caches, in any namespace (it may be limited to one with --namespace).
    *(
        _may(CONTROLLER, verb, resource)
        for resource in ("daemonsets", "pods", "controllerrevisions", "jobs")
        for verb in ("list", "watch")
    ),
    _may(CONTROLLER, "list", "nodes", None),
    _may(CONTROLLER, "watch", "nodes", None),
    # Its writes.
    _may(CONTROLLER, "delete", "pods"),
    _may(CONTROLLER, "patch", "pods", subresource="status"),
    _may(CONTROLLER, "create", "jobs"),
    _may(CONTROLLER, "delete", "jobs"),
    _may(CONTROLLER, "create", "events"),
    _may(CONTROLLER, "create", "leases", NAMESPACE),
    _may(CONTROLLER, "get", LEASE, NAMESPACE),
    _may(CONTROLLER, "update", LEASE, NAMESPACE),
    # What it must not do.
    _may_not(CONTROLLER, "delete", "daemonsets"),
    _may_not(CONTROLLER, "update", "daemonsets"),
    _may_not(CONTROLLER, "patch", "daemonsets"),
    _may_not(CONTROLLER, "create", "pods"),
    _may_not(CONTROLLER, "update", "pods"),
    _may_not(CONTROLLER, "patch", "pods"),
    _may_not(CONTROLLER, "update", "pods", subresource="status"),
    _may_not(CONTROLLER, "get", "secrets"),
    _may_not(CONTROLLER, "list", "secrets"),
    _may_not(CONTROLLER, "patch", "nodes", None),
    _may_not(CONTROLLER, "delete", "nodes", None),
    _may_not(CONTROLLER, "create", "leases", "kube-system"),
    _may_not(CONTROLLER, "update", "leases/kube-controller-manager", "kube-system"),
    _may_not(CONTROLLER, "update", "leases/another-lease", NAMESPACE),
    _may_not(CONTROLLER, "delete", LEASE, NAMESPACE),
    _may_not(CONTROLLER, "update", "jobs"),
    _may_not(CONTROLLER, "create", "clusterrolebindings", None),
    # The agent: read pods, delete them and patch their status (the admission policy limits
    # both to its own node), read DaemonSets.
    _may(AGENT, "get", "pods"),
    _may(AGENT, "list", "pods"),
    _may(AGENT, "watch", "pods"),
    _may(AGENT, "delete", "pods"),
    _may(AGENT, "patch", "pods", subresource="status"),
    _may(AGENT, "get", "daemonsets"),
    _may_not(AGENT, "create", "pods"),
    _may_not(AGENT, "update", "pods"),
    _may_not(AGENT, "list", "secrets"),
    _may_not(AGENT, "get", "secrets"),
    _may_not(AGENT, "update", "daemonsets"),
    _may_not(AGENT, "delete", "daemonsets"),
    _may_not(AGENT, "list", "nodes", None),
    _may_not(AGENT, "create", "jobs"),
    _may_not(AGENT, "create", "leases", NAMESPACE),
]


@pytest.mark.parametrize("access", ACCESS, ids=[access.id for access in ACCESS])
def test_service_account_may_do_exactly_what_the_code_needs(
    installed: Installed, access: Access
) -> None:
    args = ["auth", "can-i", access.verb, access.resource, f"--as={access.account}"]
    if access.subresource:
        args.append(f"--subresource={access.subresource}")
    if access.namespace:
        args += ["-n", access.namespace]
    result = _kubectl(installed.kubeconfig, *args)
    # `auth can-i` prints yes/no and exits 1 on "no"; anything else is an error.
    assert result.stdout.strip() == ("yes" if access.allowed else "no"), result.stderr


def test_controller_deployment_runs_two_leader_electing_replicas(installed: Installed) -> None:
    deployment = _get(installed, "deployment", "edgerollout-controller")
    spec = deployment["spec"]
    pod = spec["template"]["spec"]
    (container,) = pod["containers"]
    assert spec["replicas"] == 2
    assert pod["serviceAccountName"] == "edgerollout-controller"
    assert container["args"][0] == "controller"
    assert "--leader-elect" in container["args"]
    assert f"--leader-election-namespace={NAMESPACE}" in container["args"]
    ports = {port["name"]: port["containerPort"] for port in container["ports"]}
    assert ports == {"metrics": 8080, "health": 8081}
    assert "--health-address=0.0.0.0:8081" in container["args"]
    assert "--metrics-address=0.0.0.0:8080" in container["args"]
    assert container["livenessProbe"]["httpGet"] == {
        "path": "/healthz",
        "port": "health",
        "scheme": "HTTP",
    }
    assert container["readinessProbe"]["httpGet"] == {
        "path": "/readyz",
        "port": "health",
        "scheme": "HTTP",
    }
    assert set(container["resources"]) == {"requests", "limits"}
    security = container["securityContext"]
    assert security["readOnlyRootFilesystem"] is True
    assert security["runAsNonRoot"] is True
    assert security["allowPrivilegeEscalation"] is False
    assert security["capabilities"] == {"drop": ["ALL"]}
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}

    budget = _get(installed, "poddisruptionbudget", "edgerollout-controller")
    assert budget["spec"]["minAvailable"] == 1
    assert budget["spec"]["selector"] == spec["selector"]
    service = _get(installed, "service", "edgerollout-controller-metrics")
    assert service["spec"]["selector"] == spec["selector"]["matchLabels"]
    assert [(p["name"], p["targetPort"]) for p in service["spec"]["ports"]] == [
        ("metrics", "metrics")
    ]


def test_agent_daemonset_serves_loopback_on_every_node_with_a_pod_bound_token(
    installed: Installed,
) -> None:
    daemonset = _get(installed, "daemonset", "edgerollout-agent")
    assert UPDATE_STRATEGY not in daemonset["metadata"].get("annotations", {})
    assert daemonset["spec"]["updateStrategy"]["type"] == "RollingUpdate"
    pod = daemonset["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert pod["serviceAccountName"] == "edgerollout-agent"
    assert pod["hostNetwork"] is True
    assert pod["tolerations"] == [{"operator": "Exists"}]
    assert container["args"][0] == "agent"
    assert "--listen=127.0.0.1:10267" in container["args"]
    assert "--node-name=$(NODE_NAME)" in container["args"]
    assert container["env"] == [
        {
            "name": "NODE_NAME",
            "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "spec.nodeName"}},
        }
    ]
    assert container["livenessProbe"]["httpGet"]["host"] == "127.0.0.1"
    assert container["livenessProbe"]["httpGet"]["port"] == 10267
    assert set(container["resources"]) == {"requests", "limits"}
    security = container["securityContext"]
    assert security["runAsNonRoot"] is True
    assert security["readOnlyRootFilesystem"] is True
    assert security["capabilities"] == {"drop": ["ALL"]}

    volumes = {volume["name"]: volume for volume in pod["volumes"]}
    mounts = {mount["name"]: mount["mountPath"] for mount in container["volumeMounts"]}
    cache_dir = next(arg for arg in container["args"] if arg.startswith("--cache-dir="))
    assert volumes["cache"]["hostPath"]["path"] == cache_dir.removeprefix("--cache-dir=")
    assert mounts["cache"] == cache_dir.removeprefix("--cache-dir=")
    # The token comes only from the projected volume, bound to the pod (and so to its node).
    assert pod["automountServiceAccountToken"] is False
    sources = volumes["api-credentials"]["projected"]["sources"]
    assert any("serviceAccountToken" in source for source in sources)
    assert mounts["api-credentials"] == "/var/run/secrets/kubernetes.io/serviceaccount"
