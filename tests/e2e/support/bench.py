"""The benchmark's smoke run (`python -m bench --smoke`), as its end-to-end tests start it: on labs
of its own, 50 nodes each, writing its results, plots and table to a folder.

One run serves the session (`shared_smoke`, the `bench_smoke` fixture): every scenario, with
OpenYurt's yurt-manager as a third controller when it is built, so that the smoke tests and the
peer's read the same rounds instead of starting the same 50-node lab twice."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.e2e.support.peer import peer_built

ROOT = Path(__file__).resolve().parents[3]
NODES = 50
DISCONNECTED = 10
PNG = b"\x89PNG\r\n\x1a\n"
# The smoke results (smoke.json), what the run printed (its table), and the folder it wrote to.
Smoke = tuple[dict[str, Any], str, Path]


def smoke_run(out: Path, *options: str) -> Smoke:
    """`python -m bench --smoke OPTIONS --out OUT` run to its end; it must succeed."""
    result = subprocess.run(
        [sys.executable, "-m", "bench", "--smoke", *options, "--out", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=840,
        check=False,
    )
    assert result.returncode == 0, f"{result.stdout}\n{result.stderr}"
    return json.loads((out / "smoke.json").read_text()), result.stdout, out


def shared_smoke(out: Path) -> Smoke:
    """Every scenario of the smoke run, with the peer beside edgerollout and native if it is built."""
    return smoke_run(out, *(("--peer", "openyurt") if peer_built() else ()))
