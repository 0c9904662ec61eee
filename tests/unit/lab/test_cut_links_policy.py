"""The admission policy that refuses KWOK's writes for nodes whose link is cut."""

from __future__ import annotations

from edgerollout_lab.api import (
    CUT_LINKS_POLICY,
    KWOK_USER,
    NO_NODE_IS_CUT,
    cut_links_policy,
    cut_nodes_of,
)


def test_the_policy_names_exactly_the_cut_nodes_in_both_rules() -> None:
    policy, binding = cut_links_policy(["edge-3", "edge-10"])

    rules = policy["spec"]["matchConstraints"]["resourceRules"]
    assert [(rule["apiGroups"], rule["resources"]) for rule in rules] == [
        ([""], ["nodes", "nodes/status"]),
        (["coordination.k8s.io"], ["leases"]),
    ]
    assert [rule["resourceNames"] for rule in rules] == [["edge-10", "edge-3"]] * 2
    assert all(rule["operations"] == ["CREATE", "UPDATE", "DELETE"] for rule in rules)
    assert policy["spec"]["matchConditions"] == [
        {
            "name": "from-the-simulated-kubelets",
            "expression": f"request.userInfo.username == '{KWOK_USER}'",
        }
    ]
    assert policy["spec"]["validations"][0]["expression"] == "false"
    assert binding["spec"] == {"policyName": CUT_LINKS_POLICY, "validationActions": ["Deny"]}
    assert cut_nodes_of(policy) == {"edge-3", "edge-10"}


def test_with_no_node_cut_the_rules_name_a_node_that_does_not_exist() -> None:
    # An empty resourceNames would match every name, refusing KWOK's writes for every node.
    policy, _ = cut_links_policy([])

    rules = policy["spec"]["matchConstraints"]["resourceRules"]
    assert [rule["resourceNames"] for rule in rules] == [[NO_NODE_IS_CUT]] * 2
    assert cut_nodes_of(policy) == set()
