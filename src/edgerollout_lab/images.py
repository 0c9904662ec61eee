"""The lab's registry and the images it builds itself, with no registry outside (design §11.7).

A registry (`docker-registry`, the CNCF distribution server) listens on loopback and stores under
`DIR/registry`. The lab builds its images with `umoci` (an OCI image layout from a root
filesystem) and pushes them with `skopeo`:

- `pause:lab`, the real nodes' sandbox image: one static program (`pause.c`);
- `toolbox:lab`, the pre-pull Jobs' toolbox: a static busybox at `/bin/busybox`;
- `crashing:lab`, a broken revision: its container exits 1 at once, so the kubelet restarts it
  and backs off (`CrashLoopBackOff`), as a real bad release does;
- the workload images `nginx:1.19.4`, `nginx:1.19.5`, ... named like those of the scenarios users
  run (design §11.5): a static busybox serving HTTP on port 80 (`/version` says which), stopping
  at once on SIGTERM, and a payload layer of random bytes of a chosen size, different in every
  image, so that each pull downloads it.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from edgerollout_lab.processes import tool
from edgerollout_lab.versions import cache_root

PAUSE_IMAGE = "pause:lab"
# The pre-pull Jobs' toolbox on real nodes (`--prepull-toolbox-image`): a static /bin/busybox.
TOOLBOX_IMAGE = "toolbox:lab"
# A revision that crash-loops on a real node (the failure budget's tests).
CRASHING_IMAGE = "crashing:lab"
WORKLOAD_REPOSITORY = "nginx"
WORKLOAD_TAGS = ("1.19.4", "1.19.5", "1.19.6", "1.19.7", "1.19.8", "1.19.9")
# The workload images' payload layer: small by default so that labs start fast; the slow-link
# benchmark asks for tens of megabytes.
DEFAULT_PAYLOAD_BYTES = 1 << 20
STATIC_BUSYBOX = Path("/bin/busybox")


class ImageError(RuntimeError):
    """An image could not be built or pushed; the message carries the tool's output."""


@dataclass(frozen=True, slots=True)
class Registry:
    address: str  # HOST:PORT

    def reference(self, image: str) -> str:
        return f"{self.address}/{image}"

    @property
    def host_and_port(self) -> tuple[str, int]:
        host, _, port = self.address.rpartition(":")
        return host, int(port)


def run_tool(argv: list[str], *, what: str, timeout: float = 300) -> str:
    """Run an image tool (umoci, skopeo, buildah, ...); its output, or ImageError with the end of
    what it printed (buildah prints a failing build step's output on stdout)."""
    argv = [tool(argv[0]), *argv[1:]]
    result = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=timeout)
    if result.returncode != 0:
        output = (result.stdout + result.stderr)[-3000:]
        raise ImageError(f"{what} failed ({' '.join(argv[:4])} ...):\n{output}")
    return result.stdout


def registry_serving(registry: Registry) -> bool:
    with urllib.request.urlopen(f"http://{registry.address}/v2/", timeout=2) as response:
        return bool(response.status == 200)


def registry_argv(folder: Path, port: int) -> list[str]:
    config = folder / "registry.yml"
    config.write_text(
        json.dumps(
            {
                "version": 0.1,
                "storage": {"filesystem": {"rootdirectory": str(folder / "registry")}},
                "http": {"addr": f"127.0.0.1:{port}"},
                "log": {"level": "warn"},
            }
        )
    )
    return [tool("docker-registry"), "serve", str(config)]


def pause_binary() -> Path:
    """The sandbox program, compiled once per machine and source."""
    source = Path(__file__).with_name("pause.c")
    digest = hashlib.sha256(source.read_bytes()).hexdigest()[:12]
    built = cache_root() / f"pause-{digest}"
    if not built.exists():
        built.parent.mkdir(parents=True, exist_ok=True)
        partial = built.with_suffix(".partial")
        run_tool(
            ["gcc", "-static", "-Os", "-s", "-o", str(partial), str(source)],
            what="compiling the sandbox program",
        )
        os.replace(partial, built)
    return built


def _build(
    layout: Path,
    tag: str,
    files: dict[str, Path | bytes],
    entrypoint: list[str],
    links: dict[str, str] | None = None,
) -> None:
    """An image `tag` in the OCI layout, holding `files` (path in the image: source or bytes)
    and symbolic `links` (path in the image: what it points to)."""
    if not (layout / "index.json").exists():
        run_tool(["umoci", "init", "--layout", str(layout)], what="creating an OCI layout")
    image = f"{layout}:{tag}"
    bundle = layout.parent / f"bundle-{tag}"
    shutil.rmtree(bundle, ignore_errors=True)
    run_tool(["umoci", "new", "--image", image], what=f"creating image {tag}")
    run_tool(["umoci", "unpack", "--image", image, str(bundle)], what=f"unpacking {tag}")
    for inside, content in files.items():
        target = bundle / "rootfs" / inside.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, Path):
            shutil.copy2(content, target)
        else:
            target.write_bytes(content)
    for inside, points_to in (links or {}).items():
        (bundle / "rootfs" / inside.lstrip("/")).symlink_to(points_to)
    run_tool(["umoci", "repack", "--image", image, str(bundle)], what=f"packing {tag}")
    shutil.rmtree(bundle, ignore_errors=True)
    config = ["umoci", "config", "--image", image, "--config.entrypoint", entrypoint[0]]
    for arg in entrypoint[1:]:
        config += ["--config.cmd", arg]
    run_tool(config, what=f"configuring {tag}")


def _push(layout: Path, tag: str, registry: Registry, image: str) -> None:
    run_tool(
        [
            "skopeo",
            "copy",
            "--quiet",
            "--dest-tls-verify=false",
            f"oci:{layout}:{tag}",
            f"docker://{registry.reference(image)}",
        ],
        what=f"pushing {image} to the lab's registry",
    )


def build_and_push(folder: Path, registry: Registry, *, payload_bytes: int) -> list[str]:
    """Build the lab's images and push them; returns the workload images' references."""
    layout = folder / "images" / "oci"
    layout.parent.mkdir(parents=True, exist_ok=True)
    _build(layout, "pause", {"/pause": pause_binary()}, ["/pause"])
    _push(layout, "pause", registry, PAUSE_IMAGE)
    # Its applets as busybox images have them: the pull Job's init container runs `cp`.
    applets = {f"/bin/{name}": "busybox" for name in ("cp", "sh", "true")}
    _build(layout, "toolbox", {"/bin/busybox": STATIC_BUSYBOX}, ["/bin/busybox"], applets)
    _push(layout, "toolbox", registry, TOOLBOX_IMAGE)
    crash = ["/bin/busybox", "sh", "-c", "echo 'exiting on purpose' >&2; exit 1"]
    _build(layout, "crashing", {"/bin/busybox": STATIC_BUSYBOX}, crash)
    _push(layout, "crashing", registry, CRASHING_IMAGE)
    references = []
    for tag in WORKLOAD_TAGS:
        files: dict[str, Path | bytes] = {
            "/bin/busybox": STATIC_BUSYBOX,
            "/www/version": f"{tag}\n".encode(),
            "/payload": os.urandom(payload_bytes),
        }
        # A shell as the container's first process, so that SIGTERM stops it at once (the
        # kernel ignores it for a first process without a handler) as a real server would.
        serve = [
            "/bin/busybox",
            "sh",
            "-c",
            "trap 'exit 0' TERM; /bin/busybox httpd -f -p 80 -h /www & wait",
        ]
        _build(layout, f"nginx-{tag}", files, serve)
        image = f"{WORKLOAD_REPOSITORY}:{tag}"
        _push(layout, f"nginx-{tag}", registry, image)
        references.append(registry.reference(image))
    shutil.rmtree(layout.parent, ignore_errors=True)
    return references
