"""`edgerollout demo`: the seed scenarios, played on the local lab."""

from __future__ import annotations

import click


@click.command()
def demo() -> None:
    """Play the edge upgrade scenarios on a local lab, narrating each step."""
    raise click.ClickException("the demo is not available yet")
