"""OpenYurt's yurt-manager beside the lab: its command line, environment, RBAC and readiness.

A Python script stands in for the built yurt-manager, and a local HTTP server for its health probe.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from edgerollout_lab import openyurt
from edgerollout_lab.openyurt import WORKERS_STARTED, YurtManager, yurt_manager_argv
from edgerollout_lab.versions import OPENYURT
from tests.unit.lab.test_controller_process import health_server

ECHO = f"""#!{sys.executable}
import json, os, sys
print(json.dumps({{"argv": sys.argv[1:], "KUBECONFIG": os.environ.get("KUBECONFIG")}}))
"""


def test_argv_runs_only_the_daemon_pod_updater_without_webhooks_or_leader_election() -> None:
    argv = yurt_manager_argv(
        Path("/cache/bin/yurt-manager"),
        Path("/labs/one/admin.kubeconfig"),
        metrics_port=40001,
        health_port=40002,
        extra=("--v=4",),
    )

    assert argv == [
        "/cache/bin/yurt-manager",
        "--kubeconfig=/labs/one/admin.kubeconfig",
        "--controllers=daemonpodupdater",
        "--disable-independent-webhooks=*",
        "--leader-elect=false",
        "--metrics-addr=127.0.0.1:40001",
        "--health-probe-addr=127.0.0.1:40002",
        "--v=4",
    ]


def test_launch_runs_the_peers_build_with_its_kubeconfig_also_in_kubeconfig_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EDGEROLLOUT_LAB_CACHE", str(tmp_path / "cache"))
    program = OPENYURT.bin_dir() / "yurt-manager"
    program.parent.mkdir(parents=True)
    program.write_text(ECHO)
    program.chmod(0o755)
    log = tmp_path / "logs" / "yurt-manager.log"
    kubeconfig = tmp_path / "admin.kubeconfig"

    launched = YurtManager.launch(kubeconfig, log)
    assert launched.process.wait(timeout=30) == 0

    printed = json.loads(log.read_text())
    health_port = int(launched.health_url.removeprefix("http://127.0.0.1:"))
    assert printed["KUBECONFIG"] == str(kubeconfig)
    assert printed["argv"][0] == f"--kubeconfig={kubeconfig}"
    assert printed["argv"][-1] == f"--health-probe-addr=127.0.0.1:{health_port}"
    assert launched.metrics_url.endswith("/metrics")


def test_environment_keeps_the_callers_and_adds_kubeconfig(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KUBECONFIG", "/somewhere/else")

    environment = YurtManager.environment(Path("/labs/one/admin.kubeconfig"))

    assert environment == {**os.environ, "KUBECONFIG": "/labs/one/admin.kubeconfig"}


def test_ready_waits_for_this_runs_workers_not_an_earlier_runs(tmp_path: Path) -> None:
    log = tmp_path / "yurt-manager.log"
    earlier = (
        f'I1125 06:39:20.294508 1 controller.go:220] setup {WORKERS_STARTED} "worker count"=3\n'
    )
    log.write_text(earlier)
    with health_server([200]) as health:
        manager = YurtManager(
            process=None,  # type: ignore[arg-type]  # ready() looks only at the probe and the log
            log=log,
            metrics_url="http://127.0.0.1:1/metrics",
            health_url=health.url,
            log_start=len(earlier),
        )

        assert not manager.ready()
        with log.open("a") as out:
            out.write(earlier.replace("06:39:20", "06:41:26"))
        assert manager.ready()

    assert health.paths == ["/readyz", "/readyz"]


def test_ready_needs_the_health_probe_too(tmp_path: Path) -> None:
    log = tmp_path / "yurt-manager.log"
    log.write_text(f"setup {WORKERS_STARTED}\n")
    with health_server([503]) as health:
        manager = YurtManager(
            process=None,  # type: ignore[arg-type]
            log=log,
            metrics_url="http://127.0.0.1:1/metrics",
            health_url=health.url,
        )

        with pytest.raises(OSError, match="503"):
            manager.ready()


def test_rbac_grants_the_controllers_writes_to_its_service_account() -> None:
    role, binding = openyurt.rbac_manifests()

    assert role["rules"] == [
        {"apiGroups": ["apps"], "resources": ["daemonsets"], "verbs": ["get", "update"]},
        {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "patch", "update"]},
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["delete", "get", "patch", "update"]},
        {"apiGroups": [""], "resources": ["pods/status"], "verbs": ["patch", "update"]},
    ]
    assert binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "ClusterRole",
        "name": role["metadata"]["name"],
    }
    assert binding["subjects"] == [
        {
            "kind": "ServiceAccount",
            "name": "yurt-manager-daemon-pod-updater-controller",
            "namespace": "kube-system",
        }
    ]
