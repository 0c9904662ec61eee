"""The chart's switch for rolling back on failure (design §13.4.1): off by default; per namespace,
one value renders the controller's flags, its `get` Roles and the admission policy that confines
the template write, each spelled as the controller writes it."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from edgerollout.domain.spec.on_failure import RolledBack
from edgerollout.domain.vocabulary import (
    ON_FAILURE_ANNOTATION,
    ROLLBACK_ROLE_BINDING,
    ROLLED_BACK_ANNOTATION,
    TEMPLATE_GENERATION_ANNOTATION,
)
from tests.unit.deploy.charted import CHART, charted

ROLLBACK_POLICY = "edgerollout-controller-daemonset-rollback"
PAUSE_POLICY = "edgerollout-controller-daemonset-pause"
SWITCHED_ON = {"controller": {"rollback": {"namespaces": ["shop-1", "shop-2"]}}}


def _named(objects: list[dict[str, Any]], kind: str, name: str) -> list[dict[str, Any]]:
    return [o for o in objects if o["kind"] == kind and o["metadata"]["name"] == name]


def _args(objects: list[dict[str, Any]]) -> list[str]:
    (deployment,) = (o for o in objects if o["kind"] == "Deployment")
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    return list(container["args"])


def test_by_default_nothing_of_the_rollback_is_rendered(helm: Path) -> None:
    objects = charted(helm)
    assert [a for a in _args(objects) if a.startswith("--rollback-namespace")] == []
    assert _named(objects, "ValidatingAdmissionPolicy", ROLLBACK_POLICY) == []
    assert _named(objects, "Role", ROLLBACK_ROLE_BINDING) == []
    (pause,) = _named(objects, "ValidatingAdmissionPolicy", PAUSE_POLICY)
    assert [c["name"] for c in pause["spec"]["matchConditions"]] == ["is-the-controller"]


def test_each_namespace_listed_gets_a_flag_a_get_role_and_the_policy(helm: Path) -> None:
    objects = charted(helm, values=SWITCHED_ON)
    flags = [a for a in _args(objects) if a.startswith("--rollback-namespace")]
    assert flags == ["--rollback-namespace=shop-1", "--rollback-namespace=shop-2"]
    roles = _named(objects, "Role", ROLLBACK_ROLE_BINDING)
    assert [(r["metadata"]["namespace"], r["rules"]) for r in roles] == [
        (
            namespace,
            [
                {
                    "apiGroups": ["apps"],
                    "resources": ["daemonsets", "controllerrevisions"],
                    "verbs": ["get"],
                }
            ],
        )
        for namespace in ("shop-1", "shop-2")
    ]
    bindings = _named(objects, "RoleBinding", ROLLBACK_ROLE_BINDING)
    assert [(b["metadata"]["namespace"], b["subjects"]) for b in bindings] == [
        (
            namespace,
            [
                {
                    "kind": "ServiceAccount",
                    "name": "edgerollout-controller",
                    "namespace": "edgerollout-system",
                }
            ],
        )
        for namespace in ("shop-1", "shop-2")
    ]


def test_the_pause_policy_leaves_the_listed_namespaces_template_writes_to_the_rollback_policy(
    helm: Path,
) -> None:
    objects = charted(helm, values=SWITCHED_ON)
    (pause,) = _named(objects, "ValidatingAdmissionPolicy", PAUSE_POLICY)
    (rollback,) = _named(objects, "ValidatingAdmissionPolicy", ROLLBACK_POLICY)
    listed = "request.namespace in ['shop-1', 'shop-2'] && "
    template_changes = "oldObject.spec.template != object.spec.template"
    assert pause["spec"]["matchConditions"][1] == {
        "name": "not-a-rollback",
        "expression": f"!({listed}{template_changes})",
    }
    assert rollback["spec"]["matchConditions"][1] == {
        "name": "is-a-rollback",
        "expression": f"{listed}{template_changes}",
    }
    assert rollback["spec"]["failurePolicy"] == "Fail"
    (binding,) = _named(objects, "ValidatingAdmissionPolicyBinding", ROLLBACK_POLICY)
    assert binding["spec"] == {"policyName": ROLLBACK_POLICY, "validationActions": ["Deny"]}


def test_the_rollback_policy_spells_the_annotations_the_controller_reads_and_writes(
    helm: Path,
) -> None:
    objects = charted(helm, values=SWITCHED_ON)
    (rollback,) = _named(objects, "ValidatingAdmissionPolicy", ROLLBACK_POLICY)
    variables = {v["name"]: v["expression"] for v in rollback["spec"]["variables"]}
    assert (
        variables["changing"] == f"['{ROLLED_BACK_ANNOTATION}', '{TEMPLATE_GENERATION_ANNOTATION}']"
    )
    opted_in, _, _, _, recorded = (v["expression"] for v in rollback["spec"]["validations"])
    assert f"'{ON_FAILURE_ANNOTATION}'" in opted_in
    # The record's pattern (RE2, here read by Python's re: the same for this syntax) admits what
    # the controller writes, and not what it does not.
    (pattern,) = re.findall(r"matches\(\s*'([^']*)'\)", recorded)
    written = RolledBack(failed="6d4f9c7b8", failed_number=12, restored="5b8c7d6f4").annotation()
    assert re.search(pattern, written) is not None
    assert re.search(pattern, "from 6d4f9c7b8 to 5b8c7d6f4") is None
    assert re.search(pattern, f"{written}; and more") is None


def test_the_rollback_policy_compares_every_spec_field_but_the_template(helm: Path) -> None:
    # files/allow-lists.yaml's DaemonSetSpec lists (held to the API server's schema by
    # tests/e2e/test_deploy.py): each compared field is one rule, the template none.
    lists = yaml.safe_load((CHART / "files" / "allow-lists.yaml").read_text())
    (policy,) = _named(
        charted(helm, values=SWITCHED_ON), "ValidatingAdmissionPolicy", ROLLBACK_POLICY
    )
    (spec_rule,) = (
        v["expression"] for v in policy["spec"]["validations"] if "object.spec.?" in v["expression"]
    )
    assert lists["DaemonSetSpec"] == {
        "changed": ["template"],
        "compared": ["minReadySeconds", "revisionHistoryLimit", "selector", "updateStrategy"],
    }
    assert spec_rule.split(" && ") == [
        f"oldObject.spec.?{field} == object.spec.?{field}"
        for field in ("minReadySeconds", "revisionHistoryLimit", "selector", "updateStrategy")
    ]
