"""OpenYurt's yurt-manager, the comparison peer: whether it is built, and the mark of the tests
that need it (`./dev test` builds it; a plain `pytest` run on a lab without it skips them)."""

from __future__ import annotations

import pytest

from edgerollout_lab import build
from edgerollout_lab.versions import OPENYURT


def peer_built() -> bool:
    """Whether OpenYurt's yurt-manager is built (`./dev lab build --peer openyurt`)."""
    return not build.missing_components(OPENYURT)


needs_peer = pytest.mark.skipif(
    not peer_built(),
    reason="OpenYurt's yurt-manager is not built; run `./dev lab build --peer openyurt`",
)
