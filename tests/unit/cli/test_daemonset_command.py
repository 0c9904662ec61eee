"""Commands about one DaemonSet name it alike and fail alike: exit codes and messages."""

from __future__ import annotations

from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from edgerollout.cli.daemonset_command import (
    DaemonSetNotFound,
    UnusableKubeconfig,
    connect,
    read_daemonset,
    run_daemonset_command,
)
from edgerollout.cli.main import cli
from edgerollout.kube.api import DAEMONSETS, ApiError
from tests.unit.kube.fake_api import FakeApi, unreachable
from tests.unit.kube.objects import daemonset_json

DAEMONSET_COMMANDS = ["status", "plan", "pause", "resume"]


@pytest.mark.parametrize("name", DAEMONSET_COMMANDS)
def test_each_daemonset_command_takes_the_daemonset_then_namespace_then_kubeconfig(
    name: str,
) -> None:
    daemonset, namespace, kubeconfig = cli.commands[name].params[:3]
    assert (daemonset.name, daemonset.required) == ("daemonset", True)
    assert (namespace.opts, namespace.default) == (["-n", "--namespace"], "default")
    assert (kubeconfig.opts, kubeconfig.default) == (["--kubeconfig"], None)


def _failing(error: BaseException) -> click.Command:
    @click.command()
    def fails() -> None:
        async def work() -> int:
            raise error

        run_daemonset_command(work, daemonset="web", namespace="edge")

    return fails


@pytest.mark.parametrize(
    ("error", "code", "stderr"),
    [
        (DaemonSetNotFound(), 3, 'error: daemonset "web" not found in namespace "edge"\n'),
        (
            unreachable("GET /apis/apps/v1: cannot connect to 10.0.0.1:6443: Connection refused"),
            4,
            "error: cannot reach the API server: GET /apis/apps/v1: cannot connect to "
            "10.0.0.1:6443: Connection refused\n",
        ),
        (
            ApiError(403, "Forbidden", 'daemonsets.apps "web" is forbidden'),
            4,
            'error: the API server answered 403 Forbidden: daemonsets.apps "web" is forbidden\n',
        ),
        (
            UnusableKubeconfig("/tmp/kc: Invalid kube-config file."),
            4,
            "error: cannot load the Kubernetes configuration: /tmp/kc: Invalid kube-config file.\n",
        ),
        (KeyboardInterrupt(), 130, ""),
    ],
    ids=["not-found", "unreachable", "refused", "kubeconfig", "interrupted"],
)
def test_shared_failures_exit_with_their_code_and_say_why_on_stderr(
    error: BaseException, code: int, stderr: str
) -> None:
    result = CliRunner().invoke(_failing(error), [])
    assert (result.exit_code, result.stdout, result.stderr) == (code, "", stderr)


def test_work_exit_code_is_the_commands() -> None:
    @click.command()
    def succeeds() -> None:
        async def work() -> int:
            click.echo("done")
            return 1

        run_daemonset_command(work, daemonset="web", namespace="edge")

    result = CliRunner().invoke(succeeds, [])
    assert (result.exit_code, result.stdout, result.stderr) == (1, "done\n", "")


async def test_kubeconfig_without_a_current_context_is_unusable(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text("apiVersion: v1\nkind: Config\nclusters: []\n")
    with pytest.raises(UnusableKubeconfig) as unusable:
        await connect(str(kubeconfig))
    assert str(unusable.value) == (
        f"{kubeconfig}: Invalid kube-config file. Expected key current-context in {kubeconfig}"
    )


@pytest.mark.parametrize(
    ("text", "detail"),
    [
        pytest.param("", "the file is empty, not a kubeconfig", id="empty"),
        pytest.param("  \n", "the file is empty, not a kubeconfig", id="blank"),
        pytest.param(
            "- a\n- b\n",
            "not a kubeconfig (a YAML mapping with clusters, users and contexts): "
            "TypeError: list indices must be integers or slices, not str",
            id="a-list",
        ),
    ],
)
async def test_a_file_that_is_no_kubeconfig_is_unusable_saying_so(
    tmp_path: Path, text: str, detail: str
) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(text)

    with pytest.raises(UnusableKubeconfig) as unusable:
        await connect(str(kubeconfig))

    assert str(unusable.value) == f"{kubeconfig}: {detail}"


async def test_reading_a_missing_daemonset_raises_not_found_and_other_errors_pass() -> None:
    api = FakeApi()
    with pytest.raises(DaemonSetNotFound):
        await read_daemonset(api, name="web", namespace="default")
    api.put(DAEMONSETS, daemonset_json())
    assert (await read_daemonset(api, name="web", namespace="default"))["metadata"]["name"] == "web"
    api.fail("get", DAEMONSETS, unreachable())
    with pytest.raises(ApiError) as failed:
        await read_daemonset(api, name="web", namespace="default")
    assert failed.value.status == 0
