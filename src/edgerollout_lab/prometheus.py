"""Debian's `prometheus` package for the lab: its `promtool` tests the alert rules.

The alert rules (deploy/prometheus/edgerollout-rules.yaml) are unit-tested with `promtool test
rules`. The package (Prometheus 2.42 and promtool in Debian 12) is installed on first use, as the
lab's other optional packages are (`packages`).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from edgerollout_lab import packages

# The package's one file each tool needs (it holds both programs).
PROMTOOL = Path("/usr/bin/promtool")
PACKAGES = {"prometheus": str(PROMTOOL)}


def ensure_installed(say: Callable[[str], None]) -> None:
    """Install Debian's `prometheus` package unless it is; PackageError says why it cannot be."""
    packages.ensure(PACKAGES, purpose="Prometheus and promtool (the alert rules' tests)", say=say)
