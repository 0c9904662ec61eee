"""The controller's admission policy spells the pull Job the way `kube.manifests` renders it.

The API server proves the policy admits the rendered Job and refuses others
(tests/e2e/test_deploy.py); this keeps its literals from drifting from the code without a lab.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from edgerollout.domain.model import NodeName, PodUID
from edgerollout.domain.planning.prepull import PullJob
from edgerollout.domain.reporting.rollout_phase import RolloutPhase
from edgerollout.domain.vocabulary import (
    PAUSED_ANNOTATION,
    POD_IMAGE_READY,
    POD_NEED_UPGRADE,
    PREPULL_LABEL,
    ROLLOUT_CONDITION,
)
from edgerollout.kube.manifests import pull_job_manifest
from edgerollout.settings import CONTROLLER

ROOT = Path(__file__).resolve().parents[3]
POLICY = ROOT / "deploy" / "base" / "controller-policy.yaml"
CHART_FIELDS = Path("deploy", "helm", "edgerollout", "files", "allow-lists.yaml")
POLICIES = (
    "edgerollout-controller-prepull-jobs",
    "edgerollout-controller-daemon-pods",
    "edgerollout-controller-daemonset-pause",
    "edgerollout-controller-events",
    "edgerollout-controller-daemonset-condition",
)


def _policy(name: str = "edgerollout-controller-prepull-jobs") -> dict[str, Any]:
    (policy,) = (
        doc
        for doc in yaml.safe_load_all(POLICY.read_text())
        if doc["metadata"]["name"] == name and doc["kind"] == "ValidatingAdmissionPolicy"
    )
    return dict(policy)


def _job() -> PullJob:
    return PullJob(
        namespace="default",
        name="edgerollout-pull-web-abcde",
        pod_name="web-abcde",
        pod_uid=PodUID("0b3c1d2e"),
        node_name=NodeName("edge-1"),
        revision="6b755b65dd",
        images=("nginx:1.25",),
        tolerations=(),
        toolbox_image="busybox",
        deadline_seconds=60,
    )


def _rendered() -> dict[str, Any]:
    spec: dict[str, Any] = pull_job_manifest(_job())["spec"]["template"]["spec"]
    return spec


def test_policy_checks_the_pre_pull_label_the_controller_sets() -> None:
    (owned,) = (rule["expression"] for rule in _policy()["spec"]["validations"][:1])

    assert f"labels[?'{PREPULL_LABEL}']" in owned
    assert f"labels['{PREPULL_LABEL}']" in owned


def test_policy_names_the_toolbox_and_commands_of_the_rendered_job() -> None:
    spec = _rendered()
    (toolbox,) = spec["initContainers"]
    (pull,) = spec["containers"]
    (volume,) = spec["volumes"]
    shape = _policy()["spec"]["validations"][4]["expression"]

    # A CEL list or map literal of strings is spelled as Python's repr of the same value.
    assert f"initContainers[0].name == '{toolbox['name']}'" in shape
    assert f"== '{CONTROLLER.prepull.toolbox_image}'" in shape
    assert repr(toolbox["command"]) in shape
    assert repr(pull["command"]) in shape
    assert f"== {pull['resources']['requests']!r}" in shape
    assert f"== {pull['resources']['limits']!r}" in shape
    for mount in (toolbox["volumeMounts"][0], pull["volumeMounts"][0]):
        assert f"volumeMounts[0].name == '{volume['name']}'" in shape
        assert f"volumeMounts[0].mountPath == '{mount['mountPath']}'" in shape


def test_policy_holds_the_job_to_the_rendered_limits_and_the_deadline_flags_bounds() -> None:
    job = pull_job_manifest(_job())["spec"]
    spec = _policy()["spec"]["validations"][1]["expression"]
    pod = _policy()["spec"]["validations"][2]["expression"]

    assert job["backoffLimit"] == 0
    assert "spec.?backoffLimit.orValue(-1) == 0" in spec
    assert (
        f"?activeDeadlineSeconds.orValue(0) >= {CONTROLLER.prepull.shortest_deadline_seconds}"
        in spec
    )
    assert f"activeDeadlineSeconds <= {CONTROLLER.prepull.longest_deadline_seconds}" in spec
    assert f"?ttlSecondsAfterFinished.orValue(-1) == {job['ttlSecondsAfterFinished']}" in spec
    assert f"volumes[0].name == '{job['template']['spec']['volumes'][0]['name']}'" in pod


@pytest.mark.parametrize("name", POLICIES)
def test_policy_matches_the_controller_service_account_in_any_namespace(name: str) -> None:
    (match,) = _policy(name)["spec"]["matchConditions"]

    assert match["expression"] == (
        "request.userInfo.username.matches("
        "'^system:serviceaccount:[a-z0-9.-]+:edgerollout-controller$')"
    )


def test_each_policy_fails_closed_and_is_bound_to_deny() -> None:
    documents = list(yaml.safe_load_all(POLICY.read_text()))
    bindings = [doc for doc in documents if doc["kind"] == "ValidatingAdmissionPolicyBinding"]

    assert [_policy(name)["spec"]["failurePolicy"] for name in POLICIES] == ["Fail"] * len(POLICIES)
    assert [binding["spec"] for binding in bindings] == [
        {"policyName": name, "validationActions": ["Deny"]} for name in POLICIES
    ]


def test_pod_policy_lets_the_status_patch_change_only_the_controllers_conditions() -> None:
    (_, patch) = _policy("edgerollout-controller-daemon-pods")["spec"]["validations"]
    kept = f"!(c.type in {[POD_NEED_UPGRADE, POD_IMAGE_READY]!r})"

    assert patch["expression"].replace("\n", " ").count(kept) == 2


def test_pause_policy_spells_the_paused_annotation_the_controller_writes() -> None:
    validations = _policy("edgerollout-controller-daemonset-pause")["spec"]["validations"]
    (*_, annotations, paused) = validations

    # The one annotation the controller may change, excepted both ways; and its one value.
    assert annotations["expression"].count(f"k == '{PAUSED_ANNOTATION}'") == 2
    assert paused["expression"] == (
        f"variables.annotations[?'{PAUSED_ANNOTATION}'].orValue('') == 'true'"
    )


def test_condition_policy_spells_the_condition_and_every_phase_the_controller_writes() -> None:
    (others, written) = _policy("edgerollout-controller-daemonset-condition")["spec"]["validations"]
    reasons = written["expression"].split("c.?reason.orValue('') in ", 1)[1].rstrip(")")

    # Every other condition as it was, compared both ways; the controller's own holds a phase.
    assert others["expression"].count(f"c.type != '{ROLLOUT_CONDITION}'") == 2
    assert f"c.type != '{ROLLOUT_CONDITION}' ||" in written["expression"]
    assert yaml.safe_load(reasons) == [phase.value for phase in _ORDER_IN_POLICY]
    assert sorted(_ORDER_IN_POLICY) == sorted(RolloutPhase)
    assert "c.status in ['True', 'False', 'Unknown']" in written["expression"]


# The phases as the policy lists them: those that let the rollout go, then those that stop it.
_ORDER_IN_POLICY = (
    RolloutPhase.COMPLETE,
    RolloutPhase.ROLLING,
    RolloutPhase.WAITING_FOR_OFFLINE_NODES,
    RolloutPhase.HELD,
    RolloutPhase.MAINTENANCE_WINDOW_CLOSED,
    RolloutPhase.PAUSED,
    RolloutPhase.ROLLOUT_FAILED,
    RolloutPhase.PROGRESS_DEADLINE_EXCEEDED,
    RolloutPhase.INVALID_ANNOTATION,
)


# The object each type of files/allow-lists.yaml is read on, in the policy's CEL.
FIELDS_READ_ON = {
    "JobSpec": "variables.job.spec",
    "PodSpec": "variables.pod",
    "PodSecurityContext": "variables.pod.?securityContext",
    "Container": "c",
    "SecurityContext": "c.?securityContext",
    "VolumeMount": "m",
}


def test_policy_refuses_every_field_the_allow_list_leaves_out() -> None:
    fields = _allow_lists()
    del fields["ObjectMeta"], fields["DaemonSetSpec"]
    rules = _rules("edgerollout-controller-prepull-jobs")

    assert list(fields) == list(FIELDS_READ_ON)
    assert [
        f"{FIELDS_READ_ON[kind]}.?{field}"
        for kind, listed in fields.items()
        for field in listed["absent"]
        if f"!{FIELDS_READ_ON[kind]}.?{field}.hasValue()" not in rules
    ] == []


def _allow_lists() -> dict[str, Any]:
    lists: dict[str, Any] = yaml.safe_load((ROOT / CHART_FIELDS).read_text())
    return lists


def _rules(name: str) -> str:
    """Every CEL expression of the policy `name`: its variables' and its rules'."""
    spec = _policy(name)["spec"]
    return " ".join(e["expression"] for e in spec.get("variables", []) + spec["validations"])


def test_status_and_pause_rules_compare_every_metadata_field_an_update_can_change() -> None:
    compared = _allow_lists()["ObjectMeta"]["compared"]
    agent = yaml.safe_load_all((ROOT / "deploy" / "base" / "agent-identity.yaml").read_text())
    (own_node,) = (
        doc
        for doc in agent
        if doc["kind"] == "ValidatingAdmissionPolicy" and "own-node" in doc["metadata"]["name"]
    )
    rules = {
        "controller-status": _rules("edgerollout-controller-daemon-pods"),
        "agent-status": " ".join(rule["expression"] for rule in own_node["spec"]["validations"]),
        "pause": _rules("edgerollout-controller-daemonset-pause"),
        "rollout-condition": _rules("edgerollout-controller-daemonset-condition"),
    }

    assert {
        name: [field for field in compared if f"oldObject.metadata.?{field}" not in text]
        for name, text in rules.items()
    } == {name: [] for name in rules}
