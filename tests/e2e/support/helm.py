"""Helm and kubectl as the install tests run them: the lab's Helm build, the project's chart."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from edgerollout_lab.build import binary

ROOT = Path(__file__).resolve().parents[3]
BASE = ROOT / "deploy" / "base"
CHART = ROOT / "deploy" / "helm" / "edgerollout"
KUBECTL = str(Path(sys.executable).parent / "kubectl")


def run(
    args: list[str], stdin: str | None = None, *, timeout: float = 400
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        args, input=stdin, capture_output=True, text=True, timeout=timeout, check=False
    )


def helm(*args: str, kubeconfig: Path | None = None) -> subprocess.CompletedProcess[str]:
    where = [f"--kubeconfig={kubeconfig}"] if kubeconfig else []
    return run([str(binary("helm")), *args, *where])
