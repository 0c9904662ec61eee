"""The chart rendered with `helm template` and values set, for the monitoring tests."""

import subprocess
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[3]
CHART = ROOT / "deploy" / "helm" / "edgerollout"


def charted(helm: Path, *values: str) -> list[dict[str, Any]]:
    """The chart's objects with each `--set` value of `values` (`key=value`)."""
    argv = [str(helm), "template", "edgerollout", str(CHART)]
    for value in values:
        argv += ["--set", value]
    result = subprocess.run(argv, capture_output=True, text=True, check=True)
    return [doc for doc in yaml.safe_load_all(result.stdout) if doc]
