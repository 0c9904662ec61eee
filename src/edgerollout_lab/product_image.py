"""The product's own image, built for real from `deploy/Dockerfile` and pushed to the lab's
registry (design §11.8).

No Docker engine and no outside registry are needed: `buildah` builds the Dockerfile without a
daemon (`vfs` storage, `chroot` isolation, its store in the lab's cache), and the `FROM` image is
made here too. The Dockerfile's default base is the digest-pinned official `python:3.11-slim`;
the lab passes its own through the same `PYTHON_IMAGE` build argument a mirror would: Debian
bookworm's Python 3.11 from Debian's archive (`mmdebstrap`), laid out as the official image is —
`python` and `pip` first on PATH in /usr/local/bin (a virtual environment over the system
interpreter, so pip may install there), and nothing else but ca-certificates.

The `RUN` steps really install the locked dependencies from the package index. On a machine whose
TLS is inspected by a proxy, they trust the machine's CA bundle and read its pip configuration:
both are mounted for the build only, never copied into the image.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from edgerollout_lab import packages, processes
from edgerollout_lab.images import ImageError, Registry, run_tool
from edgerollout_lab.versions import cache_root

PACKAGES = {"buildah": "/usr/bin/buildah", "mmdebstrap": "/usr/bin/mmdebstrap"}
REPOSITORY = "edgerollout"
DOCKERFILE = Path("deploy/Dockerfile")
# The base: what the official python:3.11-slim holds, from Debian's own packages.
SUITE = "bookworm"
BASE_PACKAGES = ("python3", "python3-venv", "ca-certificates")
MMDEBSTRAP_OPTIONS = (
    "--variant=minbase",
    # A merged /usr without the usrmerge package (which would pull in perl).
    "--hook-dir=/usr/share/mmdebstrap/hooks/merged-usr",
    '--aptopt=APT::Install-Recommends "false"',
    # As slim images do: no manuals, translations or documentation but the licences.
    "--dpkgopt=path-exclude=/usr/share/man/*",
    "--dpkgopt=path-exclude=/usr/share/locale/*",
    "--dpkgopt=path-exclude=/usr/share/doc/*",
    "--dpkgopt=path-include=/usr/share/doc/*/copyright",
    "--customize-hook=chroot $1 python3 -m venv /usr/local",
)
BASE_ENV = {
    "PATH": "/usr/local/bin:/usr/local/sbin:/usr/sbin:/usr/bin:/sbin:/bin",
    "LANG": "C.UTF-8",
}
# Mounted into the RUN steps when the machine has them (see the module's docstring).
BUILD_MOUNTS = (Path("/etc/ssl/certs/ca-certificates.crt"), Path("/etc/pip.conf"))
BUILD_TIMEOUT_SECONDS = 1200

Say = Callable[[str], None]


@dataclass(frozen=True, slots=True)
class BuiltImage:
    local: str  # the name in the lab's buildah store
    tag: str

    def reference(self, registry: Registry) -> str:
        return registry.reference(f"{REPOSITORY}:{self.tag}")


@dataclass(frozen=True, slots=True)
class Source:
    """What an image is built from: the repository, its release and its commit."""

    context: Path
    version: str
    revision: str  # the commit, with "-dirty" when the work tree has changes

    @property
    def tag(self) -> str:
        return f"{self.version}-{self.revision}"

    @staticmethod
    def of(folder: Path) -> Source:
        """The repository holding `folder` (a parent with deploy/Dockerfile)."""
        for context in (folder.resolve(), *folder.resolve().parents):
            if (context / DOCKERFILE).is_file():
                break
        else:
            raise ImageError(f"no {DOCKERFILE} in {folder} or above: run from the repository")
        project = tomllib.loads((context / "pyproject.toml").read_text())["project"]
        return Source(context=context, version=str(project["version"]), revision=_revision(context))


def _revision(context: Path) -> str:
    def git(*args: str) -> str:
        if shutil.which("git") is None:
            return ""
        argv = [processes.tool("git"), "-C", str(context), *args]
        result = subprocess.run(
            argv, capture_output=True, text=True, check=False, env=without_git_variables()
        )
        return result.stdout.strip() if result.returncode == 0 else ""

    commit = git("rev-parse", "--short=12", "HEAD") or "unknown"
    return f"{commit}-dirty" if git("status", "--porcelain") else commit


def without_git_variables() -> dict[str, str]:
    """This process's environment without git's `GIT_*` variables: run from a git hook or
    `git rebase -x`, `GIT_DIR` would point every git command at the caller's repository,
    whatever `-C` says."""
    return {name: value for name, value in os.environ.items() if not name.startswith("GIT_")}


def store_options(store: Path) -> list[str]:
    """buildah's global options: its own store in the lab's cache, vfs (no overlay mounts)."""
    return ["--root", str(store / "root"), "--runroot", str(store / "run"), "--storage-driver=vfs"]


def default_store() -> Path:
    return cache_root() / "buildah"


def base_name() -> str:
    """The base's name in the store, keyed by how it is made (a change makes a new one)."""
    recipe = json.dumps([SUITE, BASE_PACKAGES, MMDEBSTRAP_OPTIONS, BASE_ENV])
    key = hashlib.sha256(recipe.encode()).hexdigest()[:12]
    return f"localhost/edgerollout-lab/python:3.11-{SUITE}-{key}"


def mmdebstrap_argv(rootfs: Path) -> list[str]:
    return [
        "mmdebstrap",
        *MMDEBSTRAP_OPTIONS,
        f"--include={','.join(BASE_PACKAGES)}",
        SUITE,
        str(rootfs),
    ]


def bud_argv(
    store: Path,
    *,
    base: str,
    local: str,
    version: str,
    revision: str,
    context: Path,
    mounts: list[Path],
) -> list[str]:
    argv = [
        "buildah",
        *store_options(store),
        "bud",
        "--isolation=chroot",
        "--pull=never",
        # No layer cache: buildah 1.28 reused a cached LABEL step whose ARG value had changed.
        "--layers=false",
        f"--file={context / DOCKERFILE}",
        f"--build-arg=PYTHON_IMAGE={base}",
        f"--build-arg=VERSION={version}",
        f"--build-arg=REVISION={revision}",
    ]
    argv += [f"--volume={path}:{path}:ro" for path in mounts]
    return [*argv, f"--tag={local}", str(context)]


def _buildah(*args: str, what: str, timeout: float = BUILD_TIMEOUT_SECONDS) -> str:
    """`buildah ARGS` on the lab's store; its output."""
    return run_tool(["buildah", *store_options(default_store()), *args], what=what, timeout=timeout)


def _exists(name: str) -> bool:
    argv = [processes.tool("buildah"), *store_options(default_store()), "inspect", "--type=image"]
    return subprocess.run([*argv, name], capture_output=True, check=False).returncode == 0


def ensure_base(say: Say) -> str:
    """The base image in the store, made from Debian's archive the first time (about a minute)."""
    name = base_name()
    if _exists(name):
        return name
    say(f"making the image's base {name} from Debian {SUITE} (once per machine)")
    work = default_store() / "base-work"
    work.mkdir(parents=True, exist_ok=True)
    rootfs = work / "rootfs.tar"
    try:
        run_tool(
            mmdebstrap_argv(rootfs),
            what="making the base's root filesystem",
            timeout=BUILD_TIMEOUT_SECONDS,
        )
        container = _buildah("from", "scratch", what="a scratch image").strip()
        _buildah("add", container, str(rootfs), "/", what="adding the rootfs")
        env = [f"--env={key}={value}" for key, value in BASE_ENV.items()]
        _buildah("config", "--cmd=python3", *env, container, what="configuring the base")
        _buildah("commit", "--quiet", container, name, what="saving the base")
        _buildah("rm", container, what="removing the base's container")
    finally:
        rootfs.unlink(missing_ok=True)
    return name


def build(context: Path, *, tag: str, version: str, revision: str, say: Say) -> BuiltImage:
    """Build deploy/Dockerfile in `context` (the repository) on the lab's base."""
    packages.ensure(PACKAGES, purpose="building the image", say=say)
    base = ensure_base(say)
    local = f"localhost/{REPOSITORY}:{tag}"
    say(f"building {local} from {DOCKERFILE} with buildah (base {base})")
    mounts = [path for path in BUILD_MOUNTS if path.is_file()]
    argv = bud_argv(
        default_store(),
        base=base,
        local=local,
        version=version,
        revision=revision,
        context=context,
        mounts=mounts,
    )
    run_tool(argv, what=f"building {local}", timeout=BUILD_TIMEOUT_SECONDS)
    # The image this tag named before, and the builder stage, are left untagged: free them.
    _buildah("rmi", "--prune", what="removing untagged images")
    return BuiltImage(local=local, tag=tag)


def push(image: BuiltImage, registry: Registry) -> str:
    """Push the image to the lab's registry (plain HTTP on loopback); returns its reference."""
    reference = image.reference(registry)
    _buildah(
        "push",
        "--quiet",
        "--tls-verify=false",
        image.local,
        f"docker://{reference}",
        what=f"pushing {image.local} to {registry.address}",
    )
    return reference


def pushed_size(reference: str) -> int:
    """Bytes a node downloads to pull the pushed image: its manifest's config and layers."""
    raw = run_tool(
        ["skopeo", "inspect", "--raw", "--tls-verify=false", f"docker://{reference}"],
        what=f"reading {reference}'s manifest",
        timeout=60,
    )
    manifest = json.loads(raw)
    return int(manifest["config"]["size"]) + sum(int(layer["size"]) for layer in manifest["layers"])


def inspect(image: BuiltImage) -> dict[str, object]:
    """The image's OCI configuration (user, entrypoint, labels, ...) as buildah reports it."""
    raw = _buildah(
        "inspect", "--type=image", image.local, what=f"inspecting {image.local}", timeout=60
    )
    document: dict[str, object] = json.loads(raw)
    return document


def run_inside(image: BuiltImage, command: list[str]) -> str:
    """Run `command` in a container of the image (buildah, chroot isolation); its output."""
    container = _buildah("from", "--quiet", image.local, what="a container").strip()
    try:
        return _buildah(
            "run",
            "--isolation=chroot",
            container,
            "--",
            *command,
            what=f"running {' '.join(command)} in {image.local}",
            timeout=120,
        )
    finally:
        _buildah("rm", container, what="removing the container")
