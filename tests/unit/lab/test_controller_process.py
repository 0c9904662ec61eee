"""The controller as a process: its command line, the wait for /readyz, and how it is stopped.

Small Python programs stand in for the controller, and a local HTTP server for its health checks.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from edgerollout_lab import controller_process
from edgerollout_lab.controller_process import ControllerProcess, controller_argv

SLEEP_FOREVER = "import time; print('up', flush=True); time.sleep(60)"
IGNORE_SIGTERM = (
    "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
    "print('up', flush=True); time.sleep(60)"
)

Spawn = Callable[[str, Path], subprocess.Popen[bytes]]


@pytest.fixture
def spawn() -> Iterator[Spawn]:
    """Start `python -c CODE` logging to a file; every one still running is killed afterwards."""
    started: list[subprocess.Popen[bytes]] = []

    def start(code: str, log: Path) -> subprocess.Popen[bytes]:
        with log.open("ab") as out:
            process = subprocess.Popen(
                [sys.executable, "-c", code], stdout=out, stderr=subprocess.STDOUT
            )
        started.append(process)
        return process

    yield start
    for process in started:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=10)


class Health:
    """A stand-in for the controller's health server: the statuses in turn, then the last again."""

    def __init__(self, statuses: list[int]) -> None:
        self.statuses = statuses
        self.paths: list[str] = []
        health = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                health.paths.append(self.path)
                status = health.statuses.pop(0) if len(health.statuses) > 1 else health.statuses[0]
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)


@contextlib.contextmanager
def health_server(statuses: list[int]) -> Iterator[Health]:
    health = Health(statuses)
    try:
        yield health
    finally:
        health.close()


def started_up(log: Path) -> None:
    """Wait until a stand-in has printed 'up' (its signal handlers are in place)."""
    for _ in range(500):
        if "up" in log.read_text():
            return
        time.sleep(0.01)
    raise AssertionError(f"the stand-in never started: {log.read_text()!r}")


def handle(process: subprocess.Popen[bytes], log: Path, health_url: str) -> ControllerProcess:
    return ControllerProcess(
        process=process,
        log=log,
        metrics_url="http://127.0.0.1:1/metrics",
        health_url=health_url,
    )


def test_argv_runs_the_controller_with_loopback_addresses_then_the_extra_flags() -> None:
    argv = controller_argv(
        Path("/labs/one/admin.kubeconfig"),
        metrics_port=40001,
        health_port=40002,
        extra=("--namespace=a-1", "--log-format=json"),
    )

    assert argv == [
        sys.executable,
        "-m",
        "edgerollout",
        "controller",
        "--kubeconfig=/labs/one/admin.kubeconfig",
        "--metrics-address=127.0.0.1:40001",
        "--health-address=127.0.0.1:40002",
        "--namespace=a-1",
        "--log-format=json",
    ]


def test_argv_without_extra_flags_ends_with_the_addresses() -> None:
    argv = controller_argv(Path("k"), metrics_port=1, health_port=2)

    assert argv[3:] == [
        "controller",
        "--kubeconfig=k",
        "--metrics-address=127.0.0.1:1",
        "--health-address=127.0.0.1:2",
    ]


def test_launch_starts_the_command_line_appending_to_the_log_with_matching_urls(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    echo = "import json, sys; print(json.dumps(sys.argv[1:]))"
    monkeypatch.setattr(controller_process, "PROGRAM", (sys.executable, "-c", echo))
    log = tmp_path / "logs" / "controller.log"
    log.parent.mkdir()
    log.write_text("earlier run\n")

    launched = ControllerProcess.launch(tmp_path / "admin.kubeconfig", log, "--namespace=n")
    assert launched.process.wait(timeout=30) == 0

    metrics_port = int(launched.metrics_url.removeprefix("http://127.0.0.1:").split("/")[0])
    health_port = int(launched.health_url.removeprefix("http://127.0.0.1:"))
    assert launched.metrics_url == f"http://127.0.0.1:{metrics_port}/metrics"
    assert metrics_port != health_port
    earlier, printed = launched.log_text().splitlines()
    assert earlier == "earlier run"
    assert json.loads(printed) == [
        "controller",
        f"--kubeconfig={tmp_path / 'admin.kubeconfig'}",
        f"--metrics-address=127.0.0.1:{metrics_port}",
        f"--health-address=127.0.0.1:{health_port}",
        "--namespace=n",
    ]
    assert launched.pid == launched.process.pid
    assert launched.log == log
    assert launched.log_start == len("earlier run\n")
    assert launched.run_log_text() == f"{printed}\n"


def test_launch_creates_the_folder_of_the_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(controller_process, "PROGRAM", (sys.executable, "-c", "print('hi')"))
    log = tmp_path / "not" / "yet" / "controller.log"

    launched = ControllerProcess.launch(tmp_path / "k", log)

    assert launched.process.wait(timeout=30) == 0
    assert log.read_text() == "hi\n"


async def test_wait_ready_polls_readyz_until_it_answers_200(tmp_path: Path, spawn: Spawn) -> None:
    log = tmp_path / "controller.log"
    with health_server([503, 503, 200]) as health:
        controller = handle(spawn(SLEEP_FOREVER, log), log, health.url)

        seconds = await controller.wait_ready(timeout=30)

    assert health.paths == ["/readyz", "/readyz", "/readyz"]
    assert 2 * controller_process.READY_POLL <= seconds < 30


async def test_wait_ready_fails_with_the_exit_code_and_log_when_the_process_exits(
    tmp_path: Path, spawn: Spawn
) -> None:
    log = tmp_path / "controller.log"
    process = spawn("print('bad flag'); raise SystemExit(2)", log)
    process.wait(timeout=30)
    controller = handle(process, log, "http://127.0.0.1:1")

    with pytest.raises(RuntimeError) as raised:
        await controller.wait_ready(timeout=30)

    assert str(raised.value) == "controller exited (2):\nbad flag\n"


async def test_wait_ready_times_out_naming_the_log_and_its_end(
    tmp_path: Path, spawn: Spawn
) -> None:
    log = tmp_path / "controller.log"
    with health_server([503]) as health:
        controller = handle(spawn(SLEEP_FOREVER, log), log, health.url)
        started_up(log)

        with pytest.raises(TimeoutError) as raised:
            await controller.wait_ready(timeout=0.3)

    assert str(raised.value) == f"controller not ready within 0.3 s (log: {log}):\nup\n"
    assert health.paths
    assert set(health.paths) == {"/readyz"}


def test_log_tail_is_the_last_characters_of_the_log(tmp_path: Path, spawn: Spawn) -> None:
    log = tmp_path / "controller.log"
    process = spawn(f"print('a' * 10 + 'b' * {controller_process.LOG_TAIL_CHARS - 1})", log)
    process.wait(timeout=30)
    controller = handle(process, log, "http://127.0.0.1:1")

    assert controller.log_tail() == "b" * (controller_process.LOG_TAIL_CHARS - 1) + "\n"


def test_stop_sends_sigterm_and_returns_the_exit_code(tmp_path: Path, spawn: Spawn) -> None:
    log = tmp_path / "controller.log"
    controller = handle(spawn(SLEEP_FOREVER, log), log, "http://127.0.0.1:1")
    started_up(log)

    assert controller.stop() == -15


def test_stop_kills_a_process_still_running_after_the_grace_period(
    tmp_path: Path, spawn: Spawn
) -> None:
    log = tmp_path / "controller.log"
    controller = handle(spawn(IGNORE_SIGTERM, log), log, "http://127.0.0.1:1")
    started_up(log)

    assert controller.stop(grace=0.3) == -9


def test_stop_of_an_exited_process_returns_its_exit_code(tmp_path: Path, spawn: Spawn) -> None:
    log = tmp_path / "controller.log"
    process = spawn("raise SystemExit(0)", log)
    process.wait(timeout=30)

    assert handle(process, log, "http://127.0.0.1:1").stop() == 0


def test_kill_sends_sigkill_and_waits(tmp_path: Path, spawn: Spawn) -> None:
    log = tmp_path / "controller.log"
    controller = handle(spawn(IGNORE_SIGTERM, log), log, "http://127.0.0.1:1")
    started_up(log)

    controller.kill()

    assert controller.process.returncode == -9
