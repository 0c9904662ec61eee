"""Kubeconfig files for the lab's identities."""

from __future__ import annotations

from pathlib import Path

import yaml


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
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    path.chmod(0o600)
    return path
