"""The agent's token on the node: created once, private, and required to start (design §8.3)."""

from __future__ import annotations

import dataclasses
import logging
import stat
from pathlib import Path

import pytest
from click.testing import CliRunner

from edgerollout.agent.runner import caller_token, read_token
from edgerollout.agent.token_file import ensure_token
from edgerollout.cli.main import cli
from edgerollout.settings import AGENT, Address


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_init_creates_a_random_token_0600_in_a_0700_directory(tmp_path: Path) -> None:
    path = tmp_path / "edgerollout" / "agent-token"

    assert ensure_token(path) is True

    token = read_token(path)
    assert len(token) == 43  # 32 random bytes, URL-safe base64
    assert (mode(path), mode(path.parent)) == (0o600, 0o700)


def test_init_keeps_an_existing_token_and_tightens_its_modes(tmp_path: Path) -> None:
    path = tmp_path / "agent-token"
    path.write_text("kept-token\n")
    path.chmod(0o644)
    tmp_path.chmod(0o755)

    assert ensure_token(path) is False

    assert (read_token(path), mode(path), mode(tmp_path)) == ("kept-token", 0o600, 0o700)


def test_init_agent_token_command_says_what_it_did(tmp_path: Path) -> None:
    path = tmp_path / "agent-token"

    first = CliRunner().invoke(cli, ["init-agent-token", f"--path={path}"])
    second = CliRunner().invoke(cli, ["init-agent-token", f"--path={path}"])

    assert (first.exit_code, first.output) == (0, f"created agent token {path}\n")
    assert (second.exit_code, second.output) == (0, f"kept the existing agent token {path}\n")


def test_a_missing_token_file_stops_the_agent_and_says_what_to_do(tmp_path: Path) -> None:
    path = tmp_path / "agent-token"

    with pytest.raises(ValueError, match="token file") as caught:
        caller_token(dataclasses.replace(AGENT, node_name="edge-1", token_file=path))

    assert str(caught.value) == (
        f"cannot read the token file {path} (No such file or directory); the install's init "
        "container writes it (`edgerollout init-agent-token`), or run with --auth=none to serve "
        "without a token"
    )


def test_an_empty_token_file_stops_the_agent(tmp_path: Path) -> None:
    path = tmp_path / "agent-token"
    path.write_text("\n")

    with pytest.raises(ValueError, match="token file") as caught:
        caller_token(dataclasses.replace(AGENT, node_name="edge-1", token_file=path))

    assert str(caught.value) == (
        f"the token file {path} is empty; expected a token on its first line"
    )


def test_auth_none_needs_no_token_file_and_warns(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    settings = dataclasses.replace(
        AGENT, node_name="edge-1", token_file=tmp_path / "absent", auth="none"
    )

    with caplog.at_level(logging.WARNING, logger="edgerollout.agent"):
        assert caller_token(settings) is None

    assert [(r.levelname, r.getMessage()) for r in caplog.records] == [
        (
            "WARNING",
            "authentication is off (--auth=none): any process on this node may upgrade its pods",
        )
    ]


def test_auth_none_beyond_loopback_refuses_to_start(tmp_path: Path) -> None:
    settings = dataclasses.replace(
        AGENT, node_name="edge-1", auth="none", listen=Address.parse("0.0.0.0:10267")
    )

    with pytest.raises(ValueError, match="loopback only") as caught:
        caller_token(settings)

    assert str(caught.value) == (
        "--auth=none with --listen=0.0.0.0:10267: without a token the agent serves on loopback "
        "only (127.0.0.1:10267 or [::1]:10267), or anyone who reaches 0.0.0.0 could upgrade this "
        "node's pods"
    )


@pytest.mark.parametrize("listen", ["127.0.0.1:10267", "[::1]:10267", "localhost:10267"])
def test_auth_none_on_loopback_starts(listen: str) -> None:
    settings = dataclasses.replace(AGENT, auth="none", listen=Address.parse(listen))

    assert caller_token(settings) is None


@pytest.mark.parametrize("listen", ["0.0.0.0:10267", "[::]:10267", "10.0.0.5:10267", "edge:1"])
def test_a_token_beyond_loopback_starts_saying_so(
    listen: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "agent-token"
    path.write_text("secret\n")
    settings = dataclasses.replace(AGENT, listen=Address.parse(listen), token_file=path)

    with caplog.at_level(logging.WARNING, logger="edgerollout.agent"):
        assert caller_token(settings) == "secret"

    assert [(r.levelname, r.getMessage()) for r in caplog.records] == [
        (
            "WARNING",
            "serving beyond loopback: every host that reaches this address may call the agent, "
            "and each change still needs the token",
        )
    ]
