"""Starting and stopping the lab's background programs by their recorded pid and start time."""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from edgerollout_lab import processes
from edgerollout_lab.processes import ComponentError

SLEEP_FOREVER = "import time; time.sleep(60)"


def python(code: str) -> list[str]:
    return [sys.executable, "-c", code]


def is_gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def wait_for_log(folder: Path, name: str, text: str) -> None:
    deadline = time.monotonic() + 5
    while text not in processes.log_tail(folder, name):
        assert time.monotonic() < deadline, f"{text!r} never appeared in the log of {name}"
        time.sleep(0.02)


def kill(pid: int) -> None:
    try:
        proc = psutil.Process(pid)
        proc.kill()
        proc.wait(timeout=5)
    except psutil.NoSuchProcess:
        pass


@pytest.fixture
def folder(tmp_path: Path) -> Iterator[Path]:
    yield tmp_path
    for name in processes.recorded_names(tmp_path):
        processes.stop(tmp_path, name, grace=2)


def test_started_program_is_recorded_with_its_pid_start_time_and_argv(folder: Path) -> None:
    argv = python(SLEEP_FOREVER)
    started = processes.start(folder, "sleeper", argv)

    record = json.loads((folder / "pids" / "sleeper.json").read_text())
    assert record == {
        "pid": started.pid,
        "created": psutil.Process(started.pid).create_time(),
        "argv": argv,
    }
    assert started.log == folder / "logs" / "sleeper.log"
    assert started.log.exists()
    assert processes.is_running(folder, "sleeper")
    assert processes.pid_of(folder, "sleeper") == started.pid
    assert processes.recorded_names(folder) == ["sleeper"]


def test_program_runs_in_the_lab_folder_and_logs_stdout_and_stderr(folder: Path) -> None:
    code = (
        "import os, sys, time; print(os.getcwd(), flush=True); "
        "print('to stderr', file=sys.stderr, flush=True); time.sleep(60)"
    )
    processes.start(folder, "talker", python(code))
    wait_for_log(folder, "talker", "to stderr")
    assert processes.log_tail(folder, "talker") == f"{folder}\nto stderr"


def test_program_runs_in_its_own_session(folder: Path) -> None:
    started = processes.start(folder, "leader", python(SLEEP_FOREVER))

    assert os.getsid(started.pid) == started.pid
    assert os.getpgid(started.pid) == started.pid
    assert os.getsid(started.pid) != os.getsid(0)


def test_stop_ends_the_program_and_forgets_it(folder: Path) -> None:
    started = processes.start(folder, "sleeper", python(SLEEP_FOREVER))

    assert processes.stop(folder, "sleeper") is True

    assert is_gone(started.pid)
    assert not processes.is_running(folder, "sleeper")
    assert processes.pid_of(folder, "sleeper") is None
    assert not (folder / "pids" / "sleeper.json").exists()
    assert processes.recorded_names(folder) == []


def test_second_stop_reports_nothing_was_running(folder: Path) -> None:
    processes.start(folder, "sleeper", python(SLEEP_FOREVER))
    assert processes.stop(folder, "sleeper") is True
    assert processes.stop(folder, "sleeper") is False


def test_stop_of_a_name_never_started_reports_nothing_was_running(folder: Path) -> None:
    assert processes.stop(folder, "never-started") is False
    assert processes.is_running(folder, "never-started") is False
    assert processes.pid_of(folder, "never-started") is None


def test_stop_also_ends_the_programs_children(folder: Path) -> None:
    code = (
        "import subprocess, sys, time; "
        f"child = subprocess.Popen([sys.executable, '-c', {SLEEP_FOREVER!r}]); "
        "print(child.pid, flush=True); time.sleep(60)"
    )
    started = processes.start(folder, "parent", python(code))
    deadline = time.monotonic() + 5
    while not processes.log_tail(folder, "parent").strip().isdigit():
        assert time.monotonic() < deadline, "the parent never reported its child's pid"
        time.sleep(0.02)
    child = int(processes.log_tail(folder, "parent"))

    assert processes.stop(folder, "parent", grace=2) is True

    assert is_gone(started.pid)
    assert is_gone(child)


def test_program_that_exited_is_not_running_and_stop_reports_nothing(folder: Path) -> None:
    started = processes.start(folder, "quick", python("pass"))
    psutil.Process(started.pid).wait(timeout=5)

    assert processes.is_running(folder, "quick") is False
    assert processes.stop(folder, "quick") is False
    assert not (folder / "pids" / "quick.json").exists()


def test_recorded_pid_with_another_start_time_is_not_ours_and_is_never_stopped(
    folder: Path,
) -> None:
    started = processes.start(folder, "recycled", python(SLEEP_FOREVER))
    pid_file = folder / "pids" / "recycled.json"
    record = json.loads(pid_file.read_text())
    record["created"] -= 100.0
    pid_file.write_text(json.dumps(record))
    try:
        assert processes.is_running(folder, "recycled") is False
        assert processes.pid_of(folder, "recycled") is None

        assert processes.stop(folder, "recycled", grace=1) is False

        survivor = psutil.Process(started.pid)
        assert survivor.is_running()
        assert survivor.status() != psutil.STATUS_ZOMBIE
        assert not pid_file.exists()
    finally:
        kill(started.pid)


def test_signal_process_of_a_component_not_running_names_it(folder: Path) -> None:
    with pytest.raises(ComponentError) as caught:
        processes.signal_process(folder, "link", 1)
    log = folder / "logs" / "link.log"
    assert str(caught.value) == (
        f"lab component link is not running; last lines of {log}:\n(no log written)"
    )


def test_wait_until_returns_as_soon_as_the_check_passes(folder: Path) -> None:
    processes.start(folder, "server", python(SLEEP_FOREVER))
    answers = iter([False, False, True])
    calls: list[bool] = []

    def check() -> bool:
        calls.append(answer := next(answers))
        return answer

    processes.wait_until(folder, "server", check, timeout=5, what="ready", interval=0.01)
    assert calls == [False, False, True]


def test_wait_until_names_the_component_and_its_log_when_it_exits_early(folder: Path) -> None:
    processes.start(folder, "api", python("import sys; print('boom'); sys.exit(3)"))
    log = folder / "logs" / "api.log"

    with pytest.raises(ComponentError) as caught:
        processes.wait_until(folder, "api", lambda: False, timeout=10, what="ready", interval=0.02)

    assert (
        str(caught.value)
        == f"lab component api exited before it was ready; last lines of {log}:\nboom"
    )


def test_wait_until_names_the_component_and_its_log_when_the_check_times_out(
    folder: Path,
) -> None:
    code = "import time; print('still starting', flush=True); time.sleep(60)"
    processes.start(folder, "slow", python(code))
    wait_for_log(folder, "slow", "still starting")
    log = folder / "logs" / "slow.log"

    def check() -> bool:
        raise ConnectionRefusedError("nothing listens yet")

    started = time.monotonic()
    with pytest.raises(ComponentError) as caught:
        processes.wait_until(folder, "slow", check, timeout=1, what="healthy", interval=0.05)

    assert time.monotonic() - started >= 1
    assert str(caught.value) == (
        f"lab component slow was not healthy within 1 s; last lines of {log}:\nstill starting"
    )
    assert processes.is_running(folder, "slow")


def test_log_tail_returns_the_last_lines(tmp_path: Path) -> None:
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "etcd.log").write_text("".join(f"line {n}\n" for n in range(1, 31)))

    assert processes.log_tail(tmp_path, "etcd", lines=3) == "line 28\nline 29\nline 30"
    assert processes.log_tail(tmp_path, "etcd") == "\n".join(f"line {n}" for n in range(6, 31))


def test_log_tail_of_a_program_without_log_says_so(tmp_path: Path) -> None:
    assert processes.log_tail(tmp_path, "etcd") == "(no log written)"


def test_log_tail_reads_only_the_end_of_a_large_log(tmp_path: Path) -> None:
    (tmp_path / "logs").mkdir()
    filler = "x" * 1000 + "\n"
    (tmp_path / "logs" / "big.log").write_text(filler * 500 + "last words\n")

    assert processes.log_tail(tmp_path, "big", lines=2) == "x" * 1000 + "\nlast words"


def test_restart_replaces_the_process_with_one_running_the_same_command_line(
    folder: Path,
) -> None:
    code = "import os, time; print('started', os.getpid(), flush=True); time.sleep(60)"
    first = processes.start(folder, "restartable", python(code))
    wait_for_log(folder, "restartable", f"started {first.pid}")

    second = processes.restart(folder, "restartable", grace=2)

    assert second.pid != first.pid
    assert is_gone(first.pid)
    assert processes.pid_of(folder, "restartable") == second.pid
    record = json.loads((folder / "pids" / "restartable.json").read_text())
    assert record["argv"] == python(code)
    wait_for_log(folder, "restartable", f"started {second.pid}")
    # The log goes on: both lives are in it.
    assert processes.log_tail(folder, "restartable").splitlines() == [
        f"started {first.pid}",
        f"started {second.pid}",
    ]


def test_restart_keeps_the_program_down_as_long_as_asked(folder: Path) -> None:
    code = "import time; print('started', time.time(), flush=True); time.sleep(60)"
    first = processes.start(folder, "slow-return", python(code))
    wait_for_log(folder, "slow-return", "started")

    before = time.monotonic()
    second = processes.restart(folder, "slow-return", grace=2, down_for=0.5)

    assert is_gone(first.pid)
    assert time.monotonic() - before >= 0.5
    assert processes.pid_of(folder, "slow-return") == second.pid
    processes.stop(folder, "slow-return", grace=2)


def test_restart_of_a_program_never_started_names_it_and_starts_nothing(folder: Path) -> None:
    with pytest.raises(ComponentError, match="lab component ghost was never started here"):
        processes.restart(folder, "ghost")
    assert processes.recorded_names(folder) == []
