"""Start the lab's programs in the background and stop every one of them again.

Each program runs in its own session (so it outlives `lab up` and can be signalled as a group), logs
to `DIR/logs/<name>.log` and is recorded in `DIR/pids/<name>.json` with its start time, so that
`lab down` stops exactly the processes it started — never an unrelated process that happens to have
inherited a recycled pid.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import psutil


class ComponentError(RuntimeError):
    """A lab program failed; the message names it and carries the tail of its log."""


@dataclass(frozen=True, slots=True)
class Started:
    name: str
    pid: int
    log: Path


def tool(name: str) -> str:
    """The full path of a program the lab runs from the machine (`ip`, `containerd`, ...)."""
    path = shutil.which(name) or shutil.which(name, path="/usr/local/sbin:/usr/sbin:/sbin")
    if path is None:
        raise ComponentError(f"the program {name} is not installed (not found on PATH)")
    return path


def log_path(folder: Path, name: str) -> Path:
    return folder / "logs" / f"{name}.log"


def log_tail(folder: Path, name: str, lines: int = 25) -> str:
    path = log_path(folder, name)
    if not path.exists():
        return "(no log written)"
    with path.open("rb") as handle:
        handle.seek(0, os.SEEK_END)
        size = handle.tell()
        handle.seek(max(0, size - 64 * 1024))
        text = handle.read().decode(errors="replace")
    return "\n".join(text.splitlines()[-lines:])


def failure(folder: Path, name: str, what: str) -> ComponentError:
    return ComponentError(
        f"lab component {name} {what}; last lines of {log_path(folder, name)}:\n"
        f"{log_tail(folder, name)}"
    )


def start(folder: Path, name: str, argv: list[str], env: dict[str, str] | None = None) -> Started:
    (folder / "logs").mkdir(parents=True, exist_ok=True)
    (folder / "pids").mkdir(parents=True, exist_ok=True)
    log = log_path(folder, name)
    with log.open("ab") as out:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            cwd=folder,
            env=env,
        )
    created = psutil.Process(proc.pid).create_time()
    record = {"pid": proc.pid, "created": created, "argv": argv}
    (folder / "pids" / f"{name}.json").write_text(json.dumps(record))
    return Started(name=name, pid=proc.pid, log=log)


def _recorded(folder: Path, name: str) -> psutil.Process | None:
    """The live process recorded under name, or None if it is gone (or its pid was reused)."""
    path = folder / "pids" / f"{name}.json"
    try:
        record = json.loads(path.read_text())
        proc = psutil.Process(int(record["pid"]))
        if abs(proc.create_time() - float(record["created"])) > 0.01:
            return None
        if proc.status() == psutil.STATUS_ZOMBIE:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(proc.pid, os.WNOHANG)
            return None
    except (FileNotFoundError, ValueError, KeyError, psutil.NoSuchProcess):
        return None
    return proc


def is_running(folder: Path, name: str) -> bool:
    return _recorded(folder, name) is not None


def pid_of(folder: Path, name: str) -> int | None:
    proc = _recorded(folder, name)
    return None if proc is None else proc.pid


def recorded_names(folder: Path) -> list[str]:
    pids = folder / "pids"
    if not pids.is_dir():
        return []
    return sorted(path.stem for path in pids.glob("*.json"))


def stop(folder: Path, name: str, *, grace: float = 10.0) -> bool:
    """Stop the recorded process and its group; True if something was running."""
    proc = _recorded(folder, name)
    if proc is None:
        (folder / "pids" / f"{name}.json").unlink(missing_ok=True)
        return False
    group = [proc, *proc.children(recursive=True)]
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGTERM)
    for member in group:
        with contextlib.suppress(psutil.NoSuchProcess):
            member.terminate()
    _, alive = psutil.wait_procs(group, timeout=grace)
    for member in alive:
        with contextlib.suppress(psutil.NoSuchProcess):
            member.kill()
    psutil.wait_procs(alive, timeout=5)
    (folder / "pids" / f"{name}.json").unlink(missing_ok=True)
    return True


def restart(folder: Path, name: str, *, grace: float = 10.0, down_for: float = 0.0) -> Started:
    """Stop the recorded program and start it again with the same command line, `down_for`
    seconds after it stopped.

    The new process replaces the record; its log continues the old one."""
    path = folder / "pids" / f"{name}.json"
    try:
        argv = [str(part) for part in json.loads(path.read_text())["argv"]]
    except (FileNotFoundError, ValueError, KeyError):
        raise failure(
            folder, name, "was never started here (no record of its command line)"
        ) from None
    stop(folder, name, grace=grace)
    time.sleep(down_for)
    return start(folder, name, argv)


def signal_process(folder: Path, name: str, signum: int) -> None:
    proc = _recorded(folder, name)
    if proc is None:
        raise failure(folder, name, "is not running")
    proc.send_signal(signum)


def wait_until(
    folder: Path,
    name: str,
    check: Callable[[], bool],
    *,
    timeout: float,
    what: str,
    interval: float = 0.2,
) -> None:
    """Poll `check()` until it returns True; fail naming the component if it exits or times out."""
    deadline = time.monotonic() + timeout
    while True:
        if not is_running(folder, name):
            raise failure(folder, name, f"exited before it was {what}")
        with contextlib.suppress(Exception):
            if check():
                return
        if time.monotonic() > deadline:
            raise failure(folder, name, f"was not {what} within {timeout:.0f} s")
        time.sleep(interval)
