"""The alert rules from a real Prometheus (Debian's `prometheus` package) scraping the lab's
controller and agents: a rollout that fails fires EdgerolloutRolloutFailed; the operator fixes the
template, the alert resolves, and `edgerollout resume` finishes the rollout with no alert left.

Prometheus loads the shipped rule file with each alert's `for:` cut to a second
(`prometheus.with_waits`): the expressions, labels and annotations are the ones operators get,
only the minutes they wait are not. It scrapes every second, the controller (which holds a Lease,
as installed) as job="edgerollout-controller" and each agent, with its node's token, as
job="edgerollout-agent". While the rollout has failed, every query of the Grafana dashboard must
answer from that Prometheus too.
"""

from __future__ import annotations

import asyncio
import json
import urllib.parse
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from edgerollout.domain.vocabulary import (
    ADVANCED_ROLLING_UPDATE,
    MAX_FAILED_ANNOTATION,
    MAX_UNAVAILABLE_ANNOTATION,
    PAUSED_ANNOTATION,
    UPDATE_STRATEGY_ANNOTATION,
)
from edgerollout_lab import packages, prometheus
from edgerollout_lab.cluster import Lab
from edgerollout_lab.kwok_stages import CRASHLOOP_IMAGE
from tests.e2e.support.cli import edgerollout
from tests.e2e.support.controller_process import ControllerProcess, stopped_cleanly
from tests.e2e.support.lab import LabHandle, daemonset, hold_for, set_image, wait_for
from tests.e2e.support.seed import NAME, NEW, NODES, OLD, ON_DELETE, running_everywhere

pytestmark = pytest.mark.lab(nodes=3, agents=True)

ROOT = Path(__file__).resolve().parents[2]
RULES = ROOT / "deploy" / "prometheus" / "edgerollout-rules.yaml"
DASHBOARD = ROOT / "deploy" / "grafana" / "edgerollout.json"
# One node broken is more than the budget tolerates: the rollout fails at its first node.
ANNOTATIONS = {
    UPDATE_STRATEGY_ANNOTATION: ADVANCED_ROLLING_UPDATE,
    MAX_UNAVAILABLE_ANNOTATION: "1",
    MAX_FAILED_ANNOTATION: "0",
}
INTERVAL = "1s"
WAIT = "1s"
# Grafana's $__rate_interval for a 1 s scrape: four scrapes.
RATE_INTERVAL = "4s"


@pytest.fixture
async def leading_controller(
    lab: Lab, namespace: str, tmp_path: Path, request: pytest.FixtureRequest
) -> AsyncIterator[ControllerProcess]:
    """The controller scoped to the test's namespace, electing a leader as installed (the rules
    read the Lease gauge)."""
    handle = ControllerProcess.launch(
        lab.kubeconfig,
        tmp_path / "controller.log",
        f"--namespace={namespace}",
        "--leader-elect",
        f"--leader-election-namespace={namespace}",
    )
    await handle.wait_ready()
    with stopped_cleanly(handle, request, "controller", handle.log_text):
        yield handle


@pytest.fixture
def scraping(
    lab: Lab, leading_controller: ControllerProcess, tmp_path: Path
) -> Iterator[prometheus.PrometheusProcess]:
    """Prometheus scraping the controller and every agent, evaluating the shipped rules."""
    try:
        prometheus.ensure_installed(say=print)
    except packages.PackageError as error:
        pytest.fail(f"the alerts' end-to-end test needs Prometheus: {error}")
    agents = [
        prometheus.AgentTarget(
            node=node.name,
            address=urllib.parse.urlsplit(node.agent_url).netloc,
            token_file=node.agent_token_file,
        )
        for node in lab.nodes
        if node.agent_url is not None and node.agent_token_file is not None
    ]
    assert [agent.node for agent in agents] == NODES
    config = prometheus.scrape_config(
        controllers=[urllib.parse.urlsplit(leading_controller.metrics_url).netloc],
        agents=agents,
        rule_files=[Path(RULES.name)],
        interval=INTERVAL,
    )
    rules = prometheus.with_waits(yaml.safe_load(RULES.read_text()), WAIT)
    with prometheus.running(tmp_path / "prometheus", config, {RULES.name: rules}) as handle:
        yield handle


async def answer(prom: prometheus.PrometheusProcess, expr: str) -> list[dict[str, Any]]:
    return await asyncio.to_thread(prom.query, expr)


async def alerts(prom: prometheus.PrometheusProcess) -> list[dict[str, Any]]:
    """The alerts pending or firing: name, state, labels and annotations."""
    return await asyncio.to_thread(prom.alerts)


async def phase_is(prom: prometheus.PrometheusProcess, namespace: str, phase: str) -> None:
    expr = (
        f'edgerollout_rollout_phase{{namespace="{namespace}",daemonset="{NAME}",'
        f'phase="{phase}"}} == 1'
    )

    async def exported() -> bool:
        return bool(await answer(prom, expr))

    await wait_for(exported, timeout=60, what=f"Prometheus to read {NAME} {phase}", interval=0.5)


async def no_alert(prom: prometheus.PrometheusProcess, *, what: str) -> None:
    """No alert pending or firing, now and for a few evaluations more; a failure lists them."""
    seen: list[list[dict[str, Any]]] = []

    async def quiet() -> bool:
        seen.append(await alerts(prom))
        return seen[-1] == []

    try:
        await wait_for(quiet, timeout=30, what=f"no alert {what}", interval=0.5)
        await hold_for(quiet, seconds=4, what=f"no alert {what}")
    except AssertionError as error:
        raise AssertionError(f"{error}; alerts: {seen[-1]}") from None


async def every_target_up(prom: prometheus.PrometheusProcess) -> dict[str, list[str]]:
    async def up() -> dict[str, list[str]] | None:
        targets = await asyncio.to_thread(prom.targets)
        if len(targets) != 1 + len(NODES) or any(t["health"] != "up" for t in targets):
            return None
        jobs: dict[str, list[str]] = {}
        for target in targets:
            jobs.setdefault(target["labels"]["job"], []).append(target["labels"].get("node", ""))
        return {job: sorted(nodes) for job, nodes in jobs.items()}

    found: dict[str, list[str]] = await wait_for(
        up, timeout=30, what="every target scraped", interval=0.5
    )
    return found


def dashboard_queries(namespace: str) -> dict[str, str]:
    """Each query of the Grafana dashboard (by panel title and query), its variables set to
    the test's DaemonSet."""
    panels = json.loads(DASHBOARD.read_text())["panels"]
    return {
        f"{panel['title']} #{index}": target["expr"]
        .replace("$namespace", namespace)
        .replace("$daemonset", NAME)
        .replace("$__rate_interval", RATE_INTERVAL)
        for panel in panels
        for index, target in enumerate(panel.get("targets", ()))
    }


async def test_a_failed_rollout_fires_its_alert_until_fixed_and_resume_finishes_it(
    kube: LabHandle, namespace: str, scraping: prometheus.PrometheusProcess
) -> None:
    prom = scraping
    assert await every_target_up(prom) == {
        prometheus.CONTROLLER_JOB: [""],
        prometheus.AGENT_JOB: NODES,
    }
    manifest = daemonset(NAME, image=OLD, strategy=ON_DELETE, annotations=ANNOTATIONS)
    await kube.apps.create_namespaced_daemon_set(namespace, manifest)
    await running_everywhere(kube, namespace, OLD, NODES)
    await phase_is(prom, namespace, "Complete")
    await no_alert(prom, what="while the rollout is complete")

    await set_image(kube, namespace, NAME, CRASHLOOP_IMAGE)

    async def failed() -> list[dict[str, Any]] | None:
        found = await alerts(prom)
        return found if any(a["state"] == "firing" for a in found) else None

    (alert,) = await wait_for(failed, timeout=60, what="an alert firing", interval=0.5)
    assert (alert["state"], alert["labels"]) == (
        "firing",
        {
            "alertname": "EdgerolloutRolloutFailed",
            "namespace": namespace,
            "daemonset": NAME,
            "severity": "critical",
        },
    )
    assert alert["annotations"]["summary"] == f"Rollout of DaemonSet {namespace}/{NAME} failed"
    assert f"`edgerollout resume {NAME} -n {namespace}`" in alert["annotations"]["description"]
    paused = await kube.apps.read_namespaced_daemon_set(NAME, namespace)
    assert paused.metadata.annotations[PAUSED_ANNOTATION] == "true"
    # Every panel of the dashboard answers from this Prometheus, with the rollout failed.
    queries = dashboard_queries(namespace)
    unanswered = [title for title, expr in queries.items() if not await answer(prom, expr)]
    assert (len(queries), unanswered) == (17, [])

    # The fix: the broken pods are of an old revision now, none is broken on the newest. The
    # alert resolves; the rollout waits, paused by the failure, for the operator.
    await set_image(kube, namespace, NAME, NEW)
    await phase_is(prom, namespace, "Paused")
    await no_alert(prom, what="once the template is fixed")

    resumed = await edgerollout(kube.lab.kubeconfig, "resume", NAME, "-n", namespace)
    assert resumed.returncode == 0, resumed.stderr
    await running_everywhere(kube, namespace, NEW, NODES, timeout=60)
    await phase_is(prom, namespace, "Complete")
    await no_alert(prom, what="once resumed and complete")
