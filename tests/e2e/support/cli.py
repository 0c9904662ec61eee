"""The `edgerollout` command as a user runs it: the installed script, as `kubectl-edgerollout` too."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

BIN = Path(sys.executable).parent


async def edgerollout(
    kubeconfig: Path, *args: str, timeout: float = 30
) -> subprocess.CompletedProcess[str]:
    """`edgerollout ARGS --kubeconfig KUBECONFIG`, run to its end."""
    command = [str(BIN / "edgerollout"), *args, "--kubeconfig", str(kubeconfig)]
    return await asyncio.to_thread(
        subprocess.run, command, capture_output=True, text=True, timeout=timeout, check=False
    )


async def kubectl_edgerollout(
    kubeconfig: Path, *args: str, timeout: float = 30
) -> subprocess.CompletedProcess[str]:
    """`kubectl edgerollout ARGS --kubeconfig KUBECONFIG`: kubectl finds the plugin
    `kubectl-edgerollout` on PATH and hands it every argument after its name."""
    command = [str(BIN / "kubectl"), "edgerollout", *args, "--kubeconfig", str(kubeconfig)]
    environment = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    return await asyncio.to_thread(
        subprocess.run,
        command,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        env=environment,
    )
