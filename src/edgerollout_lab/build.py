"""Build the lab's upstream programs from their Go modules, once per machine.

Each component is a throwaway main module whose go.mod and go.sum ship with edgerollout, so a build
needs only the Go toolchain and the module proxy, and reproduces byte-for-byte the dependency set we
tested. A component is rebuilt only when one of its binaries is missing; a finished component is
marked by a stamp file written after its binaries are in place, so an interrupted build is resumed,
never mistaken for a finished one.

The lab's components form one build set; each peer (`lab build --peer openyurt`) is a set of its
own, with its own cache folder, lock and stamps, built only when asked for.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from edgerollout_lab.versions import LAB, LAB_SETS, BuildSet, GoComponent, gomod_files

Progress = Callable[[str], None]


class BuildError(RuntimeError):
    """A component failed to build; the message names it and carries the tail of Go's output."""


@dataclass(frozen=True, slots=True)
class BuildReport:
    bin_dir: Path
    built: tuple[str, ...]
    seconds: float


def _stamp(component: GoComponent, build_set: BuildSet) -> Path:
    return build_set.bin_dir().parent / f"{component.name}.done"


def is_built(component: GoComponent, build_set: BuildSet = LAB) -> bool:
    return _stamp(component, build_set).exists() and all(
        (build_set.bin_dir() / name).exists() for name in component.binaries
    )


def missing_components(build_set: BuildSet = LAB) -> list[GoComponent]:
    return [component for component in build_set.components if not is_built(component, build_set)]


def build_command(build_set: BuildSet = LAB) -> str:
    """The command that builds a set, for messages that ask for it."""
    return (
        "./dev lab build" if build_set in LAB_SETS else f"./dev lab build --peer {build_set.name}"
    )


def binary(name: str, build_set: BuildSet = LAB) -> Path:
    """The path of one built program; raises if its set has not been built."""
    path = build_set.bin_dir() / name
    if not path.exists():
        raise BuildError(
            f"{name} is not built yet (looked in {path}); run `{build_command(build_set)}`"
        )
    return path


def _go_env(work: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        CGO_ENABLED="0",
        # readonly: go.sum must already hold every module, so nothing unpinned can slip in.
        GOFLAGS="-mod=readonly -buildvcs=false",
        GOWORK="off",
    )
    env["PWD"] = str(work)
    return env


def _go() -> str:
    go = shutil.which("go")
    if go is None:
        raise BuildError("the Go toolchain (`go`) is not on PATH; install Go 1.26 or newer")
    return go


def _run_go(args: list[str], *, work: Path, label: str, progress: Progress, total: int) -> None:
    """Run one go command, turning `go build -v` package lines into coarse progress."""
    tail: list[str] = []
    done = 0
    last_report = 0.0
    with subprocess.Popen(
        [_go(), *args],
        cwd=work,
        env=_go_env(work),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    ) as proc:
        assert proc.stdout is not None
        for line in proc.stdout:
            tail = [*tail[-39:], line.rstrip()]
            done += 1
            now = time.monotonic()
            if total and now - last_report >= 15:
                last_report = now
                share = min(99, 100 * done // total)
                progress(f"  {label}: compiled {done} of ~{total} packages ({share}%)")
        code = proc.wait()
    if code != 0:
        output = "\n".join(tail)
        raise BuildError(f"building {label} failed (go exited {code}); last output:\n{output}")


def _count_packages(component: GoComponent, work: Path) -> int:
    result = subprocess.run(
        [_go(), "list", "-deps", "-f", "{{if not .Standard}}x{{end}}", *component.packages],
        cwd=work,
        env=_go_env(work),
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        raise BuildError(
            f"resolving the modules of {component.name} {component.version} failed:\n"
            f"{result.stderr[-3000:]}"
        )
    return result.stdout.count("x")


def build_component(component: GoComponent, progress: Progress, build_set: BuildSet = LAB) -> None:
    bin_dir = build_set.bin_dir()
    root = bin_dir.parent
    work = root / "src" / component.name
    work.mkdir(parents=True, exist_ok=True)
    for name, content in gomod_files(component).items():
        (work / name).write_bytes(content)
    progress(f"{component.name} {component.version}: downloading modules")
    total = _count_packages(component, work)
    progress(f"{component.name} {component.version}: compiling {', '.join(component.binaries)}")
    staging = root / f"bin.{component.name}.partial"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    # One package: name its binary ourselves (etcd's main package path ends in `server/v3`).
    # Several: go names each after its package (kube-apiserver, ...).
    if len(component.packages) == 1:
        output = str(staging / component.binaries[0])
    else:
        output = f"{staging}{os.sep}"
    _run_go(
        ["build", "-v", "-ldflags", component.ldflags, "-o", output, *component.packages],
        work=work,
        label=component.name,
        progress=progress,
        total=total,
    )
    bin_dir.mkdir(parents=True, exist_ok=True)
    for name in component.binaries:
        os.replace(staging / name, bin_dir / name)
    shutil.rmtree(staging, ignore_errors=True)
    _stamp(component, build_set).write_text(f"{component.name} {component.version}\n")


@contextlib.contextmanager
def _exclusive(progress: Progress, build_set: BuildSet) -> Iterator[None]:
    """One build at a time per cache: a second `lab build` waits for the first, then finds it done."""
    root = build_set.bin_dir().parent
    root.mkdir(parents=True, exist_ok=True)
    with (root / "build.lock").open("w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            progress(f"another build into {root} is running; waiting for it to finish")
            fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def build_all(progress: Progress, build_set: BuildSet = LAB) -> BuildReport:
    """Build whatever is missing of a set (the lab's by default); a second call with everything
    built returns at once."""
    started = time.monotonic()
    if not missing_components(build_set):
        return _up_to_date(progress, build_set, started)
    with _exclusive(progress, build_set):
        return _build_missing(progress, build_set, started)


def _up_to_date(progress: Progress, build_set: BuildSet, started: float) -> BuildReport:
    progress(
        f"{build_set.name} binaries are up to date in {build_set.bin_dir()} ({build_set.key()})"
    )
    return BuildReport(bin_dir=build_set.bin_dir(), built=(), seconds=time.monotonic() - started)


def _build_missing(progress: Progress, build_set: BuildSet, started: float) -> BuildReport:
    todo = missing_components(build_set)
    if not todo:
        return _up_to_date(progress, build_set, started)
    progress(
        f"building {', '.join(c.name for c in todo)} into {build_set.bin_dir()}"
        " (once per machine; a cold build takes a while on 2 cores)"
    )
    for component in todo:
        step = time.monotonic()
        build_component(component, progress, build_set)
        progress(f"{component.name}: built in {time.monotonic() - step:.0f} s")
    return BuildReport(
        bin_dir=build_set.bin_dir(),
        built=tuple(c.name for c in todo),
        seconds=time.monotonic() - started,
    )
