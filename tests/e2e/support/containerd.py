"""What a real node's containerd runs, asked of containerd itself (`ctr` on the node's socket, in
the kubelet's namespace), not of the API server."""

from __future__ import annotations

import shutil
import subprocess

from edgerollout_lab.cluster import Lab


def ctr(lab: Lab, node: str, *args: str) -> list[list[str]]:
    """`ctr ARGS` on the real node's containerd: its table's rows, without the header."""
    socket = lab.node(node).runtime_endpoint
    assert socket is not None, f"{node} is not a real node"
    result = subprocess.run(
        [
            shutil.which("ctr") or "ctr",
            "--address",
            socket.removeprefix("unix://"),
            "--namespace",
            "k8s.io",
            *args,
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=30,
    )
    assert result.returncode == 0, result.stderr
    return [line.split() for line in result.stdout.splitlines()[1:]]


def running_tasks(lab: Lab, node: str) -> set[str]:
    """The IDs of the containers running on the real node."""
    return {row[0] for row in ctr(lab, node, "tasks", "ls") if row[2] == "RUNNING"}


def kill(lab: Lab, node: str, container: str) -> None:
    """SIGKILL a container's process, as an out-of-memory kill or a crash would end it."""
    ctr(lab, node, "tasks", "kill", "--signal", "SIGKILL", container)
