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


def expressions(*terms: tuple[str, ...]) -> JSON:
    """`matchExpressions` of (key, operator, value...) terms; a term without values has none."""
    return {
        "matchExpressions": [
            {"key": key, "operator": operator, **({"values": list(values)} if values else {})}
            for key, operator, *values in terms
        ]
    }


def test_daemonset_selector_is_its_match_labels() -> None:
    assert pod_selector(daemonset_json("web")) == "app=web"


@pytest.mark.parametrize(
    ("selector", "query"),
    [
        pytest.param(
            {"matchLabels": {"tier": "edge", "app": "web"}}, "app=web,tier=edge", id="labels-sorted"
        ),
        pytest.param(expressions(("zone", "In", "a", "b")), "zone in (a,b)", id="in"),
        pytest.param(expressions(("zone", "NotIn", "c")), "zone notin (c)", id="not-in"),
        pytest.param(expressions(("edge", "Exists")), "edge", id="exists"),
        pytest.param(expressions(("legacy", "DoesNotExist")), "!legacy", id="does-not-exist"),
        pytest.param(
            {
                "matchLabels": {"app": "web"},
                **expressions(("zone", "In", "a"), ("legacy", "DoesNotExist")),
            },
            "app=web,zone in (a),!legacy",
            id="labels-then-expressions-in-order",
        ),
        pytest.param(expressions(("zone", "Near", "a")), "", id="unknown-operator-left-out"),
        pytest.param({}, "", id="empty"),
        pytest.param(None, "", id="absent"),
    ],
)
def test_selector_terms_in_list_syntax(selector: JSON | None, query: str) -> None:
    assert pod_selector(with_selector(selector)) == query
