"""Flag values parsed once, where the command line is read: a bad one stops the command before
anything starts, with a usage error naming the flag, the value and the form expected."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import click

from edgerollout.settings import Address

if TYPE_CHECKING:
    _AddressParam = click.ParamType[Address]
else:  # click takes type arguments at run time only from 8.4 on; the project allows 8.2
    _AddressParam = click.ParamType


class AddressType(_AddressParam):
    """`HOST:PORT` (an IPv6 host in brackets) as an `Address`."""

    name = "host:port"

    def convert(
        self, value: object, param: click.Parameter | None, ctx: click.Context | None
    ) -> Address:
        if isinstance(value, Address):
            return value  # a default, already parsed
        try:
            return Address.parse(str(value))
        except ValueError as error:
            self.fail(str(error), param, ctx)


ADDRESS = AddressType()


Command = TypeVar("Command", bound=Callable[..., Any])
# The namespace the commands that read one or all of them read when told neither, as kubectl's.
DEFAULT_NAMESPACE = "default"


def kubeconfig_option(default: str | None = None) -> Callable[[Command], Command]:
    """`--kubeconfig FILE`, a file that exists; without it, in-cluster credentials, then
    ~/.kube/config."""
    return click.option(
        "--kubeconfig",
        type=click.Path(exists=True, dir_okay=False),
        default=default,
        help="Kubeconfig to use (default: in-cluster, then ~/.kube/config).",
    )


def namespaces_options(verb: str) -> Callable[[Command], Command]:
    """`-n/--namespace NAME` and `-A/--all-namespaces`, as kubectl's: the namespace a command
    `verb`s the DaemonSets of, or all of them."""
    namespace = click.option(
        "-n",
        "--namespace",
        default=None,
        help=f'The namespace to {verb} (default "{DEFAULT_NAMESPACE}").',
    )
    every = click.option(
        "-A",
        "--all-namespaces",
        is_flag=True,
        help=f"{verb.capitalize()} the DaemonSets of every namespace.",
    )

    def decorate(command: Command) -> Command:
        # click lists parameters in the order their decorators are written, top first.
        return namespace(every(command))

    return decorate
