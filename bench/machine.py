"""What a measurement ran on and what it cost: the machine, and CPU and memory of processes.

The lab's programs (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, KWOK, the link
relay) are measured apart from edgerollout's controller, so that the lab's own overhead is never
mistaken for edgerollout's.
"""

from __future__ import annotations

import os
import platform
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

from edgerollout_lab import processes
from edgerollout_lab.cluster import COMPONENTS


def machine() -> dict[str, Any]:
    load1, load5, load15 = os.getloadavg()
    memory = psutil.virtual_memory()
    return {
        "cores": os.cpu_count(),
        "cpu_model": _cpu_model(),
        "memory_gib": round(memory.total / 2**30, 1),
        "load_average": [round(load1, 2), round(load5, 2), round(load15, 2)],
        "python": platform.python_version(),
        "kernel": platform.release(),
    }


def source_commit() -> str | None:
    """The commit of the code measured, with "+changes" if the work tree differs from it."""
    root = Path(__file__).resolve().parent.parent

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", *args],  # noqa: S607 - git from PATH
            cwd=root,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()

    try:
        commit = git("rev-parse", "--short=12", "HEAD")
        changed = git("status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.CalledProcessError):
        return None
    return f"{commit}+changes" if changed else commit


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.partition(":")[2].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def load_now() -> float:
    return round(os.getloadavg()[0], 2)


# Time counted twice by the kernel: a guest's time is already in `user` (and `nice`).
_COUNTED_ELSEWHERE = ("guest", "guest_nice")
_BUSY = ("user", "system", "nice", "irq", "softirq", "steal")


@dataclass(frozen=True, slots=True)
class CpuTimes:
    """The machine's CPU seconds since boot, summed over cores: busy (neither idle nor waiting
    for I/O) and all of them."""

    busy: float
    total: float

    def busy_cores_since(self, before: CpuTimes) -> float:
        """How many cores were busy on average between `before` and this reading, whoever kept
        them busy: both counts come from the same readings, so it never exceeds the cores."""
        elapsed = self.total - before.total
        if elapsed <= 0:
            return 0.0
        return (self.busy - before.busy) / elapsed * (os.cpu_count() or 1)


def cpu_times() -> CpuTimes:
    times = psutil.cpu_times()._asdict()
    busy = sum(float(times.get(name, 0.0)) for name in _BUSY)
    total = sum(float(value) for name, value in times.items() if name not in _COUNTED_ELSEWHERE)
    return CpuTimes(busy=busy, total=total)


def cpu_seconds(pid: int) -> float:
    """User plus system CPU seconds of a process and its children so far (0 if it is gone)."""
    try:
        process = psutil.Process(pid)
        times = process.cpu_times()
    except psutil.NoSuchProcess:
        return 0.0
    return float(times.user + times.system + times.children_user + times.children_system)


def rss_bytes(pid: int) -> int:
    try:
        return int(psutil.Process(pid).memory_info().rss)
    except psutil.NoSuchProcess:
        return 0


@dataclass(frozen=True, slots=True)
class Usage:
    """CPU seconds per process at one moment, with the wall-clock (monotonic) time."""

    at: float
    cpu: dict[str, float]

    @staticmethod
    def of(pids: dict[str, int]) -> Usage:
        return Usage(
            at=time.monotonic(), cpu={name: cpu_seconds(pid) for name, pid in pids.items()}
        )

    def since_per_second(self, after: Usage) -> dict[str, float]:
        """CPU seconds per second each process spent from this reading to `after`."""
        elapsed = max(after.at - self.at, 1e-9)
        return {
            name: round((seconds - self.cpu.get(name, 0.0)) / elapsed, 3)
            for name, seconds in after.cpu.items()
        }

    def since(self, before: Usage) -> dict[str, float]:
        """CPU seconds each process spent between the two readings."""
        return {
            name: round(seconds - before.cpu.get(name, 0.0), 2)
            for name, seconds in self.cpu.items()
        }


def lab_pids(folder: Path) -> dict[str, int]:
    """The running programs of the lab's control plane, by component name."""
    pids = {}
    for name in COMPONENTS:
        pid = processes.pid_of(folder, name)
        if pid is not None:
            pids[name] = pid
    return pids


def lab_rss_mb(folder: Path) -> dict[str, float]:
    return {name: round(rss_bytes(pid) / 2**20, 1) for name, pid in lab_pids(folder).items()}
