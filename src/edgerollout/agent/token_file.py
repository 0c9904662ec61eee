"""The agent's bearer token on the node: created once by the install, read by the agent and scripts.

The install's init container runs `edgerollout init-agent-token` as the agent's user before the
agent starts: it makes the directory 0700 and, if there is no token yet, writes a random one
(`secrets.token_urlsafe`, 256 bits) 0600. An existing token is kept, so node-side scripts that read
it keep working across agent restarts and upgrades; delete the file to rotate it.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

TOKEN_BYTES = 32


def ensure_token(path: Path) -> bool:
    """Create the token file at `path` unless it exists; True if it was created now."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(path.parent, 0o700)
    try:
        # O_EXCL: two init containers racing cannot both write, and a link planted there is
        # not followed.
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        os.chmod(path, 0o600)
        return False
    with os.fdopen(descriptor, "w") as file:
        os.fchmod(file.fileno(), 0o600)
        file.write(secrets.token_urlsafe(TOKEN_BYTES) + "\n")
    return True
