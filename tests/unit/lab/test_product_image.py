"""The product image's build commands, without building (the build itself: tests/e2e/test_installed.py)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from edgerollout_lab import product_image
from edgerollout_lab.images import ImageError
from edgerollout_lab.product_image import Source, without_git_variables

ROOT = Path(__file__).resolve().parents[3]


def test_the_build_passes_the_lab_base_version_and_revision_and_mounts_only_what_is_given() -> None:
    store = Path("/cache/buildah")
    argv = product_image.bud_argv(
        store,
        base="localhost/base:1",
        local="localhost/edgerollout:0.1.0-abc",
        version="0.1.0",
        revision="abc",
        context=Path("/src"),
        mounts=[Path("/etc/pip.conf")],
    )

    assert argv == [
        "buildah",
        "--root",
        "/cache/buildah/root",
        "--runroot",
        "/cache/buildah/run",
        "--storage-driver=vfs",
        "bud",
        "--isolation=chroot",
        "--pull=never",
        "--layers=false",
        "--file=/src/deploy/Dockerfile",
        "--build-arg=PYTHON_IMAGE=localhost/base:1",
        "--build-arg=VERSION=0.1.0",
        "--build-arg=REVISION=abc",
        "--volume=/etc/pip.conf:/etc/pip.conf:ro",
        "--tag=localhost/edgerollout:0.1.0-abc",
        "/src",
    ]


def test_the_dockerfile_takes_every_build_argument_the_lab_passes() -> None:
    dockerfile = (ROOT / "deploy" / "Dockerfile").read_text().splitlines()

    assert {line.split("=")[0] for line in dockerfile if line.startswith("ARG ")} == {
        "ARG PYTHON_IMAGE",
        "ARG VERSION",
        "ARG REVISION",
    }


def test_the_base_is_debian_python_with_a_virtual_environment_in_usr_local() -> None:
    argv = product_image.mmdebstrap_argv(Path("/w/rootfs.tar"))

    assert argv[0] == "mmdebstrap"
    assert argv[-3:] == [
        "--include=python3,python3-venv,ca-certificates",
        "bookworm",
        "/w/rootfs.tar",
    ]
    assert "--customize-hook=chroot $1 python3 -m venv /usr/local" in argv
    assert "--variant=minbase" in argv


def test_the_base_name_changes_with_its_recipe(monkeypatch: pytest.MonkeyPatch) -> None:
    before = product_image.base_name()
    monkeypatch.setattr(product_image, "BASE_PACKAGES", (*product_image.BASE_PACKAGES, "curl"))

    after = product_image.base_name()

    assert before.startswith("localhost/edgerollout-lab/python:3.11-bookworm-")
    assert after != before


def test_the_source_is_the_repository_its_version_and_commit(tmp_path: Path) -> None:
    (tmp_path / "deploy").mkdir()
    (tmp_path / "deploy" / "Dockerfile").write_text("FROM scratch\n")
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\nversion = "1.2.3"\n')
    git = ["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@t"]
    # Never the repository of whoever runs the tests (a git hook's GIT_DIR would be).
    env = without_git_variables()
    subprocess.run([*git, "init", "-q"], check=True, env=env)
    subprocess.run([*git, "add", "."], check=True, env=env)
    subprocess.run([*git, "commit", "-q", "-m", "x"], check=True, env=env)
    commit = subprocess.run(
        [*git, "rev-parse", "--short=12", "HEAD"],
        capture_output=True,
        text=True,
        check=True,
        env=env,
    ).stdout.strip()
    (tmp_path / "deploy" / "sub").mkdir()

    clean = Source.of(tmp_path / "deploy" / "sub")
    (tmp_path / "new").write_text("changed")
    dirty = Source.of(tmp_path)

    assert (clean.context, clean.version, clean.revision) == (tmp_path, "1.2.3", commit)
    assert clean.tag == f"1.2.3-{commit}"
    assert dirty.revision == f"{commit}-dirty"


def test_outside_a_repository_the_source_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ImageError) as refused:
        Source.of(tmp_path)

    assert str(refused.value) == (
        f"no deploy/Dockerfile in {tmp_path} or above: run from the repository"
    )


def test_git_variables_of_a_calling_hook_are_left_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    hooked = tmp_path / "caller.git"
    monkeypatch.setenv("GIT_DIR", str(hooked))
    monkeypatch.setenv("GIT_WORK_TREE", str(tmp_path))
    env = without_git_variables()
    assert "GIT_DIR" not in env
    assert "GIT_WORK_TREE" not in env
    assert env["PATH"] == os.environ["PATH"]
