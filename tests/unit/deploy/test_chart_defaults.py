"""The Helm chart and deploy/base say nothing about a default that `edgerollout.settings` does not.

Either a value defers to the settings (empty: the flag is not passed, the command's default
applies), or it is the settings' value, or it differs on purpose and the test says why. deploy/base
is the chart rendered with its default values but Helm's labels (test_rendered_manifests.py), so
checking the base's flags checks the chart's too; the flags no value sets are checked here in a
rendering with every value that could move them changed, and the chart spells each fixed fact once.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from edgerollout.settings import AGENT, CONTROLLER, LOG_FORMATS, LOG_LEVELS
from tests.unit.deploy.charted import charted

ROOT = Path(__file__).resolve().parents[3]
BASE = ROOT / "deploy" / "base"
CHART = ROOT / "deploy" / "helm" / "edgerollout"
# The chart installs into its own namespace and keeps the Lease there, not in kube-system.
INSTALL_NAMESPACE = "edgerollout-system"


def _documents(path: Path) -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all(path.read_text()) if doc]


def _container(path: Path, kind: str) -> dict[str, Any]:
    (workload,) = (doc for doc in _documents(path) if doc["kind"] == kind)
    (container,) = workload["spec"]["template"]["spec"]["containers"]
    return dict(container)


def _flags(container: dict[str, Any]) -> dict[str, str]:
    """`--name=value` arguments after the subcommand, as {name: value} ('' for a bare switch)."""
    flags = {}
    for arg in container["args"][1:]:
        name, _, value = arg.removeprefix("--").partition("=")
        flags[name] = value
    return flags


def _values() -> dict[str, Any]:
    values: dict[str, Any] = yaml.safe_load((CHART / "values.yaml").read_text())
    return values


def test_chart_values_name_the_controllers_toolbox_and_leave_it_the_deadline() -> None:
    # The toolbox image is always passed (--prepull-toolbox-image): the pull-Job policy admits
    # that image only, so the chart must know it. A null deadline passes no --prepull-deadline.
    assert _values()["controller"]["prepull"] == {
        "toolboxImage": CONTROLLER.prepull.toolbox_image,
        "deadlineSeconds": None,
    }


def test_chart_watches_every_namespace_by_default_as_the_controller_does() -> None:
    assert _values()["controller"]["watchNamespace"] == ""


def test_chart_logs_at_the_commands_default_level() -> None:
    assert _values()["logLevel"] == CONTROLLER.log_level == AGENT.log_level


def test_chart_schema_accepts_exactly_the_log_formats_and_levels_of_the_commands() -> None:
    schema = json.loads((CHART / "values.schema.json").read_text())

    assert sorted(schema["properties"]["logFormat"]["enum"]) == sorted(LOG_FORMATS)
    assert schema["properties"]["logLevel"]["enum"] == list(LOG_LEVELS)
    # json on purpose: an installed controller writes for a log pipeline, not a terminal.
    assert _values()["logFormat"] == "json"


def test_controller_manifest_serves_on_the_settings_ports_and_holds_the_settings_lease() -> None:
    container = _container(BASE / "controller.yaml", "Deployment")
    metrics, health = CONTROLLER.metrics_address.port, CONTROLLER.health_address.port

    # All interfaces instead of the settings' loopback, for Prometheus and the kubelet's probes.
    assert _flags(container) == {
        "leader-elect": "",
        "leader-election-namespace": INSTALL_NAMESPACE,
        "metrics-address": f"0.0.0.0:{metrics}",
        "health-address": f"0.0.0.0:{health}",
        "log-format": "json",
        "log-level": CONTROLLER.log_level,
        "prepull-toolbox-image": CONTROLLER.prepull.toolbox_image,
    }
    assert {port["name"]: port["containerPort"] for port in container["ports"]} == {
        "metrics": metrics,
        "health": health,
    }
    (role,) = (doc for doc in _documents(BASE / "controller-rbac.yaml") if doc["kind"] == "Role")
    lease_rules = [rule for rule in role["rules"] if "resourceNames" in rule]
    assert [rule["resourceNames"] for rule in lease_rules] == [[CONTROLLER.leader_election_name]]


def test_agent_manifest_listens_and_is_probed_on_the_settings_address() -> None:
    container = _container(BASE / "agent.yaml", "DaemonSet")

    assert _flags(container) == {
        "node-name": "$(NODE_NAME)",
        "listen": str(AGENT.listen),
        "auth": AGENT.auth,
        "token-file": str(AGENT.token_file),
        "cache-dir": _values()["agent"]["cacheDir"],
        "log-format": "json",
        "log-level": AGENT.log_level,
    }
    for probe in ("livenessProbe", "readinessProbe"):
        get = container[probe]["httpGet"]
        assert (get["host"], get["port"]) == (AGENT.listen.host, AGENT.listen.port), probe


# Every value that places or configures the workloads, none of them the default.
OTHER_VALUES = {
    "namespace": {"name": "edge-ops"},
    "logFormat": "text",
    "logLevel": "debug",
    "apiServer": {"host": "$(HOST_IP)", "port": 6443},
    "controller": {"watchNamespace": "shop-17", "prepull": {"deadlineSeconds": 120}},
    "agent": {"auth": "none", "cacheDir": "/var/lib/edge-cache"},
}


def _pod(objects: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    (workload,) = (doc for doc in objects if doc["kind"] == kind)
    pod: dict[str, Any] = workload["spec"]["template"]["spec"]
    return pod


def test_chart_passes_the_same_fixed_flags_as_deploy_base_whatever_the_values(helm: Path) -> None:
    objects = charted(helm, values=OTHER_VALUES)
    (controller,) = _pod(objects, "Deployment")["containers"]
    agent_pod = _pod(objects, "DaemonSet")
    (agent,) = agent_pod["containers"]
    host, port = AGENT.listen.host, AGENT.listen.port

    assert f"--metrics-address=0.0.0.0:{CONTROLLER.metrics_address.port}" in controller["args"]
    assert f"--health-address=0.0.0.0:{CONTROLLER.health_address.port}" in controller["args"]
    assert f"--listen={AGENT.listen}" in agent["args"]
    for probe in ("livenessProbe", "readinessProbe"):
        get = agent[probe]["httpGet"]
        assert (get["host"], get["port"]) == (host, port), probe
    assert f"--token-file={AGENT.token_file}" in agent["args"]
    init = {container["name"]: container for container in agent_pod["initContainers"]}
    assert init["agent-token"]["args"] == ["init-agent-token", f"--path={AGENT.token_file}"]


# The chart's fixed facts: the settings' token folder, the agent's address, the controller's
# ports and the image's user (USER in deploy/Dockerfile).
FIXED_FACTS = (
    str(Path(AGENT.token_file).parent),
    AGENT.listen.host,
    str(AGENT.listen.port),
    str(CONTROLLER.metrics_address.port),
    str(CONTROLLER.health_address.port),
    "65532",
)


def _template_code(path: Path) -> str:
    """A template without its comments (YAML's and the template language's)."""
    text = re.sub(r"\{\{-? */\*.*?\*/ *-?\}\}", "", path.read_text(), flags=re.DOTALL)
    return "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))


def _spellings(fact: str, path: Path) -> int:
    """How often a template's code spells `fact` whole (not as part of a longer word or path)."""
    return len(re.findall(rf"(?<![\w.-]){re.escape(fact)}(?![\w-])", _template_code(path)))


@pytest.mark.parametrize("fact", FIXED_FACTS)
def test_chart_spells_each_fixed_fact_once_in_its_helpers(fact: str) -> None:
    templates = sorted((CHART / "templates").iterdir())
    found = {path.name: count for path in templates if (count := _spellings(fact, path))}

    assert found == {"_helpers.tpl": 1}


def test_image_runs_as_the_user_the_chart_names() -> None:
    assert "USER 65532:65532\n" in (ROOT / "deploy" / "Dockerfile").read_text()


def test_agent_install_writes_the_token_where_the_agent_reads_it_read_only() -> None:
    (daemonset,) = (d for d in _documents(BASE / "agent.yaml") if d["kind"] == "DaemonSet")
    pod = daemonset["spec"]["template"]["spec"]
    folder = str(Path(AGENT.token_file).parent)
    init = {container["name"]: container for container in pod["initContainers"]}
    (agent,) = pod["containers"]

    assert init["agent-token"]["args"] == ["init-agent-token", f"--path={AGENT.token_file}"]
    assert init["agent-token"]["securityContext"]["runAsUser"] == 65532
    assert folder in init["cache-dir-owner"]["command"]
    assert {"name": "agent-token", "mountPath": folder, "readOnly": True} in agent["volumeMounts"]
    assert {
        "name": "agent-token",
        "hostPath": {"path": folder, "type": "DirectoryOrCreate"},
    } in pod["volumes"]
    assert agent["readinessProbe"]["httpGet"]["path"] == "/readyz"


def test_chart_authenticates_callers_by_default_as_the_agent_does() -> None:
    assert _values()["agent"]["auth"] == AGENT.auth
