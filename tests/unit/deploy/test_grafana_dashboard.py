"""The Grafana dashboard (deploy/grafana/, the chart's files/grafana-dashboard.json): each panel
reads only what edgerollout exports, and the chart offers it, and a ServiceMonitor, behind values.

That each panel's query returns data from a real Prometheus scraping the lab is
tests/e2e/test_alerts.py's; here, what holds without a lab.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from .charted import CHART, ROOT, charted
from .exported_series import exported_series

DASHBOARD = CHART / "files" / "grafana-dashboard.json"


def _dashboard() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(DASHBOARD.read_text())
    return loaded


def _panels() -> list[dict[str, Any]]:
    return [panel for panel in _dashboard()["panels"] if panel["type"] != "row"]


# A metric name in PromQL: a word followed by `{`, `[` or `)` that is not a function or keyword.
_NOT_METRICS = {
    "sum", "max", "count", "rate", "histogram_quantile", "vector", "by", "on", "or", "and",
    "le", "namespace", "daemonset", "phase", "state", "pool", "reason", "code", "method",
    "resource", "route", "type", "job",
}  # fmt: skip


def _metrics_in(expr: str) -> set[str]:
    words = set(re.findall(r"[a-zA-Z_:][a-zA-Z0-9_:]*", re.sub(r'"[^"]*"', "", expr)))
    return {word for word in words if word not in _NOT_METRICS and "_" in word} - {
        "__rate_interval"
    }


def test_every_panel_says_what_it_shows_and_queries_only_what_edgerollout_exports() -> None:
    panels = _panels()
    exported = exported_series()

    assert len(panels) == 13
    assert [p["title"] for p in panels if not p.get("description")] == []
    assert [p["title"] for p in panels if not p["targets"]] == []
    assert {
        p["title"]: sorted(_metrics_in(t["expr"]) - exported)
        for p in panels
        for t in p["targets"]
        if _metrics_in(t["expr"]) - exported
    } == {}
    ids = [panel["id"] for panel in _dashboard()["panels"]]
    assert len(ids) == len(set(ids))


def test_panels_do_not_overlap_on_the_grid() -> None:
    cells: dict[tuple[int, int], str] = {}
    overlaps = []
    for panel in _dashboard()["panels"]:
        grid = panel["gridPos"]
        for x in range(grid["x"], grid["x"] + grid["w"]):
            for y in range(grid["y"], grid["y"] + grid["h"]):
                if (x, y) in cells:
                    overlaps.append((panel["title"], cells[(x, y)]))
                cells[(x, y)] = panel["title"]
    assert overlaps == []
    assert max(x for x, _ in cells) < 24


def test_the_dashboard_filters_by_namespace_and_daemonset() -> None:
    variables = {v["name"]: v for v in _dashboard()["templating"]["list"]}

    assert list(variables) == ["datasource", "namespace", "daemonset"]
    assert variables["daemonset"]["definition"] == (
        'label_values(edgerollout_rollout_phase{namespace=~"$namespace"}, daemonset)'
    )
    per_daemonset = [p["title"] for p in _panels() if "$daemonset" in json.dumps(p["targets"])]
    assert per_daemonset == [
        "Rollouts by state",
        "Rollouts that need someone",
        "Nodes by state, per DaemonSet",
        "Nodes by state, per node pool",
    ]


def test_the_chart_offers_the_dashboard_and_a_service_monitor_behind_values(helm: Path) -> None:
    default = charted(helm)
    enabled = charted(
        helm,
        "monitoring.grafanaDashboard.enabled=true",
        "monitoring.serviceMonitor.enabled=true",
        "monitoring.serviceMonitor.labels.release=kube-prometheus-stack",
    )

    kinds = {doc["kind"] for doc in default}
    assert {"ServiceMonitor", "ConfigMap"} & kinds == set()
    (dashboard,) = (doc for doc in enabled if doc["kind"] == "ConfigMap")
    assert dashboard["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert dashboard["data"] == {"edgerollout.json": DASHBOARD.read_text().rstrip("\n")}
    (monitor,) = (doc for doc in enabled if doc["kind"] == "ServiceMonitor")
    (service,) = (
        doc
        for doc in enabled
        if doc["kind"] == "Service" and doc["metadata"]["name"] == "edgerollout-controller-metrics"
    )
    assert monitor["metadata"]["labels"]["release"] == "kube-prometheus-stack"
    assert monitor["spec"]["selector"]["matchLabels"].items() <= (
        service["metadata"]["labels"].items()
    )
    assert [e["port"] for e in monitor["spec"]["endpoints"]] == [
        port["name"] for port in service["spec"]["ports"]
    ]


def test_the_readmes_monitoring_install_renders_the_rules_the_monitor_and_the_dashboard(
    helm: Path,
) -> None:
    readme = (ROOT / "README.md").read_text()
    section = readme.split("### Alerts and dashboard", 1)[1].split("\n## ", 1)[0]
    command = section.split("```sh\n", 1)[1].split("```", 1)[0].replace("\\\n", " ")
    values = re.findall(r"--set (\S+)", command)

    rendered = charted(helm, *values)

    assert command.split()[:4] == ["helm", "upgrade", "--install", "edgerollout"]
    kinds = sorted(
        (doc["kind"], doc["metadata"]["name"])
        for doc in rendered
        if doc["kind"] in ("PrometheusRule", "ServiceMonitor", "ConfigMap")
    )
    assert kinds == [
        ("ConfigMap", "edgerollout-grafana-dashboard"),
        ("PrometheusRule", "edgerollout"),
        ("ServiceMonitor", "edgerollout-controller"),
    ]
    labelled = [doc for doc in rendered if doc["kind"] in ("PrometheusRule", "ServiceMonitor")]
    assert [doc["metadata"]["labels"]["release"] for doc in labelled] == [
        "kube-prometheus-stack"
    ] * 2
