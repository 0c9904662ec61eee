"""`edgerollout agent`: the node-local OTA API."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import click
import uvloop

from edgerollout.agent.runner import run_agent
from edgerollout.cli import logging_setup
from edgerollout.cli.param_types import ADDRESS, kubeconfig_option
from edgerollout.settings import (
    AGENT,
    AGENT_AUTH_MODES,
    LOG_FORMATS,
    LOG_LEVELS,
    Address,
    AgentAuth,
    LogFormat,
    LogLevel,
)


@click.command()
@click.option("--node-name", required=True, help="The node this agent serves.")
@kubeconfig_option(AGENT.kubeconfig)
@click.option(
    "--listen", type=ADDRESS, default=AGENT.listen, show_default=True, help="Address to serve on."
)
@click.option(
    "--auth",
    type=click.Choice(AGENT_AUTH_MODES),
    default=AGENT.auth,
    show_default=True,
    help="token: every route but the health probes needs the token of --token-file; "
    "none: OpenYurt's unauthenticated API, for a drop-in migration only.",
)
@click.option(
    "--token-file",
    type=click.Path(dir_okay=False, path_type=Path),
    default=AGENT.token_file,
    show_default=True,
    help="The bearer token callers must present (with --auth=token); the agent does not start "
    "without it.",
)
@click.option(
    "--scoping-check-interval",
    type=click.FloatRange(min=0.1),
    default=AGENT.scoping_check_interval,
    show_default=True,
    help="Seconds between checks that the API server confines the agent to its node.",
)
@click.option(
    "--cache-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=AGENT.cache_dir,
    help="Keep the node's pods here, to answer GET /pods across restarts while disconnected.",
)
@click.option(
    "--log-format", type=click.Choice(LOG_FORMATS), default=AGENT.log_format, show_default=True
)
@click.option(
    "--log-level", type=click.Choice(LOG_LEVELS), default=AGENT.log_level, show_default=True
)
def agent(
    node_name: str,
    kubeconfig: str | None,
    listen: Address,
    auth: AgentAuth,
    token_file: Path,
    scoping_check_interval: float,
    cache_dir: Path | None,
    log_format: LogFormat,
    log_level: LogLevel,
) -> None:
    """Serve the OTA API for one node: list its pods, pre-pull images, upgrade a pod."""
    settings = dataclasses.replace(
        AGENT,
        node_name=node_name,
        kubeconfig=kubeconfig,
        listen=listen,
        auth=auth,
        token_file=token_file,
        scoping_check_interval=scoping_check_interval,
        cache_dir=cache_dir,
        log_format=log_format,
        log_level=log_level,
    )
    logging_setup.configure(settings.log_format, level=settings.log_level)
    try:
        uvloop.run(run_agent(settings))
    except ValueError as error:
        raise click.ClickException(str(error)) from error
