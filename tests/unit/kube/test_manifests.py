"""The pull Job manifest rendered from a `PullJob` decision."""

from edgerollout.domain.planning.prepull import DAEMON_TOLERATIONS, job_name, pull_job
from edgerollout.kube.manifests import pull_job_manifest

from ..domain.builders import NEW, OLD, pod, uid
from ..domain.test_prepull import TEMPLATE, TOOLS, waiting


def test_pull_job_is_named_for_the_pod_and_revision_owned_by_the_pod_and_pinned_to_its_node() -> (
    None
):
    requester = pod("p1", "edge-1", revision=OLD, conditions=waiting(NEW))
    job = pull_job_manifest(pull_job(requester, revision=NEW, template=TEMPLATE, settings=TOOLS))
    assert job["metadata"]["name"] == job_name(requester, NEW)
    assert job["metadata"]["labels"] == {"edgerollout.io/prepull-for": "p1"}
    assert job["metadata"]["annotations"] == {"edgerollout.io/prepull-revision": NEW}
    assert job["metadata"]["ownerReferences"] == [
        {"apiVersion": "v1", "kind": "Pod", "name": "p1", "uid": uid("p1")}
    ]
    assert job["spec"]["template"]["spec"]["nodeName"] == "edge-1"


def test_pull_job_runs_every_image_with_a_copied_static_busybox_not_the_images_own_binaries() -> (
    None
):
    requester = pod("p1", "edge-1", revision=OLD, conditions=waiting(NEW))
    job = pull_job_manifest(pull_job(requester, revision=NEW, template=TEMPLATE, settings=TOOLS))
    spec = job["spec"]["template"]["spec"]

    assert [c["image"] for c in spec["initContainers"]] == ["tools:1"]
    assert spec["initContainers"][0]["command"] == [
        "cp",
        "/bin/busybox",
        "/edgerollout-pull/busybox",
    ]
    assert [(c["image"], c["command"]) for c in spec["containers"]] == [
        ("nginx:1.19.5", ["/edgerollout-pull/busybox", "true"]),
        ("gcr.io/distroless/static:nonroot", ["/edgerollout-pull/busybox", "true"]),
    ]
    assert spec["restartPolicy"] == "Never"
    assert spec["automountServiceAccountToken"] is False
    assert spec["imagePullSecrets"] == [{"name": "registry"}]
    assert spec["serviceAccountName"] == "nginx"
    assert job["spec"]["backoffLimit"] == 0
    assert job["spec"]["activeDeadlineSeconds"] == 90


def test_pull_job_tolerates_what_the_daemonset_pods_tolerate() -> None:
    requester = pod("p1", "edge-1", revision=OLD, conditions=waiting(NEW))
    job = pull_job_manifest(pull_job(requester, revision=NEW, template=TEMPLATE, settings=TOOLS))
    assert job["spec"]["template"]["spec"]["tolerations"] == [
        {"key": "edge", "operator": "Exists", "effect": "NoSchedule"},
        *DAEMON_TOLERATIONS,
    ]


RESTRICTED_CONTAINER = {
    "runAsNonRoot": True,
    "runAsUser": 65532,
    "runAsGroup": 65532,
    "allowPrivilegeEscalation": False,
    "capabilities": {"drop": ["ALL"]},
    "seccompProfile": {"type": "RuntimeDefault"},
    "readOnlyRootFilesystem": True,
}


def test_pull_job_passes_pod_security_restricted_in_every_container() -> None:
    requester = pod("p1", "edge-1", revision=OLD, conditions=waiting(NEW))
    job = pull_job_manifest(pull_job(requester, revision=NEW, template=TEMPLATE, settings=TOOLS))
    spec = job["spec"]["template"]["spec"]

    assert spec["securityContext"] == {
        "runAsNonRoot": True,
        "runAsUser": 65532,
        "runAsGroup": 65532,
        "seccompProfile": {"type": "RuntimeDefault"},
    }
    containers = [*spec["initContainers"], *spec["containers"]]
    assert [c["name"] for c in containers] == ["toolbox", "pull-0", "pull-1"]
    assert [c["securityContext"] for c in containers] == [RESTRICTED_CONTAINER] * 3
    assert [c["resources"] for c in containers] == [
        {"requests": {"cpu": "1m", "memory": "4Mi"}, "limits": {"cpu": "50m", "memory": "16Mi"}}
    ] * 3
    # The only writable place is the emptyDir the toolbox copies busybox into; no host path.
    assert spec["volumes"] == [{"name": "toolbox", "emptyDir": {}}]
    assert [c["volumeMounts"] for c in containers] == [
        [{"name": "toolbox", "mountPath": "/edgerollout-pull"}],
        [{"name": "toolbox", "mountPath": "/edgerollout-pull", "readOnly": True}],
        [{"name": "toolbox", "mountPath": "/edgerollout-pull", "readOnly": True}],
    ]
    for forbidden in ("hostNetwork", "hostPID", "hostIPC"):
        assert forbidden not in spec
