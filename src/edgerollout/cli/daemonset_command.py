"""What every command about one DaemonSet shares: how it is named, reached, and how it fails.

`status`, `pause` and `resume` take the same `DAEMONSET -n NAMESPACE --kubeconfig PATH` and fail the
same way, so a script tells the failures apart by exit code whichever command it ran:

- 3: the DaemonSet does not exist in the namespace
  (`error: daemonset "NAME" not found in namespace "NS"`);
- 4: the API server cannot be reached or refuses the request, or no kubeconfig is usable
  (`error: ` and which of these, with what the server or the kubeconfig loader said);
- 130: interrupted (Ctrl-C).

Exit 2 (usage) is click's. Each command keeps 0 and 1 for its own outcome.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any, NoReturn

import click
from kubernetes_asyncio.config.config_exception import ConfigException

from edgerollout.cli.param_types import Command, kubeconfig_option
from edgerollout.kube.api import DAEMONSETS, JSON, Api, ApiError, KubeApi

EXIT_NOT_FOUND = 3
EXIT_API = 4
EXIT_INTERRUPTED = 130


class DaemonSetNotFound(Exception):
    """The DaemonSet does not exist in the namespace."""


class UnusableKubeconfig(Exception):
    """No credentials could be loaded (no kubeconfig, or one that cannot be read)."""


def daemonset_target(command: Command) -> Command:
    """The argument and options naming the DaemonSet a command is about, in this order:
    DAEMONSET, `-n/--namespace` (default "default", as kubectl's), `--kubeconfig`."""
    decorators = [
        click.argument("daemonset"),
        click.option("-n", "--namespace", default="default", show_default=True),
        kubeconfig_option(),
    ]
    # click lists parameters in the order their decorators are written, top first.
    for decorator in reversed(decorators):
        command = decorator(command)
    return command


async def connect(kubeconfig: str | None) -> KubeApi:
    """The API client for `kubeconfig` (else in-cluster, else ~/.kube/config)."""
    source = kubeconfig or "the in-cluster service account or ~/.kube/config"
    try:
        if kubeconfig and not (await asyncio.to_thread(Path(kubeconfig).read_bytes)).strip():
            raise UnusableKubeconfig(f"{source}: the file is empty, not a kubeconfig")
        return await KubeApi.connect(kubeconfig)
    except (TypeError, AttributeError) as error:
        # What kubernetes_asyncio's parser hits in a YAML file that is not a mapping of a
        # kubeconfig's keys (a list, a string): its own words mean nothing to a user.
        raise UnusableKubeconfig(
            f"{source}: not a kubeconfig (a YAML mapping with clusters, users and contexts): "
            f"{type(error).__name__}: {error}"
        ) from None
    except (ConfigException, OSError, ValueError, KeyError) as error:
        # kubernetes_asyncio reports a bad kubeconfig with whichever of these its parser hit.
        detail = str(error) or type(error).__name__
        raise UnusableKubeconfig(f"{source}: {detail}") from None


async def read_daemonset(api: Api, *, name: str, namespace: str) -> JSON:
    """The DaemonSet as the API server holds it now."""
    try:
        return await api.get(DAEMONSETS, name, namespace=namespace)
    except ApiError as error:
        if error.not_found:
            raise DaemonSetNotFound from None
        raise


def run_daemonset_command(
    work: Callable[[], Coroutine[Any, Any, int]], *, daemonset: str, namespace: str
) -> NoReturn:
    """Run `work` to its exit code, turning the failures of the module docstring into their
    message and exit code."""

    async def reporting_not_found() -> int:
        try:
            return await work()
        except DaemonSetNotFound:
            message = f'error: daemonset "{daemonset}" not found in namespace "{namespace}"'
            click.echo(message, err=True)
            return EXIT_NOT_FOUND

    run_command(reporting_not_found, api_exit=EXIT_API)


def run_command(work: Callable[[], Coroutine[Any, Any, int]], *, api_exit: int) -> NoReturn:
    """Run `work` to its exit code: interrupted, 130; the API server unreachable or refusing,
    or no usable kubeconfig, one line on stderr and `api_exit`."""
    try:
        code = asyncio.run(work())
    except KeyboardInterrupt:
        code = EXIT_INTERRUPTED
    except ApiError as error:
        click.echo(f"error: {describe_api_error(error)}", err=True)
        code = api_exit
    except UnusableKubeconfig as error:
        click.echo(f"error: cannot load the Kubernetes configuration: {error}", err=True)
        code = api_exit
    raise SystemExit(code)


def describe_api_error(error: ApiError) -> str:
    if error.status == 0:
        return f"cannot reach the API server: {error.message}"
    return f"the API server answered {error.status} {error.reason}: {error.message}"
