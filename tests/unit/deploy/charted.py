"""The chart rendered with `helm template` and values set, for the chart's tests."""

import subprocess
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[3]
CHART = ROOT / "deploy" / "helm" / "edgerollout"


def charted(
    helm: Path, *sets: str, values: Mapping[str, Any] | None = None
) -> list[dict[str, Any]]:
    """The chart's objects with `values` (a values file's content: lists and maps as they are)
    and each `--set` of `sets` (`key=value`)."""
    with tempfile.TemporaryDirectory() as scratch:
        argv = [str(helm), "template", "edgerollout", str(CHART)]
        if values is not None:
            path = Path(scratch) / "values.yaml"
            path.write_text(yaml.safe_dump(dict(values)))
            argv += ["--values", str(path)]
        for value in sets:
            argv += ["--set", value]
        result = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    return [doc for doc in yaml.safe_load_all(result.stdout) if doc]
