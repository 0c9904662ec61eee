"""`edgerollout dashboard`: a live map of every rollout, served to the operator's browser (also
`kubectl edgerollout dashboard`).

The operator runs it with their own kubeconfig: nothing is installed in the cluster, and the page
can see and do exactly what `list`, `status`, `plan`, `pause` and `resume` can with the same
credentials. It listens on loopback, on a port the kernel picks (`--address` says otherwise, with
a warning when not loopback; on a wildcard the machine's names and addresses are its own,
`machine_names`), prints its URL, which carries the session's token
(`dashboard.guard`), and opens it in the browser unless `--no-browser`. It runs until
interrupted; a failure of the API server is shown on the page, never the end of the command.

Exit codes: 0 never (it runs until stopped); 1 no kubeconfig is usable, or the address cannot
be listened on; 2 usage error; 130 interrupted (Ctrl-C), the way out.
"""

from __future__ import annotations

import asyncio
import dataclasses
import ipaddress
import secrets
import socket
import webbrowser

import click
from aiohttp import web

from edgerollout.cli.daemonset_command import connect, run_command
from edgerollout.cli.dashboard.fleet import Fleet
from edgerollout.cli.dashboard.guard import IPV4_WILDCARD, IPV6_WILDCARD, Gate, MachineNames
from edgerollout.cli.dashboard.server import Dashboard
from edgerollout.cli.param_types import (
    ADDRESS,
    DEFAULT_NAMESPACE,
    kubeconfig_option,
    namespaces_options,
)
from edgerollout.settings import DASHBOARD, Address

EXIT_ERROR = 1


def is_loopback(host: str) -> bool:
    """Whether `host` (a name or an address) is this machine's loopback only."""
    if host.lower().rstrip(".") == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def machine_names() -> MachineNames:
    """This machine's host name, fully qualified name and the IP addresses they resolve to: what
    a browser may call a dashboard listening on a wildcard (another address of the machine is
    served by listening on it: `--address ADDRESS:PORT`). From the standard library alone: the
    product ships no interface-listing package."""
    names = {socket.gethostname(), socket.getfqdn()}
    addresses: set[str] = set()
    for name in names:
        try:
            found = socket.getaddrinfo(name, None, proto=socket.IPPROTO_TCP)
        except OSError:
            continue  # a name this machine cannot resolve: its addresses are not known
        addresses |= {str(info[4][0]) for info in found if info[0] in _FAMILIES}
    return MachineNames(names=frozenset(names), addresses=frozenset(addresses))


_FAMILIES = (socket.AF_INET, socket.AF_INET6)


def dashboard_url(*, host: str, port: int, token: str) -> str:
    """The URL the operator opens: the page, with the session's token."""
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}/?token={token}"


# On a wildcard, the browser of this machine opens the page on loopback of the same family.
_LOOPBACK_OF = {IPV4_WILDCARD: "127.0.0.1", IPV6_WILDCARD: "::1"}


def dashboard_urls(*, host: str, port: int, token: str, machine: str) -> tuple[str, str]:
    """The URL printed for the operator and the one this machine's browser opens. Listening on
    a wildcard, the printed one names the machine (`machine`, its host name: a browser elsewhere
    cannot open 0.0.0.0 or ::, and the page answers to that name) and the opened one loopback;
    otherwise both are the listen address's."""
    loopback = _LOOPBACK_OF.get(host)
    if loopback is None:
        url = dashboard_url(host=host, port=port, token=token)
        return url, url
    shown = dashboard_url(host=machine or host, port=port, token=token)
    return shown, dashboard_url(host=loopback, port=port, token=token)


async def serve(
    *, namespace: str | None, kubeconfig: str | None, address: Address, browser: bool
) -> int:
    """Serve the dashboard until cancelled; 1 when the address cannot be listened on."""
    api = await connect(kubeconfig)
    fleet = Fleet(api, namespace=namespace)
    wildcard = address.host in (IPV4_WILDCARD, IPV6_WILDCARD)
    gate = Gate.for_address(
        token=secrets.token_urlsafe(32),
        host=address.host,
        machine=machine_names() if wildcard else None,
    )
    dashboard = Dashboard(fleet, gate=gate)
    runner = web.AppRunner(dashboard.app(), access_log=None)
    await runner.setup()
    watching = asyncio.create_task(fleet.run())
    try:
        site = web.TCPSite(runner, address.host, address.port)
        try:
            await site.start()
        except OSError as error:
            click.echo(f"error: cannot listen on {address}: {error}", err=True)
            return EXIT_ERROR
        port = runner.addresses[0][1]
        dashboard.gate = dataclasses.replace(gate, port=port)  # nothing was served before
        url, local_url = dashboard_urls(
            host=address.host, port=port, token=gate.token, machine=socket.gethostname()
        )
        if not is_loopback(address.host):
            click.echo(
                f"warning: listening on {address.host}, not loopback: anyone who can reach it "
                "and learns the URL acts with your credentials",
                err=True,
            )
        click.echo(f"Dashboard: {url}")
        if local_url != url:
            click.echo(f"On this machine: {local_url}")
        click.echo("Press Ctrl-C to stop.")
        if browser:
            await asyncio.to_thread(webbrowser.open, local_url)
        await watching
        return 0
    finally:
        watching.cancel()
        await runner.cleanup()
        await api.close()


@click.command(name="dashboard")
@namespaces_options("show")
@click.option(
    "--address",
    type=ADDRESS,
    default=DASHBOARD.address,
    show_default=True,
    help="HOST:PORT to listen on (port 0: any free port). Not loopback: a warning, since the "
    "page acts with your credentials.",
)
@click.option("--no-browser", is_flag=True, help="Print the URL only; do not open a browser.")
@kubeconfig_option()
def dashboard(
    namespace: str | None,
    all_namespaces: bool,
    address: Address,
    no_browser: bool,
    kubeconfig: str | None,
) -> None:
    """Serve a live map of the opted-in DaemonSets' rollouts, node by node and pool by pool,
    to your browser, with your own credentials.

    Runs until interrupted (exit 130); exits 1 when no kubeconfig is usable or the address
    cannot be listened on, 2 on a usage error.
    """
    if all_namespaces and namespace is not None:
        raise click.UsageError("-n/--namespace and -A/--all-namespaces cannot be used together")
    scope = None if all_namespaces else namespace or DEFAULT_NAMESPACE
    run_command(
        lambda: serve(
            namespace=scope, kubeconfig=kubeconfig, address=address, browser=not no_browser
        ),
        api_exit=EXIT_ERROR,
    )
