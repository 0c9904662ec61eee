"""The dashboard serves its own page only: `Host` names its address, reads carry the session's
token, writes carry it in a header from the page's own origin (`dashboard.guard`)."""

from __future__ import annotations

import pytest

from edgerollout.cli.dashboard.guard import Gate, MachineNames, Refusal, refusal

GATE = Gate.for_address(token="s3cret", host="127.0.0.1")
OWN = {"Host": "127.0.0.1:8080"}
PAGE_POST = {**OWN, "Origin": "http://127.0.0.1:8080", "X-Edgerollout-Token": "s3cret"}


def refused(
    method: str, path: str, headers: dict[str, str], query: dict[str, str] | None = None
) -> Refusal | None:
    return refusal(GATE, method=method, path=path, headers=headers, query=query or {})


def test_a_read_with_the_token_is_served() -> None:
    assert refused("GET", "/api/home/stream", OWN, {"token": "s3cret"}) is None


@pytest.mark.parametrize("query", [{}, {"token": "wrong"}, {"token": ""}])
def test_a_read_without_the_token_is_refused_401(query: dict[str, str]) -> None:
    assert refused("GET", "/", OWN, query) == Refusal(
        code=401,
        message="this dashboard's token is missing or wrong: open the URL the "
        "`edgerollout dashboard` command printed",
    )


def test_the_static_assets_and_the_icon_need_no_token() -> None:
    assert refused("GET", "/static/dashboard.js", OWN) is None
    assert refused("GET", "/favicon.ico", OWN) is None


@pytest.mark.parametrize("host", ["localhost:1234", "[::1]:80", "LocalHost.", "127.0.0.1"])
def test_loopback_names_are_this_dashboards_hosts(host: str) -> None:
    assert refused("GET", "/", {"Host": host}, {"token": "s3cret"}) is None


def test_a_rebound_dns_name_is_refused_even_with_the_token() -> None:
    assert refused("GET", "/", {"Host": "evil.example:8080"}, {"token": "s3cret"}) == Refusal(
        code=403, message="the Host header names 'evil.example:8080', not this dashboard's address"
    )


def test_a_request_without_host_is_refused() -> None:
    assert refused("GET", "/", {}, {"token": "s3cret"}) == Refusal(
        code=403, message="a request without a Host header is not served"
    )


def test_the_listen_address_is_a_host_too() -> None:
    gate = Gate.for_address(token="t", host="10.0.0.5")
    served = refusal(
        gate, method="GET", path="/", headers={"Host": "10.0.0.5:9"}, query={"token": "t"}
    )
    assert served is None


def test_a_change_from_the_page_is_served() -> None:
    assert refused("POST", "/api/rollouts/default/web/pause", PAGE_POST) is None
    same_origin = {**PAGE_POST, "Sec-Fetch-Site": "same-origin"}
    assert refused("POST", "/api/rollouts/default/web/pause", same_origin) is None


@pytest.mark.parametrize(
    ("headers", "message"),
    [
        (
            {**PAGE_POST, "Origin": "http://evil.example"},
            "a change from another site (http://evil.example) is refused",
        ),
        (
            {**PAGE_POST, "Origin": "http://127.0.0.1:9999"},
            "a change from another site (http://127.0.0.1:9999) is refused",
        ),
        (
            {key: value for key, value in PAGE_POST.items() if key != "Origin"},
            "a change without an Origin header is not served",
        ),
        (
            {**PAGE_POST, "Sec-Fetch-Site": "cross-site"},
            "a change from another site (Sec-Fetch-Site: cross-site)",
        ),
        (
            {**PAGE_POST, "X-Edgerollout-Token": "guess"},
            "a change without this session's X-Edgerollout-Token",
        ),
        (
            {key: value for key, value in PAGE_POST.items() if key != "X-Edgerollout-Token"},
            "a change without this session's X-Edgerollout-Token",
        ),
    ],
)
def test_a_change_from_elsewhere_is_refused_403(headers: dict[str, str], message: str) -> None:
    assert refused("POST", "/api/rollouts/default/web/pause", headers) == Refusal(
        code=403, message=message
    )


def test_a_token_in_the_query_does_not_authorise_a_change() -> None:
    headers = {key: value for key, value in PAGE_POST.items() if key != "X-Edgerollout-Token"}
    assert refused("POST", "/api/rollouts/default/web/pause", headers, {"token": "s3cret"}) == (
        Refusal(code=403, message="a change without this session's X-Edgerollout-Token")
    )


def test_a_token_header_that_is_not_utf8_is_simply_wrong() -> None:
    headers = {**PAGE_POST, "X-Edgerollout-Token": "s3cr\udcff"}
    assert refused("POST", "/api/rollouts/default/web/pause", headers) == Refusal(
        code=403, message="a change without this session's X-Edgerollout-Token"
    )


MACHINE = MachineNames(
    names=frozenset({"shop-laptop", "Shop-Laptop.corp.example"}),
    addresses=frozenset({"127.0.0.1", "192.168.1.20", "::1", "fe80::1%wlan0", "2001:DB8::20"}),
)


def on_wildcard(wildcard: str, host: str) -> Refusal | None:
    gate = Gate.for_address(token="t", host=wildcard, port=8080, machine=MACHINE)
    return refusal(gate, method="GET", path="/", headers={"Host": host}, query={"token": "t"})


@pytest.mark.parametrize(
    "host",
    [
        "shop-laptop:8080",
        "SHOP-LAPTOP.corp.example.:8080",
        "192.168.1.20:8080",
        "127.0.0.1:8080",
        "localhost:8080",
        "0.0.0.0:8080",
    ],
)
def test_on_the_ipv4_wildcard_the_machines_names_and_v4_addresses_are_its_hosts(
    host: str,
) -> None:
    assert on_wildcard("0.0.0.0", host) is None  # noqa: S104


@pytest.mark.parametrize(
    "host",
    [
        "[fe80::1]:8080",
        "[2001:db8::20]:8080",
        "[2001:0db8:0:0:0:0:0:20]:8080",
        "[::1]:8080",
        "shop-laptop:8080",
    ],
)
def test_on_the_ipv6_wildcard_the_machines_names_and_v6_addresses_are_its_hosts(
    host: str,
) -> None:
    assert on_wildcard("::", host) is None


@pytest.mark.parametrize(
    ("wildcard", "host"),
    [
        ("0.0.0.0", "evil.example:8080"),  # noqa: S104 (a rebound DNS name)
        ("0.0.0.0", "shop-laptop.evil.example:8080"),  # noqa: S104
        ("0.0.0.0", "192.168.1.21:8080"),  # noqa: S104 (another machine's address)
        ("0.0.0.0", "[2001:db8::20]:8080"),  # noqa: S104 (IPv6: not listened on)
        ("::", "192.168.1.20:8080"),  # IPv4: not listened on
        ("0.0.0.0", "192.168.1.20:9090"),  # noqa: S104 (another port of this machine)
        ("0.0.0.0", "192.168.1.20"),  # noqa: S104 (port 80)
        ("0.0.0.0", "shop-laptop:80a"),  # noqa: S104 (not a port)
        ("0.0.0.0", "shop-laptop:"),  # noqa: S104
        ("0.0.0.0", "127.0.0.1%evil.example:8080"),  # noqa: S104 (not an address)
        ("::", "[fe80::1%25wlan0]:8080"),  # a zone is no part of a browser's Host
    ],
)
def test_on_a_wildcard_any_other_host_or_port_is_refused(wildcard: str, host: str) -> None:
    assert on_wildcard(wildcard, host) == Refusal(
        code=403, message=f"the Host header names {host!r}, not this dashboard's address"
    )


def test_without_a_wildcard_the_machines_names_are_not_its_hosts() -> None:
    gate = Gate.for_address(token="t", host="127.0.0.1", port=8080, machine=MACHINE)
    headers = {"Host": "shop-laptop:8080"}
    assert refusal(gate, method="GET", path="/", headers=headers, query={"token": "t"}) == Refusal(
        code=403, message="the Host header names 'shop-laptop:8080', not this dashboard's address"
    )


def test_once_the_port_is_known_loopback_on_another_port_is_refused() -> None:
    gate = Gate.for_address(token="t", host="127.0.0.1", port=8080)
    assert gate.admits("127.0.0.1:8080")
    assert gate.admits("[::1]:8080")
    assert not gate.admits("127.0.0.1:8081")
    assert not gate.admits("localhost")
