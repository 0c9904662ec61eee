"""The chart offers edgerollout's alerts as a PrometheusRule behind a value, from the one rule file
(files/prometheus-rules.yaml; deploy/prometheus/edgerollout-rules.yaml is its copy, held to it by
test_rendered_manifests.py), and scrapes the controller under the job name the rules expect.

What the rules do is tests/unit/deploy/test_alert_rules.py's (promtool).
"""

from __future__ import annotations

from pathlib import Path

import yaml

from .charted import CHART, charted

RULES = CHART / "files" / "prometheus-rules.yaml"
INSTALL_NAMESPACE = "edgerollout-system"


def _selectors(expr: str) -> set[str]:
    """The `job="..."` matchers of a PromQL expression."""
    return {part.split('"')[1] for part in expr.split("job=")[1:]}


def test_the_chart_renders_no_prometheus_rule_unless_asked(helm: Path) -> None:
    assert [doc for doc in charted(helm) if doc["kind"] == "PrometheusRule"] == []


def test_the_prometheus_rule_holds_the_rule_files_groups_with_the_labels_asked_for(
    helm: Path,
) -> None:
    rendered = charted(
        helm,
        "monitoring.prometheusRule.enabled=true",
        "monitoring.prometheusRule.labels.release=kube-prometheus-stack",
        "helmLabels=false",
    )

    (rule,) = (doc for doc in rendered if doc["kind"] == "PrometheusRule")
    assert rule["apiVersion"] == "monitoring.coreos.com/v1"
    assert rule["metadata"] == {
        "name": "edgerollout",
        "namespace": INSTALL_NAMESPACE,
        "labels": {
            "app.kubernetes.io/name": "edgerollout",
            "app.kubernetes.io/part-of": "edgerollout",
            "release": "kube-prometheus-stack",
        },
    }
    assert rule["spec"] == yaml.safe_load(RULES.read_text())
    assert [group["name"] for group in rule["spec"]["groups"]] == [
        "edgerollout-rollouts",
        "edgerollout-controller",
        "edgerollout-agents",
    ]


def test_the_service_monitor_names_the_job_the_rules_read_and_keeps_the_series_namespace(
    helm: Path,
) -> None:
    rendered = charted(helm, "monitoring.serviceMonitor.enabled=true")
    (monitor,) = (doc for doc in rendered if doc["kind"] == "ServiceMonitor")
    (service,) = (
        doc
        for doc in rendered
        if doc["kind"] == "Service" and doc["metadata"]["name"] == "edgerollout-controller-metrics"
    )
    rules = [r for g in yaml.safe_load(RULES.read_text())["groups"] for r in g["rules"]]

    # The operator names the job after this label of the Service.
    job = service["metadata"]["labels"][monitor["spec"]["jobLabel"]]
    assert job == "edgerollout-controller"
    assert set().union(*(_selectors(r["expr"]) for r in rules)) == {
        "edgerollout-controller",
        "edgerollout-agent",
    }
    # A target's `namespace` (the controller's) would otherwise rename a rollout's own.
    assert [endpoint["honorLabels"] for endpoint in monitor["spec"]["endpoints"]] == [True]
