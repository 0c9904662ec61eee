"""The pure parts of a lab: node names, reading `lab.json` and the errors a user acts on."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from edgerollout_lab import cluster
from edgerollout_lab.cluster import Lab, LabError, LabNode, node_names


def write_lab(folder: Path, nodes: list[str], **extra: object) -> None:
    (folder / "lab.json").write_text(
        json.dumps(
            {
                "kubeconfig": str(folder / "kubeconfigs" / "admin.kubeconfig"),
                "server": "https://127.0.0.1:6443",
                **extra,
                "nodes": [
                    {
                        "name": name,
                        "kubeconfig": str(folder / "kubeconfigs" / f"node-{name}.kubeconfig"),
                        "agent_url": None if name == "edge-1" else f"http://127.0.0.1:9{index}00",
                        "agent_token_file": (
                            None if name == "edge-1" else str(folder / "agent-tokens" / name)
                        ),
                    }
                    for index, name in enumerate(nodes)
                ],
            }
        )
    )


def test_node_names_count_from_one() -> None:
    assert node_names(3) == ["edge-1", "edge-2", "edge-3"]
    assert node_names(1) == ["edge-1"]
    assert node_names(0) == []


def test_load_without_lab_json_says_where_it_looked_and_how_to_start_a_lab(
    tmp_path: Path,
) -> None:
    with pytest.raises(LabError) as caught:
        Lab.load(tmp_path)

    assert str(caught.value) == f"no lab in {tmp_path} (no lab.json); start one with `lab up`"


def test_load_reads_the_admin_kubeconfig_and_every_node(tmp_path: Path) -> None:
    write_lab(tmp_path, ["edge-1", "edge-2"])

    lab = Lab.load(tmp_path)

    assert lab == Lab(
        folder=tmp_path,
        kubeconfig=tmp_path / "kubeconfigs" / "admin.kubeconfig",
        nodes=(
            LabNode(
                name="edge-1",
                kubeconfig=tmp_path / "kubeconfigs" / "node-edge-1.kubeconfig",
                agent_url=None,
            ),
            LabNode(
                name="edge-2",
                kubeconfig=tmp_path / "kubeconfigs" / "node-edge-2.kubeconfig",
                agent_url="http://127.0.0.1:9100",
                agent_token_file=tmp_path / "agent-tokens" / "edge-2",
            ),
        ),
    )


def test_load_reads_the_node_lease_duration_and_defaults_to_the_labs_own(
    tmp_path: Path,
) -> None:
    write_lab(tmp_path, ["edge-1"])
    default = Lab.load(tmp_path)
    write_lab(tmp_path, ["edge-1"], node_lease_seconds=40)
    production = Lab.load(tmp_path)

    assert (default.node_lease_seconds, default.node_monitor_grace_seconds) == (8, 10)
    assert (production.node_lease_seconds, production.node_monitor_grace_seconds) == (40, 50)


def test_node_finds_a_node_by_name(tmp_path: Path) -> None:
    write_lab(tmp_path, ["edge-1", "edge-2"])

    assert Lab.load(tmp_path).node("edge-2").name == "edge-2"


def test_unknown_node_error_lists_the_known_nodes(tmp_path: Path) -> None:
    write_lab(tmp_path, ["edge-1", "edge-2", "edge-3"])

    with pytest.raises(LabError) as caught:
        Lab.load(tmp_path).node("edge-9")

    assert str(caught.value) == "no node 'edge-9' in this lab (nodes: edge-1, edge-2, edge-3)"


def test_up_refuses_a_lab_without_nodes_before_starting_anything(tmp_path: Path) -> None:
    with pytest.raises(LabError) as caught:
        cluster.up(tmp_path / "lab", nodes=0, say=lambda _: None)

    assert str(caught.value) == "--nodes must be at least 1 (got 0)"
    assert not (tmp_path / "lab").exists()


def test_up_refuses_a_lease_too_short_for_kwok_to_renew_before_starting_anything(
    tmp_path: Path,
) -> None:
    with pytest.raises(LabError) as caught:
        cluster.up(tmp_path / "lab", nodes=3, say=lambda _: None, node_lease_seconds=3)

    assert str(caught.value) == "--node-lease-seconds must be at least 4 (got 3)"
    assert not (tmp_path / "lab").exists()


def test_restart_accepts_only_the_restartable_control_plane_components(tmp_path: Path) -> None:
    write_lab(tmp_path, ["edge-1"])
    with pytest.raises(
        LabError, match="cannot restart 'kwok': restartable components are etcd, kube-apiserver"
    ):
        cluster.restart(tmp_path, "kwok")
