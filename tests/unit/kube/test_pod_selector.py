"""A DaemonSet's `spec.selector` as the labelSelector of a list (what `edgerollout status` lists
the DaemonSet's pods and ControllerRevisions with)."""

from __future__ import annotations

import pytest

from edgerollout.kube.views import pod_selector

from .objects import JSON, daemonset_json


def with_selector(selector: JSON | None) -> JSON:
    daemonset = daemonset_json()
    if selector is None:
        del daemonset["spec"]["selector"]
    else:
        daemonset["spec"]["selector"] = selector
    return daemonset


def test_daemonset_selector_is_its_match_labels() -> None:
    assert pod_selector(daemonset_json("web")) == "app=web"


@pytest.mark.parametrize(
    ("selector", "query"),
    [
        pytest.param(
            {"matchLabels": {"tier": "edge", "app": "web"}}, "app=web,tier=edge", id="labels-sorted"
        ),
        pytest.param(
            {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a", "b"]}]},
            "zone in (a,b)",
            id="in",
        ),
        pytest.param(
            {"matchExpressions": [{"key": "zone", "operator": "NotIn", "values": ["c"]}]},
            "zone notin (c)",
            id="not-in",
        ),
        pytest.param(
            {"matchExpressions": [{"key": "edge", "operator": "Exists"}]}, "edge", id="exists"
        ),
        pytest.param(
            {"matchExpressions": [{"key": "legacy", "operator": "DoesNotExist"}]},
            "!legacy",
            id="does-not-exist",
        ),
        pytest.param(
            {
                "matchLabels": {"app": "web"},
                "matchExpressions": [
                    {"key": "zone", "operator": "In", "values": ["a"]},
                    {"key": "legacy", "operator": "DoesNotExist"},
                ],
            },
            "app=web,zone in (a),!legacy",
            id="labels-then-expressions-in-order",
        ),
        pytest.param(
            {"matchExpressions": [{"key": "zone", "operator": "Near", "values": ["a"]}]},
            "",
            id="unknown-operator-left-out",
        ),
        pytest.param({}, "", id="empty"),
        pytest.param(None, "", id="absent"),
    ],
)
def test_selector_terms_in_list_syntax(selector: JSON | None, query: str) -> None:
    assert pod_selector(with_selector(selector)) == query
