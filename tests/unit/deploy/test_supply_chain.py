"""What the image and the development environment are built from is pinned by digest or hash.

docs/decisions.md ("Supply chain") says how each pin is made and moved; these checks keep every
pin in place and the places that spell one version agreeing.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest

from edgerollout.settings import CONTROLLER

ROOT = Path(__file__).resolve().parents[3]
DEPLOY = ROOT / "deploy"
DOCKERFILE = DEPLOY / "Dockerfile"
DIGEST = re.compile(r"@sha256:[0-9a-f]{64}$")
HASH = re.compile(r"--hash=sha256:[0-9a-f]{64}$")


def _requirements(path: Path) -> dict[str, tuple[str, list[str]]]:
    """name -> (version, its hashes), from a `pip --require-hashes` file."""
    joined = path.read_text().replace("\\\n", " ")
    pins = {}
    for line in joined.splitlines():
        words = line.split()
        if not words or words[0].startswith("#"):
            continue
        name, _, version = words[0].partition("==")
        pins[name] = (version, words[1:])
    return pins


@pytest.mark.parametrize("name", ["uv-requirements.txt", "build-requirements.txt"])
def test_every_pinned_requirement_carries_sha256_hashes(name: str) -> None:
    pins = _requirements(DEPLOY / name)

    assert pins
    for package, (version, hashes) in pins.items():
        assert re.fullmatch(r"[0-9][0-9a-z.]*", version), package
        assert hashes, package
        assert all(HASH.fullmatch(entry) for entry in hashes), package


def test_uv_is_one_pinned_version_with_a_hash_for_each_of_its_files() -> None:
    pins = _requirements(DEPLOY / "uv-requirements.txt")

    assert list(pins) == ["uv"]
    version, hashes = pins["uv"]
    assert version == "0.13.9"
    # The release's wheels for every platform and its source archive.
    assert len(set(hashes)) == len(hashes) == 19


def test_dev_installs_the_uv_version_the_hashed_file_pins() -> None:
    # ./dev's own two lines that name the file and read the version from it, run as it runs them.
    lines = [
        line
        for line in (ROOT / "dev").read_text().splitlines()
        if line.startswith(("UV_REQUIREMENTS=", "UV_VERSION="))
    ]
    bash = shutil.which("bash")
    assert bash
    result = subprocess.run(
        [bash, "-euc", "\n".join([*lines, 'echo "$UV_VERSION"'])],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=10,
        check=False,
    )

    assert len(lines) == 2
    assert (result.returncode, result.stderr) == (0, "")
    assert result.stdout == f"{_requirements(DEPLOY / 'uv-requirements.txt')['uv'][0]}\n"


def test_dev_and_the_image_install_uv_from_the_hashed_file() -> None:
    dev = (ROOT / "dev").read_text()
    dockerfile = DOCKERFILE.read_text()

    assert "UV_REQUIREMENTS=deploy/uv-requirements.txt" in dev
    assert '--require-hashes -r "$UV_REQUIREMENTS"' in dev
    assert "pip install --no-cache-dir --require-hashes -r deploy/uv-requirements.txt" in dockerfile


def test_the_build_backend_is_the_one_pyproject_names_and_is_built_without_isolation() -> None:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    pins = _requirements(DEPLOY / "build-requirements.txt")
    dockerfile = DOCKERFILE.read_text()

    assert pyproject["build-system"]["requires"] == [f"hatchling=={pins['hatchling'][0]}"]
    assert "--require-hashes -r deploy/build-requirements.txt" in dockerfile
    assert "--no-build-isolation" in dockerfile


def test_the_editable_installs_build_backend_is_the_images_pinned_by_the_same_hashes() -> None:
    uv = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["uv"]
    constraints = {}
    for entry in uv["build-constraint-dependencies"]:
        name, _, version = entry["requirement"].partition("==")
        constraints[name] = (version, [f"--hash={digest}" for digest in entry["hashes"]])
    image = _requirements(DEPLOY / "build-requirements.txt")

    # uv refuses a build dependency without a trusted hash, transitive ones included.
    assert uv["require-build-hashes"] is True
    for package, (version, hashes) in constraints.items():
        assert re.fullmatch(r"[0-9][0-9a-z.]*", version), package
        assert hashes, package
        assert all(HASH.fullmatch(entry) for entry in hashes), package
    # The image's backend and each of its dependencies, and `editables`, which hatchling needs
    # for an editable build only.
    assert {name: constraints[name] for name in image} == image
    assert set(constraints) - set(image) == {"editables"}


def test_the_images_runtime_dependencies_are_the_locked_ones_checked_by_hash() -> None:
    dockerfile = DOCKERFILE.read_text()
    export = "uv export --frozen --no-dev --no-emit-project --format requirements-txt"
    app_pip = "pip --python /opt/edgerollout/bin/python install --no-cache-dir"

    # --frozen: the lock as committed, never resolved again; the export carries its hashes.
    assert f"{export} -o requirements.txt" in dockerfile
    assert f"{app_pip} --require-hashes -r requirements.txt" in dockerfile
    # --no-deps: nothing comes in unhashed through the project wheel's own requirements.
    assert f"{app_pip} --no-deps /wheels/edgerollout-*.whl" in dockerfile
    # The product's environment has no installer of its own to ship.
    assert "python -m venv --without-pip /opt/edgerollout" in dockerfile


def test_the_base_image_is_a_build_argument_pinned_by_digest() -> None:
    lines = DOCKERFILE.read_text().splitlines()
    (argument,) = (line for line in lines if line.startswith("ARG PYTHON_IMAGE="))
    froms = [line for line in lines if line.startswith("FROM ")]

    default = argument.removeprefix("ARG PYTHON_IMAGE=")
    assert default.startswith("python:3.11-slim@sha256:")
    assert DIGEST.search(default)
    assert froms == ["FROM ${PYTHON_IMAGE} AS builder", "FROM ${PYTHON_IMAGE}"]
    # Declared before the first FROM, so both stages can use it.
    assert lines.index(argument) < lines.index(froms[0])


def test_the_prepull_toolbox_default_is_pinned_by_digest() -> None:
    image = CONTROLLER.prepull.toolbox_image

    assert image.startswith("busybox:1.37.0-musl@sha256:")
    assert DIGEST.search(image)
