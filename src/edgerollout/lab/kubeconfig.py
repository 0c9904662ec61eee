"""Kubeconfig files for the lab's identities."""

from __future__ import annotations

from pathlib import Path

import yaml

from edgerollout.lab.pki import write_private


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
