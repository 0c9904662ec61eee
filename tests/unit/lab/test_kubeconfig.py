"""Kubeconfig files for the lab's identities."""

from __future__ import annotations

import stat
from pathlib import Path

import yaml

from edgerollout_lab.kubeconfig import Access, read_kubeconfig, write_kubeconfig


def test_kubeconfig_points_at_the_server_with_the_ca_and_the_identity_token(
    tmp_path: Path,
) -> None:
    path = tmp_path / "kubeconfigs" / "node-edge-1.kubeconfig"

    written = write_kubeconfig(
        path,
        server="https://127.0.0.1:41234",
        ca_file=tmp_path / "pki" / "ca.crt",
        user="system:node:edge-1",
        token="secret-token",
    )

    assert written == path
    assert yaml.safe_load(path.read_text()) == {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": "edgerollout-lab",
                "cluster": {
                    "server": "https://127.0.0.1:41234",
                    "certificate-authority": str(tmp_path / "pki" / "ca.crt"),
                },
            }
        ],
        "users": [{"name": "system:node:edge-1", "user": {"token": "secret-token"}}],
        "contexts": [
            {
                "name": "edgerollout-lab",
                "context": {"cluster": "edgerollout-lab", "user": "system:node:edge-1"},
            }
        ],
        "current-context": "edgerollout-lab",
    }


def test_kubeconfig_holding_a_token_is_readable_by_its_owner_only(tmp_path: Path) -> None:
    path = write_kubeconfig(
        tmp_path / "admin.kubeconfig",
        server="https://127.0.0.1:6443",
        ca_file=tmp_path / "ca.crt",
        user="lab-admin",
        token="t",
    )

    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_rewriting_a_kubeconfig_replaces_its_content(tmp_path: Path) -> None:
    path = tmp_path / "admin.kubeconfig"
    for token in ("old-token", "new-token"):
        write_kubeconfig(
            path,
            server="https://127.0.0.1:6443",
            ca_file=tmp_path / "ca.crt",
            user="u",
            token=token,
        )

    assert yaml.safe_load(path.read_text())["users"] == [
        {"name": "u", "user": {"token": "new-token"}}
    ]


def test_read_kubeconfig_returns_what_write_kubeconfig_wrote(tmp_path: Path) -> None:
    path = write_kubeconfig(
        tmp_path / "admin.kubeconfig",
        server="https://127.0.0.1:6443",
        ca_file=tmp_path / "pki" / "ca.crt",
        user="lab-admin",
        token="admin-token",
    )

    assert read_kubeconfig(path) == Access(
        server="https://127.0.0.1:6443",
        ca_file=tmp_path / "pki" / "ca.crt",
        user="lab-admin",
        token="admin-token",
    )
