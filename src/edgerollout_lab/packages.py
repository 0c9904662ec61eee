"""The Debian packages the lab's optional parts need, installed on first use when we are root."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable, Mapping
from pathlib import Path

from edgerollout_lab import processes


class PackageError(RuntimeError):
    """Packages are missing and cannot be installed here; the message says which and why."""


def missing(packages: Mapping[str, str]) -> list[str]:
    """The packages (name → a file that shows it is installed) that are not installed."""
    return [package for package, path in packages.items() if not Path(path).exists()]


def ensure(packages: Mapping[str, str], *, purpose: str, say: Callable[[str], None]) -> None:
    """Install the missing `packages` with apt-get, or say which are missing and why not."""
    absent = missing(packages)
    if not absent:
        return
    names = " ".join(absent)
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        raise PackageError(
            f"{purpose} need the Debian packages {names}; install them as root "
            f"(apt-get install {names}) — this process is not root or has no apt-get"
        )
    say(f"installing Debian packages for {purpose}: {names}")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    install = [processes.tool("apt-get"), "install", "-y", "--no-install-recommends", *absent]
    result = subprocess.run(install, capture_output=True, text=True, env=env, check=False)
    if result.returncode != 0:
        # A fresh machine may not have the package lists yet.
        subprocess.run(
            [processes.tool("apt-get"), "update"], capture_output=True, env=env, check=False
        )
        result = subprocess.run(install, capture_output=True, text=True, env=env, check=False)
    if result.returncode != 0 or missing(packages):
        raise PackageError(
            f"installing {names} failed (apt-get exited {result.returncode}):\n"
            f"{result.stderr[-2000:]}"
        )
