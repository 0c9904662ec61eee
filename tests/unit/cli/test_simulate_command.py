"""`edgerollout simulate`: a manifest and a fleet file in, the documented summary out; inputs it
cannot use refused with exit 2 and what is wrong."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from edgerollout.cli import simulate_command as command
from edgerollout.cli.main import cli
from edgerollout.kube.api import NODES
from tests.unit.kube.fake_api import FakeApi
from tests.unit.kube.objects import daemonset_json

FLEET = {
    "nodes": 10,
    "horizon": "1h",
    "image_size": "10MB",
    "termination": "5s",
    "recreate": "1s",
    "container_start": "4s",
    "pools": [{"name": "only", "link_rate": "1MB/s"}],
}
BUDGET_OF_ONE = {
    "apps.openyurt.io/update-strategy": "AdvancedRollingUpdate",
    "apps.openyurt.io/max-unavailable": "1",
}


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    manifest = tmp_path / "ds.yaml"
    manifest.write_text(yaml.safe_dump(daemonset_json(annotations=BUDGET_OF_ONE)))
    fleet = tmp_path / "fleet.yaml"
    fleet.write_text(yaml.safe_dump(FLEET))
    return manifest, fleet


def _simulate(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["simulate", *args])
    return result.exit_code, result.stdout, result.stderr


def test_json_holds_the_documented_keys_with_the_outcome(files: tuple[Path, Path]) -> None:
    manifest, fleet = files
    code, out, _ = _simulate("--daemonset", str(manifest), "--fleet", str(fleet), "-o", "json")
    assert code == 0
    document = json.loads(out)
    assert document["nodes"] == 10
    assert document["finished"] is True
    assert document["time_to"] == {"50": 104, "90": 188, "99": 209, "100": 209}
    assert document["downtime_seconds"] == {"p50": 20, "p99": 20}
    assert document["peak_unavailable"] == 1
    assert document["never_updated"] == 0
    assert document["pulled_bytes"] == 100_000_000
    assert document["planner_calls"] == 50
    assert set(document["series"]) == {"seconds", "updated", "unavailable", "offline", "broken"}
    assert document["series"]["updated"][-1] == 10


def test_the_same_seed_prints_the_same_bytes(files: tuple[Path, Path]) -> None:
    manifest, fleet = files
    busy = fleet.parent / "busy.yaml"
    busy.write_text(
        yaml.safe_dump(
            {**FLEET, "nodes": 40, "crash_loop": 0.1, "flapping": {"fraction": 0.3}, "seed": 1}
        )
    )
    args = ("--daemonset", str(manifest), "--fleet", str(busy), "-o", "json")
    first, second = _simulate(*args), _simulate(*args)
    assert first[0] == 0
    assert first == second
    assert _simulate(*args, "--seed", "2")[1] != first[1]


def test_nodes_overrides_the_fleet(files: tuple[Path, Path]) -> None:
    manifest, fleet = files
    code, out, _ = _simulate(
        "--daemonset", str(manifest), "--fleet", str(fleet), "--nodes", "3", "-o", "json"
    )
    assert code == 0
    assert json.loads(out)["time_to"]["100"] == 62


def test_the_table_is_a_short_summary(files: tuple[Path, Path]) -> None:
    manifest, fleet = files
    code, out, _ = _simulate("--daemonset", str(manifest), "--fleet", str(fleet))
    assert code == 0
    assert out.splitlines() == [
        "DaemonSet default/web (AdvancedRollingUpdate) on 10 simulated nodes, seed 0",
        "finished after 3m29s: every node that was ever online runs the new revision",
        "new revision on     50% 1m44s   90% 3m8s   99% 3m29s   100% 3m29s"
        "  (of 10 nodes ever online)",
        "downtime per node   p50 20s   p99 20s",
        "peak unavailable    1 (max-unavailable 1)",
        "never updated       0 (0 never online, 0 crash-looping)",
        "pulled over WAN     0.1 GB",
        "planner calls       50",
    ]


@pytest.mark.parametrize(
    ("fleet", "message"),
    [
        ({"nodez": 3}, "nodez: unknown key; expected one of nodes,"),
        (
            {"pools": [{"name": "a"}, {"name": "b", "link_rate": -1}]},
            "pools[1].link_rate: must not be negative, got -1",
        ),
        ({"crash_loop": 1.5}, "crash_loop: must be a fraction from 0 to 1, got 1.5"),
    ],
)
def test_a_bad_fleet_file_exits_2_naming_the_key(
    files: tuple[Path, Path], fleet: dict[str, object], message: str
) -> None:
    manifest, path = files
    path.write_text(yaml.safe_dump(fleet))
    code, out, err = _simulate("--daemonset", str(manifest), "--fleet", str(path))
    assert (code, out) == (2, "")
    assert err.startswith(f"error: {path}: {message}")


def test_a_manifest_without_a_daemonset_exits_2(files: tuple[Path, Path]) -> None:
    manifest, fleet = files
    manifest.write_text("kind: ConfigMap\n")
    code, _, err = _simulate("--daemonset", str(manifest), "--fleet", str(fleet))
    assert (code, err) == (2, f"error: {manifest}: holds no DaemonSet (kind: DaemonSet)\n")


def test_a_json_manifest_is_read_too(files: tuple[Path, Path]) -> None:
    manifest, fleet = files
    manifest.write_text(json.dumps(daemonset_json(annotations=BUDGET_OF_ONE)))
    code, out, _ = _simulate("--daemonset", str(manifest), "--fleet", str(fleet), "-o", "json")
    assert code == 0
    assert json.loads(out)["time_to"]["100"] == 209


def test_plot_without_matplotlib_exits_2(
    files: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    manifest, fleet = files
    code, _, err = _simulate(
        "--daemonset", str(manifest), "--fleet", str(fleet), "--plot", str(tmp_path / "a.png")
    )
    assert (code, err) == (2, "error: --plot needs matplotlib: pip install 'edgerollout[plot]'\n")


def test_plot_writes_a_png(files: tuple[Path, Path], tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    manifest, fleet = files
    png = tmp_path / "rollout.png"
    code, _, _ = _simulate("--daemonset", str(manifest), "--fleet", str(fleet), "--plot", str(png))
    assert code == 0
    assert png.read_bytes().startswith(b"\x89PNG")


class _ClosableApi(FakeApi):
    async def close(self) -> None:
        """Nothing to close: no connection."""


def test_from_cluster_takes_the_nodes_and_pools_of_the_cluster(
    files: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    api = _ClosableApi()
    for index, pool in enumerate(["north", "north", "south", None]):
        labels = {} if pool is None else {"apps.openyurt.io/nodepool": pool}
        api.put(NODES, {"metadata": {"name": f"n{index}", "labels": labels}})

    async def connect(_: str | None) -> _ClosableApi:
        return api

    monkeypatch.setattr(command, "connect", connect)
    manifest, fleet = files
    code, out, _ = _simulate(
        "--daemonset", str(manifest), "--fleet", str(fleet), "--from-cluster", "-o", "json"
    )
    assert code == 0
    assert json.loads(out)["nodes"] == 4
