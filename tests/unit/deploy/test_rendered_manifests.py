"""deploy/base and the package's agent identity are the Helm chart rendered (docs/manifests.md).

The chart is the one source of the install manifests. The committed files must be exactly what
`./dev run python -m edgerollout_lab render-base` writes; what kustomize builds from deploy/base
must be the objects the chart renders with deploy/base-values.yaml; and those are the objects of
the chart's default values save the labels every Helm chart adds.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from edgerollout_lab import chart
from edgerollout_lab.commands import lab

ROOT = Path(__file__).resolve().parents[3]
KUBECTL = str(Path(sys.executable).parent / "kubectl")
VERSION = metadata.version("edgerollout")
# The labels a Helm chart puts on its objects by convention: deploy/base-values.yaml leaves them out.
HELM_LABELS = {
    "helm.sh/chart": f"edgerollout-{VERSION}",
    "app.kubernetes.io/managed-by": "Helm",
    "app.kubernetes.io/instance": chart.RELEASE,
    "app.kubernetes.io/version": VERSION,
}


def _run(*argv: str) -> str:
    result = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    return result.stdout


def _documents(text: str) -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all(text) if doc]


def _key(obj: dict[str, Any]) -> tuple[str, str, str, str]:
    meta = obj["metadata"]
    return (obj["apiVersion"], obj["kind"], meta.get("namespace", ""), meta["name"])


def _keyed(objects: list[dict[str, Any]]) -> dict[tuple[str, str, str, str], dict[str, Any]]:
    keyed = {_key(obj): obj for obj in objects}
    assert len(keyed) == len(objects)
    return keyed


def _charted(helm: Path, *args: str) -> list[dict[str, Any]]:
    return _documents(_run(str(helm), "template", chart.RELEASE, str(ROOT / chart.CHART), *args))


def _without_helm_labels(obj: dict[str, Any]) -> dict[str, Any]:
    labels = {k: v for k, v in obj["metadata"].get("labels", {}).items() if k not in HELM_LABELS}
    meta = {k: v for k, v in obj["metadata"].items() if k != "labels"}
    return {**obj, "metadata": {**meta, **({"labels": labels} if labels else {})}}


@pytest.fixture(scope="module")
def rendered(helm: Path) -> dict[Path, str]:
    return chart.render(ROOT, helm)


def test_committed_manifests_are_the_chart_rendered_byte_for_byte(
    rendered: dict[Path, str],
) -> None:
    assert sorted(rendered) == sorted(set(chart.TARGETS.values()))
    for path, text in rendered.items():
        assert (ROOT / path).read_text() == text, f"{path} is stale: run `{chart.COMMAND}`"


def test_the_copies_of_the_charts_files_are_the_charts_byte_for_byte() -> None:
    assert {
        chart.CHART / "files" / "grafana-dashboard.json": Path("deploy/grafana/edgerollout.json"),
        chart.CHART / "files" / "prometheus-rules.yaml": Path(
            "deploy/prometheus/edgerollout-rules.yaml"
        ),
    } == chart.COPIES
    for path, text in chart.copies(ROOT).items():
        assert (ROOT / path).read_text() == text, f"{path} is stale: run `{chart.COMMAND}`"


def test_deploy_base_holds_only_the_rendered_files_and_the_kustomization_of_them(
    rendered: dict[Path, str],
) -> None:
    kustomization = yaml.safe_load((ROOT / chart.BASE / "kustomization.yaml").read_text())

    assert chart.strays(ROOT, rendered) == []
    # The identity first (the Namespace is in it), then every other file rendered there.
    resources = kustomization["resources"]
    assert resources[0] == chart.IDENTITY.name
    assert sorted(resources) == sorted(path.name for path in rendered)
    assert {path.parent for path in rendered} == {chart.BASE}


def test_each_rendered_file_says_it_is_generated_and_by_what_command(
    rendered: dict[Path, str],
) -> None:
    generated = f"# Generated from the Helm chart {chart.CHART}, do not edit"
    for path, text in rendered.items():
        header = text.partition("\n---\n")[0]
        assert header.startswith(generated), path
        assert f"#   {chart.COMMAND}\n" in header, path
        assert f"--values {chart.VALUES}" in header, path


def test_rendered_files_hold_every_object_helm_template_renders_once(
    helm: Path, rendered: dict[Path, str]
) -> None:
    committed = [obj for path in rendered for obj in _documents((ROOT / path).read_text())]

    assert _keyed(committed) == _keyed(_charted(helm, "--values", str(ROOT / chart.VALUES)))


def test_kustomize_builds_from_deploy_base_exactly_the_charts_objects(helm: Path) -> None:
    kustomized = _keyed(_documents(_run(KUBECTL, "kustomize", str(ROOT / chart.BASE))))
    charted = _keyed(_charted(helm, "--values", str(ROOT / chart.VALUES)))

    assert sorted(kustomized) == sorted(charted)
    for key, obj in kustomized.items():
        assert charted[key] == obj, key


def test_chart_with_default_values_renders_deploy_base_with_helms_labels(helm: Path) -> None:
    charted = _charted(helm)
    based = _keyed(_charted(helm, "--values", str(ROOT / chart.VALUES)))

    assert [obj["metadata"]["labels"] for obj in charted] == [
        {**obj["metadata"]["labels"], **HELM_LABELS} for obj in charted
    ]
    stripped = {_key(obj): _without_helm_labels(obj) for obj in charted}
    assert len(stripped) == len(charted)
    assert sorted(stripped) == sorted(based)
    for key, obj in based.items():
        assert stripped[key] == obj, key


def _copy_of_the_sources(root: Path) -> None:
    """The chart, its values for deploy/base and the kustomizations, under `root`."""
    shutil.copytree(ROOT / chart.CHART, root / chart.CHART)
    for path in (
        chart.VALUES,
        chart.BASE / "kustomization.yaml",
        chart.IDENTITY.parent / "kustomization.yaml",
    ):
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / path, root / path)


def test_render_base_writes_the_committed_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, helm: Path
) -> None:
    _copy_of_the_sources(tmp_path)
    monkeypatch.chdir(tmp_path)

    first = CliRunner().invoke(lab, ["render-base"])
    again = CliRunner().invoke(lab, ["render-base"])

    assert first.exit_code == 0, first.output
    targets = sorted({*chart.TARGETS.values(), *chart.COPIES.values()})
    for path in targets:
        assert (tmp_path / path).read_bytes() == (ROOT / path).read_bytes(), path
    assert sorted(first.stderr.splitlines()) == sorted(f"rendered {path}" for path in targets)
    assert again.exit_code == 0, again.output
    assert sorted(again.stderr.splitlines()) == sorted(f"unchanged {path}" for path in targets)


def test_render_base_names_a_file_in_deploy_base_that_it_did_not_render(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, helm: Path
) -> None:
    _copy_of_the_sources(tmp_path)
    (tmp_path / chart.BASE / "webhook.yaml").write_text("kind: Service\n")
    monkeypatch.chdir(tmp_path)

    result = CliRunner().invoke(lab, ["render-base"])

    assert result.exit_code == 1
    assert result.stderr.splitlines()[-1] == (
        "Error: not rendered from the chart, remove: deploy/base/webhook.yaml"
    )


def test_render_base_runs_only_in_the_repository(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)

    result = CliRunner().invoke(lab, ["render-base"])

    assert result.exit_code == 1
    assert result.stderr == "Error: no deploy/helm/edgerollout here: run from the repository\n"


def test_render_reports_what_helm_refused(tmp_path: Path, helm: Path) -> None:
    _copy_of_the_sources(tmp_path)
    (tmp_path / chart.VALUES).write_text("helmLabels: no-thanks\n")

    with pytest.raises(chart.RenderError) as refused:
        chart.render(tmp_path, helm)

    command = (
        f"{helm} template edgerollout {tmp_path / chart.CHART} --values {tmp_path / chart.VALUES}"
    )
    assert str(refused.value) == (
        f"`{command}` failed: Error: values don't meet the specifications of the schema(s) in the "
        "following chart(s):\nedgerollout:\n- at '/helmLabels': got string, want boolean"
    )
