"""The `edgerollout` command (also installed as `kubectl-edgerollout`)."""

from __future__ import annotations

import click

from edgerollout.cli.agent_command import agent
from edgerollout.cli.agent_token_command import init_agent_token
from edgerollout.cli.controller_command import controller
from edgerollout.cli.dashboard_command import dashboard
from edgerollout.cli.list_command import list_command
from edgerollout.cli.pause_command import pause, resume
from edgerollout.cli.plan_command import plan_command
from edgerollout.cli.simulate_command import simulate_command
from edgerollout.cli.status_command import status


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="edgerollout")
def cli() -> None:
    """DaemonSet upgrades for Kubernetes clusters whose nodes live at the edge."""


cli.add_command(controller)
cli.add_command(agent)
cli.add_command(init_agent_token)
cli.add_command(status)
cli.add_command(list_command)
cli.add_command(plan_command)
cli.add_command(pause)
cli.add_command(resume)
cli.add_command(simulate_command)
cli.add_command(dashboard)


def main() -> None:
    cli(prog_name="edgerollout")
