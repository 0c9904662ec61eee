"""Flag values parsed once, where the command line is read: a bad one stops the command before
anything starts, with a usage error naming the flag, the value and the form expected."""

from __future__ import annotations

from typing import TYPE_CHECKING

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
