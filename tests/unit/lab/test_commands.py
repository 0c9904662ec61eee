"""The lab's commands live in its own command line; the product's has none of them."""

from __future__ import annotations

import subprocess
import sys

import click

from edgerollout.cli.main import cli
from edgerollout_lab.commands import lab


def _options(command: click.Command) -> list[str]:
    return sorted(opt for param in command.params for opt in param.opts if opt.startswith("--"))


def test_product_command_line_has_no_lab_or_demo() -> None:
    assert isinstance(cli, click.Group)
    assert sorted(cli.commands) == ["agent", "controller", "init-agent-token", "status"]


def test_lab_command_line_has_every_lab_command_and_the_demo() -> None:
    assert sorted(lab.commands) == [
        "build",
        "connect",
        "demo",
        "disconnect",
        "down",
        "link-rate",
        "restart",
        "status",
        "up",
    ]
    assert _options(lab.commands["up"]) == [
        "--agents",
        "--dir",
        "--link-rate",
        "--node-lease-seconds",
        "--nodes",
        "--payload-mb",
        "--real-nodes",
    ]
    assert _options(lab.commands["demo"]) == ["--dir"]


def test_lab_runs_as_a_module_and_its_help_says_so() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "edgerollout_lab", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("Usage: python -m edgerollout_lab [OPTIONS] COMMAND [ARGS]...")
