"""`edgerollout dashboard`'s flags and the URL it prints: loopback and a kernel-picked port by
default, a warning for any other address, the token in the URL."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from edgerollout.cli.dashboard_command import dashboard, dashboard_url, is_loopback
from edgerollout.cli.main import cli
from edgerollout.settings import DASHBOARD, Address


def test_the_dashboard_is_a_command_of_edgerollout_and_of_the_kubectl_plugin() -> None:
    result = CliRunner().invoke(cli, ["--help"])
    assert result.exit_code == 0
    assert "  dashboard " in result.output


def test_it_listens_on_loopback_on_a_port_the_kernel_picks_by_default() -> None:
    [address] = [param for param in dashboard.params if param.name == "address"]
    assert address.default == DASHBOARD.address == Address("127.0.0.1", 0)


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.0.0.2", True),
        ("::1", True),
        ("localhost", True),
        ("LocalHost.", True),
        ("0.0.0.0", False),  # noqa: S104 (a host tested, not bound)
        ("::", False),
        ("10.0.0.5", False),
        ("dashboard.example", False),
    ],
)
def test_a_host_is_loopback_only_when_it_names_this_machine_alone(
    host: str, loopback: bool
) -> None:
    assert is_loopback(host) is loopback


def test_the_url_carries_the_sessions_token() -> None:
    assert dashboard_url(host="127.0.0.1", port=8123, token="abc") == (
        "http://127.0.0.1:8123/?token=abc"
    )
    assert dashboard_url(host="::1", port=8123, token="abc") == "http://[::1]:8123/?token=abc"


def test_namespace_and_all_namespaces_exclude_each_other() -> None:
    result = CliRunner().invoke(dashboard, ["-n", "shops", "-A", "--no-browser"])
    assert result.exit_code == 2
    assert "-n/--namespace and -A/--all-namespaces cannot be used together" in result.output


def test_an_address_that_is_not_one_is_a_usage_error() -> None:
    result = CliRunner().invoke(dashboard, ["--address", "nowhere", "--no-browser"])
    assert result.exit_code == 2
    assert "--address" in result.output
