"""The `controller` and `agent` commands take every default from `edgerollout.settings`, and each
builds its process's one settings object from its flags, every flag setting the field of its name."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner

from edgerollout.cli import agent_command, controller_command
from edgerollout.settings import (
    AGENT,
    CONTROLLER,
    Address,
    AgentSettings,
    ControllerSettings,
    PrepullSettings,
)


def _defaults(command: click.Command) -> dict[str, Any]:
    """Each optional flag's default (a required flag has none)."""
    return {param.name: param.default for param in command.params if not param.required}


def test_each_controller_flag_defaults_to_its_settings_field() -> None:
    assert _defaults(controller_command.controller) == {
        "kubeconfig": None,
        "namespace": None,
        "leader_elect": False,
        "leader_election_namespace": CONTROLLER.leader_election_namespace,
        "leader_election_name": CONTROLLER.leader_election_name,
        "lease_duration": CONTROLLER.lease_duration,
        "renew_deadline": CONTROLLER.renew_deadline,
        "retry_period": CONTROLLER.retry_period,
        "metrics_address": CONTROLLER.metrics_address,
        "health_address": CONTROLLER.health_address,
        "workers": CONTROLLER.workers,
        "identity": "",
        "prepull_toolbox_image": CONTROLLER.prepull.toolbox_image,
        "prepull_deadline": CONTROLLER.prepull.deadline_seconds,
        "rollback_namespaces": (),
        "log_format": CONTROLLER.log_format,
        "log_level": CONTROLLER.log_level,
    }


def test_each_agent_flag_defaults_to_its_settings_field() -> None:
    assert _defaults(agent_command.agent) == {
        "kubeconfig": None,
        "listen": AGENT.listen,
        "auth": AGENT.auth,
        "token_file": AGENT.token_file,
        "scoping_check_interval": AGENT.scoping_check_interval,
        "cache_dir": None,
        "log_format": AGENT.log_format,
        "log_level": AGENT.log_level,
    }


def _flag_names(command: click.Command) -> set[str]:
    return {param.name for param in command.params if param.name is not None}


def _field_names(settings: type[ControllerSettings | AgentSettings]) -> set[str]:
    return {field.name for field in dataclasses.fields(settings)}


def test_each_controller_flag_is_named_as_the_settings_field_it_sets() -> None:
    # But the two that set the fields of `prepull`, which the plan reads as one group.
    assert _flag_names(controller_command.controller) - _field_names(ControllerSettings) == {
        "prepull_toolbox_image",
        "prepull_deadline",
    }


def test_each_agent_flag_is_named_as_the_settings_field_it_sets() -> None:
    assert _flag_names(agent_command.agent) - _field_names(AgentSettings) == set()


@pytest.fixture
def ran(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """What each command would have run, and the log setup it asked for, in order."""
    calls: list[object] = []

    async def run(options: object) -> None:
        calls.append(options)

    monkeypatch.setattr(controller_command, "run_controller", run)
    monkeypatch.setattr(agent_command, "run_agent", run)

    def configure(log_format: str, *, level: str) -> None:
        calls.append((log_format, level))

    monkeypatch.setattr("edgerollout.cli.logging_setup.configure", configure)
    return calls


def _ran_with(ran: list[object], command: click.Command, flags: list[str]) -> list[object]:
    """What `command` ran, and the log setup it asked for, once it exited 0 with `flags`."""
    result = CliRunner().invoke(command, flags)
    assert result.exit_code == 0, result.output
    return ran


def _agent_ran_with(ran: list[object], *flags: str) -> list[object]:
    """What the agent ran with `flags` after the one flag it requires, `--node-name`."""
    return _ran_with(ran, agent_command.agent, ["--node-name=edge-1", *flags])


def _refusal(ran: list[object], command: click.Command, flags: list[str]) -> str:
    """What `command` wrote when it exited 2 with `flags`, having run nothing."""
    result = CliRunner().invoke(command, flags)
    assert result.exit_code == 2
    assert ran == []
    return result.output


@pytest.fixture
def kubeconfig(tmp_path: Path) -> Path:
    path = tmp_path / "kubeconfig"
    path.write_text("")
    return path


def test_controller_without_flags_runs_with_the_default_settings(ran: list[object]) -> None:
    assert _ran_with(ran, controller_command.controller, []) == [("text", "info"), CONTROLLER]
    assert ControllerSettings() == CONTROLLER


def test_controller_flags_change_only_their_settings_fields(ran: list[object]) -> None:
    assert _ran_with(
        ran,
        controller_command.controller,
        [
            "--namespace=shop-17",
            "--leader-elect",
            "--leader-election-namespace=edge-ops",
            "--lease-duration=30",
            "--workers=8",
            "--prepull-deadline=120",
            "--rollback-namespace=shop-17",
            "--rollback-namespace=shop-18",
            "--log-format=json",
            "--log-level=debug",
        ],
    ) == [
        ("json", "debug"),
        dataclasses.replace(
            CONTROLLER,
            namespace="shop-17",
            leader_elect=True,
            workers=8,
            log_format="json",
            log_level="debug",
            leader_election_namespace="edge-ops",
            lease_duration=30.0,
            prepull=PrepullSettings(deadline_seconds=120),
            rollback_namespaces=frozenset({"shop-17", "shop-18"}),
        ),
    ]


def test_agent_without_flags_runs_with_the_default_settings(ran: list[object]) -> None:
    assert _agent_ran_with(ran) == [
        ("text", "info"),
        dataclasses.replace(AGENT, node_name="edge-1"),
    ]


def test_agent_listen_flag_changes_only_the_listen_setting(ran: list[object]) -> None:
    assert _agent_ran_with(ran, "--listen=0.0.0.0:9000") == [
        ("text", "info"),
        dataclasses.replace(AGENT, node_name="edge-1", listen=Address("0.0.0.0", 9000)),  # noqa: S104
    ]


def test_agent_auth_and_scoping_flags_change_only_their_settings_fields(ran: list[object]) -> None:
    assert _agent_ran_with(
        ran, "--auth=none", "--token-file=/etc/agent-token", "--scoping-check-interval=0.5"
    ) == [
        ("text", "info"),
        dataclasses.replace(
            AGENT,
            node_name="edge-1",
            token_file=Path("/etc/agent-token"),
            auth="none",
            scoping_check_interval=0.5,
        ),
    ]


@pytest.mark.parametrize(
    ("flags", "refusal"),
    [
        (
            ["--lease-duration=10"],
            "--lease-duration (10) must be greater than --renew-deadline (10)",
        ),
        (
            ["--retry-period=5"],
            "--renew-deadline (10) must be greater than twice --retry-period (5): one attempt "
            "may take two retry periods",
        ),
    ],
)
def test_controller_refuses_leader_election_timings_that_cannot_work(
    ran: list[object], flags: list[str], refusal: str
) -> None:
    assert f"Error: {refusal}" in _refusal(
        ran, controller_command.controller, ["--leader-elect", *flags]
    )


@pytest.mark.parametrize(
    ("command", "required", "flag"),
    [
        (controller_command.controller, [], "--metrics-address"),
        (controller_command.controller, [], "--health-address"),
        (agent_command.agent, ["--node-name=edge-1"], "--listen"),
    ],
)
@pytest.mark.parametrize(
    ("value", "why"),
    [
        ("", "empty"),
        ("localhost", "no port"),
        (":80", "no host (0.0.0.0:80 serves on every interface)"),
        ("host:99999", "the port 99999 is above 65535"),
        ("host:abc", "the port 'abc' is not a number"),
        ("[::1]", "no port"),
    ],
)
def test_a_bad_address_stops_the_command_naming_the_flag_the_value_and_the_form(
    ran: list[object],
    command: click.Command,
    required: list[str],
    flag: str,
    value: str,
    why: str,
) -> None:
    assert _refusal(ran, command, [*required, f"{flag}={value}"]).splitlines()[-1] == (
        f"Error: Invalid value for '{flag}': {value!r}: {why}; "
        "expected HOST:PORT, such as 127.0.0.1:8080 or [::1]:8080"
    )


def test_address_flags_take_an_ipv6_host_in_brackets(ran: list[object]) -> None:
    _ran_with(
        ran,
        controller_command.controller,
        ["--metrics-address=[::1]:9090", "--health-address=[::]:9091"],
    )
    assert _agent_ran_with(ran, "--listen=[::1]:0") == [
        ("text", "info"),
        dataclasses.replace(
            CONTROLLER, metrics_address=Address("::1", 9090), health_address=Address("::", 9091)
        ),
        ("text", "info"),
        dataclasses.replace(AGENT, node_name="edge-1", listen=Address("::1", 0)),
    ]


def test_every_controller_flag_reaches_its_settings_field(
    ran: list[object], kubeconfig: Path
) -> None:
    assert _ran_with(
        ran,
        controller_command.controller,
        [
            f"--kubeconfig={kubeconfig}",
            "--namespace=shop-17",
            "--leader-elect",
            "--leader-election-namespace=edge-ops",
            "--leader-election-name=rollouts",
            "--lease-duration=30",
            "--renew-deadline=20",
            "--retry-period=5",
            "--metrics-address=10.0.0.7:9090",
            "--health-address=10.0.0.7:9091",
            "--workers=8",
            "--identity=replica-a",
            "--prepull-toolbox-image=tools:1",
            "--prepull-deadline=120",
            "--log-format=json",
            "--log-level=debug",
        ],
    ) == [
        ("json", "debug"),
        ControllerSettings(
            kubeconfig=str(kubeconfig),
            namespace="shop-17",
            leader_elect=True,
            leader_election_namespace="edge-ops",
            leader_election_name="rollouts",
            lease_duration=30.0,
            renew_deadline=20.0,
            retry_period=5.0,
            metrics_address=Address("10.0.0.7", 9090),
            health_address=Address("10.0.0.7", 9091),
            workers=8,
            identity="replica-a",
            prepull=PrepullSettings(toolbox_image="tools:1", deadline_seconds=120),
            log_format="json",
            log_level="debug",
        ),
    ]


def test_every_agent_flag_reaches_its_settings_field(
    ran: list[object], kubeconfig: Path, tmp_path: Path
) -> None:
    assert _ran_with(
        ran,
        agent_command.agent,
        [
            "--node-name=edge-1",
            f"--kubeconfig={kubeconfig}",
            "--listen=10.0.0.7:9000",
            "--auth=none",
            "--token-file=/etc/agent-token",
            "--scoping-check-interval=0.5",
            f"--cache-dir={tmp_path / 'pods'}",
            "--log-format=json",
            "--log-level=warning",
        ],
    ) == [
        ("json", "warning"),
        AgentSettings(
            node_name="edge-1",
            kubeconfig=str(kubeconfig),
            listen=Address("10.0.0.7", 9000),
            auth="none",
            token_file=Path("/etc/agent-token"),
            scoping_check_interval=0.5,
            cache_dir=tmp_path / "pods",
            log_format="json",
            log_level="warning",
        ),
    ]
