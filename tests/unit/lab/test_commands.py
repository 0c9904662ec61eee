"""The lab's commands live in its own command line; the product's has none of them."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from edgerollout.cli.main import cli
from edgerollout_lab import build
from edgerollout_lab.build import BuildReport
from edgerollout_lab.commands import lab
from edgerollout_lab.screenshot import Shot
from edgerollout_lab.versions import BuildSet


def _options(command: click.Command) -> list[str]:
    return sorted(opt for param in command.params for opt in param.opts if opt.startswith("--"))


def test_product_command_line_has_no_lab_or_demo() -> None:
    assert isinstance(cli, click.Group)
    assert sorted(cli.commands) == [
        "agent",
        "controller",
        "dashboard",
        "init-agent-token",
        "list",
        "pause",
        "plan",
        "resume",
        "simulate",
        "status",
    ]


def test_lab_command_line_has_every_lab_command_and_the_demo() -> None:
    assert sorted(lab.commands) == [
        "build",
        "connect",
        "demo",
        "disconnect",
        "down",
        "image",
        "link-rate",
        "render-base",
        "restart",
        "screenshot",
        "status",
        "up",
    ]
    assert _options(lab.commands["up"]) == [
        "--agents",
        "--dir",
        "--fleet",
        "--link-rate",
        "--node-lease-seconds",
        "--nodes",
        "--payload-mb",
        "--real-nodes",
    ]
    assert _options(lab.commands["demo"]) == ["--dir"]
    assert _options(lab.commands["build"]) == ["--peer"]
    assert _options(lab.commands["image"]) == ["--dir", "--tag"]
    assert _options(lab.commands["render-base"]) == []


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


@pytest.mark.parametrize(
    ("args", "where"),
    [
        (["up", "--real-nodes", "1", "--link-rate", "fast"], "--link-rate: 'fast'"),
        (["link-rate", "real-1", "2TB/s"], "RATE: '2TB/s'"),
    ],
)
def test_a_bad_rate_is_refused_before_anything_starts(
    tmp_path: Path, args: list[str], where: str
) -> None:
    folder = tmp_path / "lab"

    result = CliRunner().invoke(lab, [*args, "--dir", str(folder)])

    assert result.exit_code == 2
    assert result.output.splitlines()[-1] == (
        f"Error: Invalid value for {where} is not a rate: use a positive number with B, KB, MB, "
        "GB, KiB or MiB per second (e.g. 2MB/s), or unlimited"
    )
    assert not folder.exists()


def test_build_builds_the_lab_and_gitops_health_then_each_peer_asked_for(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    built: list[str] = []

    def build_all(say: Callable[[str], None], build_set: BuildSet) -> BuildReport:
        built.append(build_set.name)
        return BuildReport(bin_dir=build_set.bin_dir(), built=(), seconds=0.0)

    monkeypatch.setattr(build, "build_all", build_all)

    assert CliRunner().invoke(lab, ["build"]).exit_code == 0
    assert CliRunner().invoke(lab, ["build", "--peer", "openyurt"]).exit_code == 0
    refused = CliRunner().invoke(lab, ["build", "--peer", "kruise"])

    assert built == ["lab", "gitops-health", "lab", "gitops-health", "openyurt"]
    assert refused.exit_code == 2
    assert "'kruise' is not 'openyurt'" in refused.output


def test_the_screenshot_keeps_at_least_one_pool_connected() -> None:
    result = CliRunner().invoke(lab, ["screenshot", "--pools", "4", "--cut", "4"])
    assert result.exit_code == 2
    assert "Invalid value for --cut: 4 of 4 pools: at least one must stay" in result.output


def test_the_screenshots_pools_take_the_nodes_in_turn_and_the_last_are_cut() -> None:
    shot = Shot(nodes=1000, pools=10, cut=2, cut_at=0.4, output=Path("shot.png"))
    assert [shot.pool_of(number) for number in (1, 2, 10, 11, 1000)] == [
        "shops-00",
        "shops-01",
        "shops-09",
        "shops-00",
        "shops-09",
    ]
    assert shot.cut_pools() == ["shops-08", "shops-09"]
