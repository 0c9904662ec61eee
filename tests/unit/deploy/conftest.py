"""The chart's tests render it with the lab's helm, which `./dev test` builds before the suite.

Without it a test fails, naming `./dev lab build`; it never skips, so that a run that did not build
the lab cannot pass without checking the rendered manifests.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from edgerollout_lab.build import binary


@pytest.fixture(scope="session")
def helm() -> Path:
    return binary("helm")
