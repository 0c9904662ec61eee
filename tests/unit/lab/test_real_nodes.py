"""How a real node is laid out on the machine, without starting one (the lab proves it runs:
tests/e2e/test_real_node.py)."""

from __future__ import annotations

import json
import os
import tomllib
from pathlib import Path

import pytest

from edgerollout_lab import real_nodes


def test_a_real_nodes_names_and_addresses_follow_its_number() -> None:
    node = real_nodes.real_node(Path("/tmp/some/lab"), "real-3")

    assert (node.index, node.address, node.pod_subnet) == (3, "10.254.99.3", "10.254.103.0/24")
    assert (node.bridge, node.cgroup_root) == ("erlab-real-3", "/edgerollout-lab/real-3")
    assert node.folder.parent.parent == real_nodes.STATE
    assert node.folder.name == "real-3"
    assert node.runtime_endpoint == f"unix://{node.folder}/containerd/containerd.sock"


def test_a_nodes_sockets_fit_a_unix_socket_path_whatever_the_labs_folder() -> None:
    deep = Path("/tmp") / ("d" * 200) / "lab"
    node = real_nodes.real_node(deep, "real-12")

    # containerd's ttrpc socket is the longest; the limit is 108 bytes with the terminator.
    assert len(f"{node.socket}.ttrpc") < 108
    assert real_nodes.real_node(deep, "real-12") == node
    assert real_nodes.real_node(Path("/tmp/other"), "real-12").folder != node.folder


def test_containerd_pulls_through_the_nodes_link_and_keeps_its_mounts_in_its_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(real_nodes, "STATE", tmp_path / "state")
    node = real_nodes.real_node(tmp_path / "lab", "real-1")

    config = tomllib.loads(real_nodes._containerd_config(node, "127.0.0.1:5000", 6000).read_text())
    hosts = (node.folder / "containerd" / "certs.d" / "127.0.0.1:5000" / "hosts.toml").read_text()
    conflist = json.loads((node.folder / "cni" / "net.d" / "10-lab.conflist").read_text())

    cri = config["plugins"]["io.containerd.grpc.v1.cri"]
    assert config["grpc"]["address"] == str(node.socket)
    assert config["root"].startswith(str(node.folder))
    assert (cri["restrict_oom_score_adj"], cri["netns_mounts_under_state_dir"]) == (True, True)
    assert cri["sandbox_image"] == "127.0.0.1:5000/pause:lab"
    assert cri["containerd"]["runtimes"]["runc"]["options"]["Root"] == str(node.folder / "runc")
    assert tomllib.loads(hosts) == {
        "server": "http://127.0.0.1:6000",
        "host": {"http://127.0.0.1:6000": {"capabilities": ["pull", "resolve"]}},
    }
    (bridge, loopback) = conflist["plugins"]
    assert (bridge["bridge"], bridge["ipMasq"], loopback["type"]) == (
        "erlab-real-1",
        False,
        "loopback",
    )
    assert bridge["ipam"]["ranges"] == [[{"subnet": "10.254.101.0/24"}]]


def test_without_root_the_missing_packages_are_named_and_nothing_is_installed(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(
        real_nodes, "PACKAGES", {"containerd": str(tmp_path / "no-containerd"), "runc": "/"}
    )
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    said: list[str] = []

    with pytest.raises(real_nodes.RealNodeError) as refused:
        real_nodes.ensure_packages(said.append)

    assert str(refused.value) == (
        "real nodes need the Debian packages containerd; install them as root "
        "(apt-get install containerd) — this process is not root or has no apt-get"
    )
    assert said == []


def test_with_every_package_present_nothing_is_installed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(real_nodes, "PACKAGES", {"runc": "/"})
    said: list[str] = []

    real_nodes.ensure_packages(said.append)

    assert said == []
