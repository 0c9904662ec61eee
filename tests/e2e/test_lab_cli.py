"""The lab as a user drives it: `./dev lab up/disconnect/connect/status/down` and kubectl."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import psutil
import pytest

from edgerollout_lab import processes
from edgerollout_lab.cluster import COMPONENTS

NODES = ["edge-1", "edge-2", "edge-3"]


def _installed(name: str) -> str:
    """A program installed into the project's environment beside this interpreter."""
    path = Path(sys.executable).parent / name
    assert path.exists(), f"{name} is installed with the project"
    return str(path)


def _run(*args: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "edgerollout_lab", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def _kubectl(kubeconfig: str, *args: str) -> str:
    result = subprocess.run(
        [_installed("kubectl"), "--kubeconfig", kubeconfig, *args],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    return result.stdout


def _node_states(kubeconfig: str) -> dict[str, str]:
    listed = json.loads(_kubectl(kubeconfig, "get", "nodes", "-o", "json"))
    return {
        item["metadata"]["name"]: next(
            c["status"] for c in item["status"]["conditions"] if c["type"] == "Ready"
        )
        for item in listed["items"]
    }


def _wait_state(kubeconfig: str, node: str, status: str, within: float) -> float:
    started = time.monotonic()
    while time.monotonic() - started < within:
        if _node_states(kubeconfig)[node] == status:
            return time.monotonic() - started
        time.sleep(0.5)
    raise AssertionError(f"{node} did not reach Ready={status} within {within:.0f} s")


def test_lab_lifecycle_from_the_command_line(tmp_path: Path) -> None:
    folder = tmp_path / "lab"
    pids: dict[str, int | None] = {}
    kubeconfig = ""
    up = _run("up", "--nodes", "3", "--dir", str(folder))
    try:
        assert up.returncode == 0, up.stderr
        lab = json.loads((folder / "lab.json").read_text())
        kubeconfig = lab["kubeconfig"]
        assert up.stdout.strip() == kubeconfig
        assert [node["name"] for node in lab["nodes"]] == NODES
        assert all(node["agent_url"] is None for node in lab["nodes"])
        assert _node_states(kubeconfig) == dict.fromkeys(NODES, "True")

        # Each node's own kubeconfig reaches the API server through that node's link.
        edge2 = lab["nodes"][1]["kubeconfig"]
        assert "edge-2" in _kubectl(edge2, "get", "node", "edge-2", "-o", "name")

        cut = _run("disconnect", "edge-2", "--dir", str(folder))
        assert cut.returncode == 0, cut.stderr
        with pytest.raises(subprocess.CalledProcessError):
            _kubectl(edge2, "get", "node", "edge-2", "--request-timeout=3s")
        _wait_state(kubeconfig, "edge-2", "Unknown", within=20)
        assert _node_states(kubeconfig) == {"edge-1": "True", "edge-2": "Unknown", "edge-3": "True"}
        status = _run("status", "--dir", str(folder))
        assert "edge-2       Unknown  cut" in status.stdout
        # The simulated kubelets (KWOK) may write for the other nodes, but not for a cut one.
        kwok = str(folder / "kubeconfigs" / "kwok.kubeconfig")
        _kubectl(kwok, "annotate", "node", "edge-1", "lab.test/probe=1")
        for refused_write in (
            ["node", "edge-2"],
            ["lease", "-n", "kube-node-lease", "edge-2"],
        ):
            with pytest.raises(subprocess.CalledProcessError) as refused:
                _kubectl(kwok, "annotate", *refused_write, "lab.test/probe=1")
            assert "the link of node edge-2 is cut" in refused.value.stderr

        unknown = _run("disconnect", "edge-9", "--dir", str(folder))
        assert unknown.returncode == 1
        assert "no node 'edge-9' in this lab (nodes: edge-1, edge-2, edge-3)" in unknown.stderr
        assert _node_states(kubeconfig) == {"edge-1": "True", "edge-2": "Unknown", "edge-3": "True"}

        restored = _run("connect", "edge-2", "--dir", str(folder))
        assert restored.returncode == 0, restored.stderr
        _wait_state(kubeconfig, "edge-2", "True", within=20)
        assert "edge-2" in _kubectl(edge2, "get", "node", "edge-2", "-o", "name")
        _kubectl(kwok, "annotate", "node", "edge-2", "lab.test/probe=1")
        _kubectl(kwok, "annotate", "lease", "-n", "kube-node-lease", "edge-2", "lab.test/probe=1")
        pids = {name: processes.pid_of(folder, name) for name in COMPONENTS}
        assert all(pids.values()), pids
    finally:
        down = _run("down", "--dir", str(folder))
    assert down.returncode == 0, down.stderr
    assert down.stderr.splitlines() == [f"stopped {name}" for name in COMPONENTS]
    assert pids
    for name, pid in pids.items():
        assert pid is not None
        assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE, (
            f"{name} is still running"
        )
    listening = {
        c.laddr[1] for c in psutil.net_connections("tcp") if c.status == "LISTEN" and c.laddr
    }
    apiserver_port = int(kubeconfig_port(kubeconfig))
    assert apiserver_port not in listening


def kubeconfig_port(kubeconfig: str) -> str:
    text = Path(kubeconfig).read_text()
    server = next(line for line in text.splitlines() if "server:" in line)
    return server.rsplit(":", 1)[1].strip()


def test_lab_commands_without_a_lab_say_how_to_start_one(tmp_path: Path) -> None:
    folder = tmp_path / "nolab"
    result = _run("disconnect", "edge-9", "--dir", str(folder))
    assert result.returncode == 1
    assert f"no lab in {folder.resolve()} (no lab.json); start one with `lab up`" in result.stderr
    assert not folder.exists()


def _taints(kubeconfig: str, node: str) -> list[tuple[str, str]]:
    listed = json.loads(_kubectl(kubeconfig, "get", "node", node, "-o", "json"))
    return sorted((t["key"], t["effect"]) for t in listed["spec"].get("taints") or [])


def _pod_ready(kubeconfig: str) -> dict[str, str]:
    """The fleet test DaemonSet's pods' Ready condition, by node ("" until the scheduler binds
    a pod)."""
    listed = json.loads(_kubectl(kubeconfig, "get", "pods", "-l", "app=probe", "-o", "json"))
    return {
        item["spec"].get("nodeName", ""): next(
            (c["status"] for c in item["status"].get("conditions") or [] if c["type"] == "Ready"),
            "absent",
        )
        for item in listed["items"]
    }


def _until(probe: Any, expected: object, *, within: float, what: str) -> None:
    started = time.monotonic()
    while probe() != expected:
        assert time.monotonic() - started < within, f"{what}: {probe()} after {within:.0f} s"
        time.sleep(0.5)


UNREACHABLE = [
    ("node.kubernetes.io/unreachable", "NoExecute"),
    ("node.kubernetes.io/unreachable", "NoSchedule"),
]


def test_a_fleet_lab_marks_a_cut_node_as_the_node_lifecycle_controller_would(
    tmp_path: Path,
) -> None:
    """A fleet lab's Leases last an hour, so no node goes NotReady on its own; `disconnect` marks
    the node Unknown and its pods not Ready, and kube-controller-manager taints it; `connect`
    undoes all of it."""
    folder = tmp_path / "fleet"
    up = _run("up", "--nodes", "3", "--fleet", "--dir", str(folder))
    try:
        assert up.returncode == 0, up.stderr
        lab = json.loads((folder / "lab.json").read_text())
        assert (lab["fleet"], lab["node_lease_seconds"]) == (True, 3600)
        kubeconfig = lab["kubeconfig"]
        manifest = tmp_path / "probe.json"
        manifest.write_text(
            json.dumps(
                {
                    "apiVersion": "apps/v1",
                    "kind": "DaemonSet",
                    "metadata": {"name": "probe", "namespace": "default"},
                    "spec": {
                        "selector": {"matchLabels": {"app": "probe"}},
                        "template": {
                            "metadata": {"labels": {"app": "probe"}},
                            "spec": {"containers": [{"name": "probe", "image": "nginx:1.25.0"}]},
                        },
                    },
                }
            )
        )
        _kubectl(kubeconfig, "apply", "-f", str(manifest))
        everywhere = dict.fromkeys(NODES, "True")
        _until(lambda: _pod_ready(kubeconfig), everywhere, within=60, what="probe pods Ready")

        cut = _run("disconnect", "edge-2", "--dir", str(folder))
        assert cut.returncode == 0, cut.stderr
        assert _node_states(kubeconfig) == {"edge-1": "True", "edge-2": "Unknown", "edge-3": "True"}
        assert _pod_ready(kubeconfig) == {"edge-1": "True", "edge-2": "False", "edge-3": "True"}
        _until(
            lambda: _taints(kubeconfig, "edge-2"), UNREACHABLE, within=20, what="edge-2's taints"
        )
        assert _taints(kubeconfig, "edge-1") == []

        restored = _run("connect", "edge-2", "--dir", str(folder))
        assert restored.returncode == 0, restored.stderr
        _wait_state(kubeconfig, "edge-2", "True", within=20)
        _until(lambda: _taints(kubeconfig, "edge-2"), [], within=20, what="edge-2's taints gone")
        _until(lambda: _pod_ready(kubeconfig), everywhere, within=30, what="probe pods Ready")
        assert _node_states(kubeconfig) == dict.fromkeys(NODES, "True")
    finally:
        down = _run("down", "--dir", str(folder))
    assert down.returncode == 0, down.stderr
