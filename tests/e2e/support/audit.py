"""The API server's audit log, as the tests read it: the lab records every request there, with its
user and its request body (a deletion's DeleteOptions, and so its UID precondition)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def audited_pod_deletions(audit_log: Path, namespace: str, *, offset: int) -> list[dict[str, Any]]:
    """The delete requests for the namespace's objects logged from byte `offset` on."""
    with audit_log.open("rb") as handle:
        handle.seek(offset)
        lines = handle.read().splitlines()
    entries = [json.loads(line) for line in lines if line.strip()]
    return [
        entry
        for entry in entries
        if entry.get("verb") == "delete"
        and (entry.get("objectRef") or {}).get("namespace") == namespace
    ]
