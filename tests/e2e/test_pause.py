"""`edgerollout pause` / `resume` against the lab: the annotation written and removed, and the
answers a user and a script see, kubectl's plugin form included."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml

from edgerollout.domain.vocabulary import PAUSED_ANNOTATION
from tests.e2e.support.cli import edgerollout, kubectl_edgerollout
from tests.e2e.support.lab import LabHandle, daemonset
from tests.e2e.support.seed import NAME, OLD, ON_DELETE

pytestmark = pytest.mark.lab(nodes=3)

ARU = {
    "apps.openyurt.io/update-strategy": "AdvancedRollingUpdate",
    "apps.openyurt.io/max-unavailable": "30%",
}
TEMPLATE_GENERATION = "deprecated.daemonset.template.generation"


async def user_annotations(kube: LabHandle, namespace: str) -> dict[str, str]:
    """The DaemonSet's annotations but the one the native controller keeps."""
    found = await kube.apps.read_namespaced_daemon_set(NAME, namespace)
    annotations = dict(found.metadata.annotations or {})
    annotations.pop(TEMPLATE_GENERATION, None)
    return annotations


def answer(result: subprocess.CompletedProcess[str]) -> tuple[int, str, str]:
    return result.returncode, result.stdout, result.stderr


async def test_pause_and_resume_write_the_annotation_and_refuse_to_repeat_themselves(
    kube: LabHandle, namespace: str
) -> None:
    await kube.apps.create_namespaced_daemon_set(
        namespace, daemonset(NAME, image=OLD, strategy=ON_DELETE, annotations=ARU)
    )
    kubeconfig = kube.lab.kubeconfig
    where = ("-n", namespace)

    paused = await kubectl_edgerollout(kubeconfig, "pause", NAME, *where)
    assert answer(paused) == (0, f"daemonset.apps/{NAME} paused\n", "")
    assert await user_annotations(kube, namespace) == {**ARU, PAUSED_ANNOTATION: "true"}

    again = await edgerollout(kubeconfig, "pause", NAME, *where)
    assert answer(again) == (1, "", f'error: daemonsets.apps "{NAME}" is already paused\n')
    assert await user_annotations(kube, namespace) == {**ARU, PAUSED_ANNOTATION: "true"}

    resumed = await edgerollout(kubeconfig, "resume", NAME, *where)
    assert answer(resumed) == (0, f"daemonset.apps/{NAME} resumed\n", "")
    assert await user_annotations(kube, namespace) == ARU

    again = await edgerollout(kubeconfig, "resume", NAME, *where)
    assert answer(again) == (1, "", f'error: daemonsets.apps "{NAME}" is not paused\n')
    assert await user_annotations(kube, namespace) == ARU

    for command in ("pause", "resume"):
        missing = await edgerollout(kubeconfig, command, "no-such-daemonset", *where)
        assert answer(missing) == (
            3,
            "",
            f'error: daemonset "no-such-daemonset" not found in namespace "{namespace}"\n',
        )


async def test_an_invalid_pause_value_is_replaced_by_pause_and_removed_by_resume(
    kube: LabHandle, namespace: str
) -> None:
    await kube.apps.create_namespaced_daemon_set(
        namespace,
        daemonset(
            NAME, image=OLD, strategy=ON_DELETE, annotations={**ARU, PAUSED_ANNOTATION: "yes"}
        ),
    )
    kubeconfig = kube.lab.kubeconfig
    warning = (
        f'warning: {PAUSED_ANNOTATION} was "yes", which is neither "true" nor "false" and held '
        "the rollout as paused; it is now "
    )

    paused = await edgerollout(kubeconfig, "pause", NAME, "-n", namespace)
    assert answer(paused) == (0, f"daemonset.apps/{NAME} paused\n", f'{warning}set to "true"\n')
    assert await user_annotations(kube, namespace) == {**ARU, PAUSED_ANNOTATION: "true"}

    patch = {"metadata": {"annotations": {PAUSED_ANNOTATION: "yes"}}}
    await kube.apps.patch_namespaced_daemon_set(NAME, namespace, patch)
    resumed = await edgerollout(kubeconfig, "resume", NAME, "-n", namespace)
    assert answer(resumed) == (0, f"daemonset.apps/{NAME} resumed\n", f"{warning}removed\n")
    assert await user_annotations(kube, namespace) == ARU


async def test_pause_with_an_unreachable_api_server_exits_4(
    kube: LabHandle, namespace: str, tmp_path: Path
) -> None:
    config = yaml.safe_load(kube.lab.kubeconfig.read_text())
    for entry in config["clusters"]:
        entry["cluster"]["server"] = "https://127.0.0.1:1"
    nowhere = tmp_path / "kubeconfig"
    nowhere.write_text(yaml.safe_dump(config))

    result = await edgerollout(nowhere, "pause", NAME, "-n", namespace)
    assert answer(result) == (
        4,
        "",
        "error: cannot reach the API server: GET "
        f"/apis/apps/v1/namespaces/{namespace}/daemonsets/{NAME}: cannot connect to "
        "127.0.0.1:1: Connect call failed ('127.0.0.1', 1)\n",
    )
