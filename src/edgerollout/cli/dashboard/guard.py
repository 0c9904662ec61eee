"""Who the dashboard serves: the operator's own browser tab, and no other page or program.

The server acts with the operator's credentials, so a request it serves is a request the
operator made. Three checks, each failing closed (a missing header is a refusal):

- `Host` must name loopback or the address it listens on, with the port it listens on, on every
  route: a page of another site that rebinds its DNS name to 127.0.0.1 keeps its own name in
  `Host` (as the agent checks, `agent.server.host_name`). Listening on a wildcard (`0.0.0.0`,
  `::`), the machine's own names (its host name and fully qualified name) and the addresses of
  its interfaces of that family are its address too (`MachineNames`); any other name is not.
- The session token, made when the command starts and printed in its URL, must come with every
  request but the static assets and the icon (which hold no data): in the `token` query parameter for reads
  (an `EventSource` cannot send headers), in the `X-Edgerollout-Token` header for writes (a form
  of another site cannot send headers, and never learns the token: the same-origin policy keeps
  the page's content from it). Another user of the same machine, who can reach loopback, does not
  have it either.
- A write (POST) must carry `Origin`, and it must be this server's own (`http://` + `Host`); a
  `Sec-Fetch-Site` other than `same-origin` is refused too. Browsers send both on every POST.

Pure: a request's method, path, headers and query in, a `Refusal` or None out.
"""

from __future__ import annotations

import hmac
import ipaddress
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from edgerollout.agent.server import LOOPBACK_HOSTS, host_name

TOKEN_HEADER = "X-Edgerollout-Token"  # noqa: S105 (a header name, not a secret)
TOKEN_PARAMETER = "token"  # noqa: S105 (a parameter name)
STATIC_PREFIX = "/static/"
# Where a browser looks for a page's icon when the page names none (a JSON answer, say).
FAVICON = "/favicon.ico"


@dataclass(frozen=True, slots=True, kw_only=True)
class Refusal:
    """An HTTP status and the message the page shows."""

    code: int
    message: str


# The hosts that listen on every address of their family.
IPV4_WILDCARD = "0.0.0.0"  # noqa: S104 (a name for the wildcard, not a bind)
IPV6_WILDCARD = "::"
HTTP_PORT = 80  # the port of a `Host` that names none


@dataclass(frozen=True, slots=True, kw_only=True)
class MachineNames:
    """What this machine is called: its names (`socket.gethostname`, `socket.getfqdn`) and the
    addresses of its interfaces, as the command finds them when it listens on a wildcard."""

    names: frozenset[str] = frozenset()
    addresses: frozenset[str] = frozenset()

    def hosts_for(self, wildcard: str) -> frozenset[str]:
        """The hosts a `Host` may name when listening on `wildcard`: the names, and the
        addresses of the wildcard's family (normalised, without an IPv6 zone)."""
        version = 6 if wildcard == IPV6_WILDCARD else 4
        addresses = {
            address for address in _ip_literals(self.addresses) if _version(address) == version
        }
        return frozenset({_normal(name) for name in self.names if name} | addresses)


@dataclass(frozen=True, slots=True, kw_only=True)
class Gate:
    """The session's token, the host names `Host` may carry (loopback's, the listen address's
    host, and on a wildcard the machine's), and the port it must carry (None: not known yet,
    any)."""

    token: str
    hosts: frozenset[str]
    port: int | None = None

    @classmethod
    def for_address(
        cls,
        *,
        token: str,
        host: str,
        port: int | None = None,
        machine: MachineNames | None = None,
    ) -> Gate:
        hosts = LOOPBACK_HOSTS | {_normal(host)}
        if machine is not None and host in (IPV4_WILDCARD, IPV6_WILDCARD):
            hosts |= machine.hosts_for(host)
        return cls(token=token, hosts=hosts, port=port)

    def admits(self, header: str) -> bool:
        """Whether a `Host` header names this dashboard: one of its hosts, on its port."""
        if _normal(host_name(header)) not in self.hosts:
            return False
        return self.port is None or _host_port(header) == self.port


def refusal(
    gate: Gate,
    *,
    method: str,
    path: str,
    headers: Mapping[str, str],
    query: Mapping[str, str],
) -> Refusal | None:
    """Why this request is refused (the module docstring), or None when it is served."""
    host = headers.get("Host")
    if host is None:
        return Refusal(code=403, message="a request without a Host header is not served")
    if not gate.admits(host):
        return Refusal(
            code=403, message=f"the Host header names {host!r}, not this dashboard's address"
        )
    if method not in ("GET", "HEAD"):
        return _write_refusal(gate, host=host, headers=headers)
    if path.startswith(STATIC_PREFIX) or path == FAVICON:
        return None
    if not _is_token(gate, query.get(TOKEN_PARAMETER)):
        return Refusal(
            code=401,
            message="this dashboard's token is missing or wrong: open the URL the "
            "`edgerollout dashboard` command printed",
        )
    return None


def _write_refusal(gate: Gate, *, host: str, headers: Mapping[str, str]) -> Refusal | None:
    origin = headers.get("Origin")
    if origin is None:
        return Refusal(code=403, message="a change without an Origin header is not served")
    if origin != f"http://{host}":
        return Refusal(code=403, message=f"a change from another site ({origin}) is refused")
    site = headers.get("Sec-Fetch-Site")
    if site is not None and site != "same-origin":
        return Refusal(code=403, message=f"a change from another site (Sec-Fetch-Site: {site})")
    if not _is_token(gate, headers.get(TOKEN_HEADER)):
        return Refusal(code=403, message=f"a change without this session's {TOKEN_HEADER}")
    return None


def _host_port(header: str) -> int | None:
    """The port a `Host` header names (80 when none); None when it is not a port."""
    if header.startswith("["):
        rest = header[header.find("]") + 1 :]
    elif header.count(":") == 1:
        rest = header[header.find(":") :]
    else:
        rest = ""
    if not rest:
        return HTTP_PORT
    digits = rest.removeprefix(":")
    if not rest.startswith(":") or not (digits.isascii() and digits.isdigit()) or len(digits) > 5:
        return None
    return int(digits)


def _normal(host: str) -> str:
    """A host as compared: lower case without a trailing dot, an IP address in its short form
    (`0:0:0:0:0:0:0:1` is `::1`)."""
    host = host.lower().rstrip(".")
    try:
        return str(ipaddress.ip_address(host))
    except ValueError:
        return host


def _ip_literals(addresses: Iterable[str]) -> set[str]:
    """The IP addresses among an interface's `addresses`, normalised, an IPv6 address without
    its zone (`fe80::1%wlan0`: a browser's `Host` never carries one)."""
    normal = {_normal(address.partition("%")[0]) for address in addresses}
    return {address for address in normal if _version(address) != 0}


def _version(host: str) -> int:
    """4 or 6 for an IP address, 0 for a name."""
    try:
        return ipaddress.ip_address(host).version
    except ValueError:
        return 0


def _is_token(gate: Gate, given: str | None) -> bool:
    if given is None:
        return False
    # Compared as bytes in constant time; a header that is not UTF-8 is simply not the token.
    return hmac.compare_digest(given.encode("utf-8", "surrogateescape"), gate.token.encode("utf-8"))
