"""`edgerollout dashboard`'s flags and the URL it prints: loopback and a kernel-picked port by
default, a warning for any other address, the token in the URL."""

from __future__ import annotations

import asyncio
import contextlib
import re
import socket
import webbrowser
from collections.abc import Awaitable, Callable
from urllib.parse import urlsplit

import aiohttp
import pytest
from click.testing import CliRunner

from edgerollout.cli import dashboard_command
from edgerollout.cli.dashboard_command import (
    dashboard,
    dashboard_url,
    dashboard_urls,
    is_loopback,
    machine_names,
)
from edgerollout.cli.main import cli
from edgerollout.settings import DASHBOARD, Address
from tests.unit.cli.list_cluster import ClosingApi, shop
from tests.unit.kube.running import until


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


@pytest.mark.parametrize(
    ("host", "printed", "opened"),
    [
        ("127.0.0.1", "http://127.0.0.1:8123/?token=abc", "http://127.0.0.1:8123/?token=abc"),
        ("10.0.0.5", "http://10.0.0.5:8123/?token=abc", "http://10.0.0.5:8123/?token=abc"),
        ("0.0.0.0", "http://shop-laptop:8123/?token=abc", "http://127.0.0.1:8123/?token=abc"),  # noqa: S104
        ("::", "http://shop-laptop:8123/?token=abc", "http://[::1]:8123/?token=abc"),
    ],
)
def test_on_a_wildcard_the_url_printed_names_the_machine_and_the_one_opened_is_loopback(
    host: str, printed: str, opened: str
) -> None:
    urls = dashboard_urls(host=host, port=8123, token="abc", machine="shop-laptop")
    assert urls == (printed, opened)


def test_a_machine_without_a_host_name_is_printed_as_its_wildcard() -> None:
    assert dashboard_urls(host="0.0.0.0", port=8123, token="abc", machine="") == (  # noqa: S104
        "http://0.0.0.0:8123/?token=abc",
        "http://127.0.0.1:8123/?token=abc",
    )


def test_namespace_and_all_namespaces_exclude_each_other() -> None:
    result = CliRunner().invoke(dashboard, ["-n", "shops", "-A", "--no-browser"])
    assert result.exit_code == 2
    assert "-n/--namespace and -A/--all-namespaces cannot be used together" in result.output


def test_an_address_that_is_not_one_is_a_usage_error() -> None:
    result = CliRunner().invoke(dashboard, ["--address", "nowhere", "--no-browser"])
    assert result.exit_code == 2
    assert "--address" in result.output


async def serving(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    *,
    address: Address,
    meanwhile: Callable[[str], Awaitable[None]] | None = None,
) -> tuple[ClosingApi, list[str], str, str]:
    """Run the command's server until it has printed its URL (and `meanwhile` is done with it);
    the API it used, the URLs it opened in the browser, and what it printed on stdout and
    stderr."""
    api = ClosingApi()
    shop(api)

    async def connect(kubeconfig: str | None) -> ClosingApi:
        return api

    opened: list[str] = []
    monkeypatch.setattr(dashboard_command, "connect", connect)
    monkeypatch.setattr(webbrowser, "open", opened.append)
    serving = asyncio.create_task(
        dashboard_command.serve(namespace="default", kubeconfig=None, address=address, browser=True)
    )
    out, err = "", ""
    try:
        while "Press Ctrl-C to stop." not in out:
            assert not serving.done(), serving.result()
            await asyncio.sleep(0.01)
            captured = capsys.readouterr()
            out, err = out + captured.out, err + captured.err
        await until(lambda: opened != [], what="the browser opened")
        if meanwhile is not None:
            await meanwhile(opened[0])
    finally:
        serving.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await serving
    return api, opened, out, err


async def test_it_prints_its_url_opens_it_and_closes_the_api_when_stopped(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    api, opened, out, err = await serving(monkeypatch, capsys, address=DASHBOARD.address)
    [url] = opened
    assert re.fullmatch(r"http://127\.0\.0\.1:\d+/\?token=[\w-]{43}", url)
    assert out == f"Dashboard: {url}\nPress Ctrl-C to stop.\n"
    assert err == ""
    assert api.closed


async def test_an_address_that_is_not_loopback_is_warned_of(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    everywhere = Address("0.0.0.0", 0)  # noqa: S104 (what the warning is about)
    _, [url], out, err = await serving(monkeypatch, capsys, address=everywhere)
    # The page is printed under the machine's name, and opened here on loopback.
    port, token = urlsplit(url).port, url.partition("?token=")[2]
    assert url == f"http://127.0.0.1:{port}/?token={token}"
    assert out == (
        f"Dashboard: http://{socket.gethostname()}:{port}/?token={token}\n"
        f"On this machine: {url}\n"
        "Press Ctrl-C to stop.\n"
    )
    assert err == (
        "warning: listening on 0.0.0.0, not loopback: anyone who can reach it and learns the "
        "URL acts with your credentials\n"
    )


async def test_an_address_in_use_ends_the_command_with_1_and_says_so(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    api = ClosingApi()
    shop(api)

    async def connect(kubeconfig: str | None) -> ClosingApi:
        return api

    monkeypatch.setattr(dashboard_command, "connect", connect)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        code = await dashboard_command.serve(
            namespace="default",
            kubeconfig=None,
            address=Address("127.0.0.1", port),
            browser=False,
        )
    captured = capsys.readouterr()
    assert (code, captured.out) == (1, "")
    assert captured.err.startswith(f"error: cannot listen on 127.0.0.1:{port}: ")
    assert api.closed


def test_the_machines_names_are_its_host_names_and_the_addresses_they_resolve_to() -> None:
    machine = machine_names()
    names = {socket.gethostname(), socket.getfqdn()}
    resolved = {
        str(info[4][0])
        for name in names
        for info in socket.getaddrinfo(name, None, proto=socket.IPPROTO_TCP)
        if info[0] in (socket.AF_INET, socket.AF_INET6)
    }
    assert (machine.names, machine.addresses) == (frozenset(names), frozenset(resolved))
    assert resolved  # this machine's name resolves: the test holds something


async def test_on_a_wildcard_the_machines_name_is_served_and_another_refused(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    answers: dict[str, tuple[int, str]] = {}

    async def ask(url: str) -> None:
        # The URL opened on this machine: loopback, with the port and the token.
        local, port = url, urlsplit(url).port
        hosts = [f"{socket.gethostname()}:{port}", f"evil.example:{port}"]
        async with aiohttp.ClientSession() as session:
            for host in hosts:
                async with session.get(local, headers={"Host": host}) as response:
                    answers[host.partition(":")[0]] = (response.status, response.content_type)

    everywhere = Address("0.0.0.0", 0)  # noqa: S104 (the wildcard tested)
    await serving(monkeypatch, capsys, address=everywhere, meanwhile=ask)
    assert answers == {
        socket.gethostname(): (200, "text/html"),
        "evil.example": (403, "application/json"),
    }
