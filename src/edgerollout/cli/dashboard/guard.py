"""Who the dashboard serves: the operator's own browser tab, and no other page or program.

The server acts with the operator's credentials, so a request it serves is a request the
operator made. Three checks, each failing closed (a missing header is a refusal):

- `Host` must name loopback or the address it listens on, on every route: a page of another
  site that rebinds its DNS name to 127.0.0.1 keeps its own name in `Host` (as the agent checks,
  `agent.server.host_name`).
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
from collections.abc import Mapping
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


@dataclass(frozen=True, slots=True, kw_only=True)
class Gate:
    """The session's token and the host names `Host` may carry (loopback's, and the listen
    address's host)."""

    token: str
    hosts: frozenset[str]

    @classmethod
    def for_address(cls, *, token: str, host: str) -> Gate:
        return cls(token=token, hosts=LOOPBACK_HOSTS | {host_name(host)})


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
    if host_name(host) not in gate.hosts:
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


def _is_token(gate: Gate, given: str | None) -> bool:
    if given is None:
        return False
    # Compared as bytes in constant time; a header that is not UTF-8 is simply not the token.
    return hmac.compare_digest(given.encode("utf-8", "surrogateescape"), gate.token.encode("utf-8"))
