"""`Address`: `HOST:PORT` parsed once, with an error that names the value and the form expected."""

from __future__ import annotations

import re

import pytest

from edgerollout.settings import Address

FORM = "expected HOST:PORT, such as 127.0.0.1:8080 or [::1]:8080"


@pytest.mark.parametrize(
    ("text", "address"),
    [
        ("127.0.0.1:8080", Address("127.0.0.1", 8080)),
        ("0.0.0.0:10267", Address("0.0.0.0", 10267)),  # noqa: S104 - a value to parse
        ("localhost:1", Address("localhost", 1)),
        ("edge-7.example.com.:65535", Address("edge-7.example.com.", 65535)),
        ("[::1]:8080", Address("::1", 8080)),
        ("[fe80::1%eth0]:80", Address("fe80::1%eth0", 80)),
        # Port 0: any free port, for a server whose port its caller reads back (a test's).
        ("127.0.0.1:0", Address("127.0.0.1", 0)),
    ],
)
def test_a_host_and_port_parse_into_an_address(text: str, address: Address) -> None:
    assert Address.parse(text) == address


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("", "empty"),
        ("localhost", "no port"),
        ("10.0.0.7", "no port"),
        ("host:", "no port"),
        ("[::1]", "no port"),
        ("[::1]:", "no port"),
        (":80", "no host (0.0.0.0:80 serves on every interface)"),
        ("[]:80", "no host (0.0.0.0:80 serves on every interface)"),
        ("host:99999", "the port 99999 is above 65535"),
        ("host:65536", "the port 65536 is above 65535"),
        ("host:abc", "the port 'abc' is not a number"),
        ("host:-1", "the port '-1' is not a number"),
        ("host:+80", "the port '+80' is not a number"),
        ("host: 80", "the port ' 80' is not a number"),
        ("host:\u0663", "the port '\u0663' is not a number"),
        ("::1:8080", "an IPv6 host goes in brackets ([::1]:8080)"),
        ("[::1:8080", "the IPv6 host's bracket is not closed"),
        ("[::1]8080", "'8080' after the host is not :PORT"),
        ("[edge-7]:80", "'edge-7' is not an IPv6 address"),
        ("[10.0.0.7]:80", "'10.0.0.7' is not an IPv6 address"),
        ("edge 7:80", "'edge 7' is not a host name or an IP address"),
        ("edge_7:80", "'edge_7' is not a host name or an IP address"),
        ("-edge:80", "'-edge' is not a host name or an IP address"),
        ("http://edge:80", "'http://edge' is not a host name or an IP address"),
        ("fe80::zz:80", "'fe80::zz' is not a host name or an IP address"),
    ],
)
def test_anything_else_is_refused_saying_what_is_wrong_and_the_form_expected(
    text: str, why: str
) -> None:
    with pytest.raises(ValueError, match=f"^{re.escape(f'{text!r}: {why}; {FORM}')}$"):
        Address.parse(text)


@pytest.mark.parametrize(
    ("address", "text"),
    [
        (Address("127.0.0.1", 8080), "127.0.0.1:8080"),
        (Address("localhost", 10267), "localhost:10267"),
        (Address("::1", 8080), "[::1]:8080"),
    ],
)
def test_an_address_is_written_as_it_is_parsed(address: Address, text: str) -> None:
    assert str(address) == text
    assert Address.parse(text) == address
