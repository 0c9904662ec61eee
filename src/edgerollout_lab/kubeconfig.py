"""Kubeconfig files for the lab's identities."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml

from edgerollout_lab.pki import write_private


@dataclass(frozen=True)
class Access:
    """What a lab kubeconfig holds: where the API server is, its CA, and who speaks to it."""

    server: str
    ca_file: Path
    user: str
    token: str


def write_kubeconfig(path: Path, *, server: str, ca_file: Path, user: str, token: str) -> Path:
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": "edgerollout-lab",
                "cluster": {"server": server, "certificate-authority": str(ca_file)},
            }
        ],
        "users": [{"name": user, "user": {"token": token}}],
        "contexts": [
            {"name": "edgerollout-lab", "context": {"cluster": "edgerollout-lab", "user": user}}
        ],
        "current-context": "edgerollout-lab",
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    write_private(path, yaml.safe_dump(config, sort_keys=False).encode())
    return path


def read_kubeconfig(path: Path) -> Access:
    """The identity in a kubeconfig that `write_kubeconfig` wrote."""
    config = yaml.safe_load(path.read_text())
    cluster = config["clusters"][0]["cluster"]
    user = config["users"][0]
    return Access(
        server=str(cluster["server"]),
        ca_file=Path(cluster["certificate-authority"]),
        user=str(user["name"]),
        token=str(user["user"]["token"]),
    )
