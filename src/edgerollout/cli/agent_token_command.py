"""`edgerollout init-agent-token`: the agent's bearer token on the node, created if absent."""

from __future__ import annotations

from pathlib import Path

import click

from edgerollout.agent.token_file import ensure_token
from edgerollout.settings import AGENT


@click.command("init-agent-token")
@click.option(
    "--path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=AGENT.token_file,
    show_default=True,
    help="Where the agent reads its token (its --token-file).",
)
def init_agent_token(path: Path) -> None:
    """Write a random token for the agent (0600, directory 0700) unless one exists."""
    try:
        created = ensure_token(path)
    except OSError as error:
        raise click.ClickException(f"cannot create the token file {path}: {error}") from error
    click.echo(f"{'created' if created else 'kept the existing'} agent token {path}")
