"""`./dev demo` (`python -m edgerollout_lab demo`): the scenarios users run (design §11.5), played on the lab."""

from __future__ import annotations

from pathlib import Path

import click

from edgerollout_lab.build import BuildError
from edgerollout_lab.cluster import LabError
from edgerollout_lab.demo import run_demo
from edgerollout_lab.processes import ComponentError


@click.command()
@click.option(
    "--dir",
    "folder",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Keep the lab's files (logs, kubeconfigs) in this folder (default: a temporary one).",
)
def demo(folder: Path | None) -> None:
    """Play the edge upgrade scenarios on a local lab, narrating each step."""
    try:
        run_demo(folder, click.echo)
    except (BuildError, ComponentError, LabError, TimeoutError) as error:
        raise click.ClickException(str(error)) from error
