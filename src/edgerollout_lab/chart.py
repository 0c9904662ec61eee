"""The plain install manifests, rendered from the Helm chart (docs/manifests.md).

The chart in `deploy/helm/edgerollout` is the one source of the objects an operator installs.
`deploy/base` (what `kubectl apply -k` takes; its `agent-identity.yaml`, the agent's identity, is
also what the lab applies) is `helm template` of the chart with `deploy/base-values.yaml`: each document as Helm prints it,
in Helm's order, in the file `TARGETS` names for its template, after a header saying so. They are
committed, so that kustomize users need no Helm; a unit test renders them again and compares.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

RELEASE = "edgerollout"
CHART = Path("deploy/helm/edgerollout")
VALUES = Path("deploy/base-values.yaml")
BASE = Path("deploy/base")
IDENTITY = BASE / "agent-identity.yaml"
COMMAND = "./dev run python -m edgerollout_lab render-base"
# The file each of the chart's templates is rendered into. The Namespace goes with the agent's
# identity, which the lab applies by itself.
TARGETS: dict[str, Path] = {
    "namespace.yaml": IDENTITY,
    "agent-identity.yaml": IDENTITY,
    "controller-rbac.yaml": BASE / "controller-rbac.yaml",
    "controller-policy.yaml": BASE / "controller-policy.yaml",
    "controller.yaml": BASE / "controller.yaml",
    "agent.yaml": BASE / "agent.yaml",
}
HEADER = f"""\
# Generated from the Helm chart {CHART}, do not edit: edit the chart, then run
#   {COMMAND}
# (`helm template {RELEASE} {CHART} --values {VALUES}`, each
# template's objects into its file; docs/manifests.md).
"""
TIMEOUT_SECONDS = 120
# Files of the chart also offered outside it, for those who install without Helm: each copied as
# it is (a JSON file has no room for a header), and held to its source by a unit test.
COPIES: dict[Path, Path] = {
    CHART / "files" / "grafana-dashboard.json": Path("deploy/grafana/edgerollout.json"),
    CHART / "files" / "prometheus-rules.yaml": Path("deploy/prometheus/edgerollout-rules.yaml"),
}

# Where `helm template` starts each document: the separator, then the template it came from.
_DOCUMENT = re.compile(rf"^---\n# Source: {RELEASE}/templates/(?P<template>[^\n]+)\n", re.MULTILINE)


class RenderError(RuntimeError):
    """Helm failed, or rendered a template that no file is named for."""


def render(root: Path, helm: Path) -> dict[Path, str]:
    """The rendered files of the repository at `root`: their text by path relative to `root`."""
    argv = [str(helm), "template", RELEASE, str(root / CHART), "--values", str(root / VALUES)]
    result = subprocess.run(
        argv, capture_output=True, text=True, timeout=TIMEOUT_SECONDS, check=False
    )
    if result.returncode != 0:
        raise RenderError(f"`{' '.join(argv)}` failed: {result.stderr.strip()}")
    return split(result.stdout)


def split(stream: str) -> dict[Path, str]:
    """`helm template`'s output, each document into its template's file (without the blank line
    Helm prints between documents), each file after the header."""
    starts = list(_DOCUMENT.finditer(stream))
    if not starts or starts[0].start() != 0:
        raise RenderError(f"not the output of `helm template` of the chart {RELEASE}")
    documents: dict[Path, list[str]] = {}
    for start, end in zip(starts, [*(s.start() for s in starts[1:]), len(stream)], strict=True):
        template = start["template"]
        if template not in TARGETS:
            raise RenderError(
                f"the chart's template {template} is rendered into no file: name one in "
                "edgerollout_lab.chart.TARGETS"
            )
        documents.setdefault(TARGETS[template], []).append(
            stream[start.start() : end].rstrip("\n") + "\n"
        )
    return {path: HEADER + "".join(texts) for path, texts in documents.items()}


def copies(root: Path) -> dict[Path, str]:
    """The copies of the chart's files (`COPIES`): their text by path relative to `root`."""
    return {target: (root / source).read_text() for source, target in COPIES.items()}


def write(root: Path, files: dict[Path, str]) -> list[Path]:
    """Write the rendered files under `root`; the ones whose text changed."""
    changed = []
    for path, text in files.items():
        target = root / path
        if not target.is_file() or target.read_text() != text:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text)
            changed.append(path)
    return changed


def strays(root: Path, files: dict[Path, str]) -> list[Path]:
    """YAML files in deploy/base that are neither rendered nor the kustomization (a template
    renamed or removed leaves its old file behind)."""
    kept = {*files, BASE / "kustomization.yaml"}
    found = (path.relative_to(root) for path in sorted((root / BASE).glob("*.yaml")))
    return [path for path in found if path not in kept]
