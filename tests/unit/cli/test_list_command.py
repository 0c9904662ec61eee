"""`edgerollout list` against the fake API: the exact rows, the reads it makes, how it fails."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from edgerollout.cli import list_command
from edgerollout.cli.list_command import listed_status
from edgerollout.cli.main import cli
from edgerollout.cli.rollout_read import read_rollout, read_rollouts
from edgerollout.cli.status_command import status_of
from edgerollout.kube.api import CONTROLLER_REVISIONS, DAEMONSETS, NODES, PODS, ApiError, Resource
from tests.unit.cli.list_cluster import (
    NODES_OF_THE_LAB,
    NOW,
    PAUSED,
    ClosingApi,
    put_daemonset,
    put_nodes,
    shop,
)
from tests.unit.kube.fake_api import unreachable
from tests.unit.kube.objects import ADVANCED, NEW, OLD


@pytest.fixture
def api(monkeypatch: pytest.MonkeyPatch) -> ClosingApi:
    fake = ClosingApi()

    async def connect(kubeconfig: str | None) -> ClosingApi:
        assert kubeconfig is None
        return fake

    monkeypatch.setattr(list_command, "connect", connect)
    monkeypatch.setattr(list_command, "now", lambda: NOW)
    return fake


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["list", *args])
    return result.exit_code, result.stdout, result.stderr


def test_one_row_per_opted_in_daemonset_in_its_state(api: ClosingApi) -> None:
    shop(api)
    assert run() == (
        0,
        "NAME    STRATEGY                UPDATED   OFFLINE   BROKEN   HELD   WAVE     "
        "STATE                       AGE\n"
        "agent   AdvancedRollingUpdate   2/3       0         0        1      <none>   "
        "paused                      5m\n"
        "bad     <none>                  -         -         -        -      <none>   "
        "invalid annotation          3h\n"
        "logs    AdvancedRollingUpdate   2/3       1         0        0      <none>   "
        "waiting for offline nodes   90s\n"
        "web     AdvancedRollingUpdate   3/3       0         0        0      <none>   "
        "complete                    2d\n",
        "",
    )
    assert api.closed


def test_wide_adds_the_budget_the_revision_and_the_warnings(api: ClosingApi) -> None:
    shop(api)
    code, stdout, stderr = run("-o", "wide")
    assert (code, stderr) == (0, "")
    # The narrow columns as in the table above, then (max-unavailable unset is 10 %; 10 % and
    # 30 % of 3 nodes round up to 1):
    assert [line[111:] for line in stdout.splitlines()] == [
        "MAX-UNAVAILABLE   BUDGET   BATCH    REVISION   WARNINGS",
        "10%               1        <none>   hash-new   <none>",
        "<none>            <none>   <none>   hash-new   UnknownUpdateStrategy",
        "30%               1        <none>   hash-new   <none>",
        "10%               1        <none>   hash-new   <none>",
    ]
    assert [line[:111].rstrip() for line in stdout.splitlines()] == [
        "NAME    STRATEGY                UPDATED   OFFLINE   BROKEN   HELD   WAVE     "
        "STATE                       AGE",
        "agent   AdvancedRollingUpdate   2/3       0         0        1      <none>   "
        "paused                      5m",
        "bad     <none>                  -         -         -        -      <none>   "
        "invalid annotation          3h",
        "logs    AdvancedRollingUpdate   2/3       1         0        0      <none>   "
        "waiting for offline nodes   90s",
        "web     AdvancedRollingUpdate   3/3       0         0        0      <none>   "
        "complete                    2d",
    ]


def test_all_namespaces_adds_the_namespace_column(api: ClosingApi) -> None:
    put_nodes(api)
    put_daemonset(api, "web", ADVANCED, dict.fromkeys(NODES_OF_THE_LAB, NEW))
    put_daemonset(
        api, "web", PAUSED, {"edge-1": NEW, "edge-2": OLD}, namespace="shop-17",
        created="2025-03-01T11:59:58Z",
    )  # fmt: skip
    assert run("-A") == (
        0,
        "NAMESPACE   NAME   STRATEGY                UPDATED   OFFLINE   BROKEN   HELD   "
        "WAVE     STATE      AGE\n"
        "default     web    AdvancedRollingUpdate   3/3       0         0        0      "
        "<none>   complete   5m\n"
        "shop-17     web    AdvancedRollingUpdate   1/3       0         0        1      "
        "<none>   paused     2s\n",
        "",
    )
    assert [(call.resource.plural, call.namespace) for call in api.calls] == [
        ("daemonsets", None),
        ("controllerrevisions", None),
        ("pods", None),
        ("nodes", None),
    ]


def test_json_has_the_documented_shape(api: ClosingApi) -> None:
    shop(api)
    code, stdout, stderr = run("-o", "json")
    assert (code, stderr) == (0, "")
    items = json.loads(stdout)["items"]
    assert items[2] == {
        "namespace": "default",
        "name": "logs",
        "strategy": "AdvancedRollingUpdate",
        "maxUnavailable": "30%",
        "budget": 1,
        "updated": 2,
        "total": 3,
        "offline": 1,
        "broken": 0,
        "held": 0,
        "wave": None,
        "batch": None,
        "state": {"reason": "WaitingForOfflineNodes", "text": "waiting for offline nodes"},
        "invalidAnnotations": [],
        "newestRevision": NEW,
        "newestRevisionCreated": "2025-03-01T11:58:30Z",
        "complete": False,
    }
    assert [(i["name"], i["state"]["reason"], i["invalidAnnotations"]) for i in items] == [
        ("agent", "Paused", []),
        ("bad", "InvalidAnnotation", ["UnknownUpdateStrategy"]),
        ("logs", "WaitingForOfflineNodes", []),
        ("web", "Complete", []),
    ]


async def test_each_row_is_the_status_that_status_reads(api: ClosingApi) -> None:
    shop(api)
    listed = [
        listed_status(rollout, at=NOW).status
        for rollout in await read_rollouts(api, namespace="default")
    ]
    shown = [
        status_of(await read_rollout(api, name=name, namespace="default"), now=NOW)
        for name in ("agent", "bad", "logs", "web")
    ]
    assert listed == shown


@pytest.mark.parametrize("daemonsets", [1, 40])
def test_one_list_per_resource_whatever_the_number_of_daemonsets(
    api: ClosingApi, daemonsets: int
) -> None:
    put_nodes(api)
    for i in range(daemonsets):
        put_daemonset(api, f"ds-{i:02}", ADVANCED, dict.fromkeys(NODES_OF_THE_LAB, NEW))
    code, stdout, _ = run()
    assert (code, len(stdout.splitlines())) == (0, 1 + daemonsets)
    assert [(call.verb, call.resource, call.namespace) for call in api.calls] == [
        ("list", DAEMONSETS, "default"),
        ("list", CONTROLLER_REVISIONS, "default"),
        ("list", PODS, "default"),
        ("list", NODES, None),
    ]


@pytest.mark.parametrize(
    ("args", "stdout", "stderr"),
    [
        ((), "", "No resources found in default namespace.\n"),
        (("-n", "shop-17"), "", "No resources found in shop-17 namespace.\n"),
        (("-A",), "", "No resources found\n"),
        (("-o", "json"), '{\n  "items": []\n}\n', ""),
    ],
)
def test_nothing_opted_in_says_so_on_stderr_and_exits_0(
    api: ClosingApi, args: tuple[str, ...], stdout: str, stderr: str
) -> None:
    put_nodes(api)
    put_daemonset(api, "plain", {}, dict.fromkeys(NODES_OF_THE_LAB, NEW))
    assert run(*args) == (0, stdout, stderr)
    # Nothing to show: the pods, revisions and nodes are not read.
    assert [call.resource for call in api.calls] == [DAEMONSETS]


FORBIDDEN = ApiError(
    403,
    "Forbidden",
    'pods is forbidden: User "dev" cannot list resource "pods" in API group "" '
    'in the namespace "default"',
)


@pytest.mark.parametrize(
    ("resource", "error", "stderr"),
    [
        (
            DAEMONSETS,
            unreachable("GET /apis/apps/v1: cannot connect to 10.0.0.1:6443: Connection refused"),
            "error: cannot reach the API server: GET /apis/apps/v1: cannot connect to "
            "10.0.0.1:6443: Connection refused\n",
        ),
        (
            PODS,
            FORBIDDEN,
            'error: the API server answered 403 Forbidden: pods is forbidden: User "dev" '
            'cannot list resource "pods" in API group "" in the namespace "default"\n',
        ),
    ],
)
@pytest.mark.parametrize("watch", [(), ("--watch",)])
def test_an_api_failure_is_one_line_on_stderr_and_exit_1(
    api: ClosingApi,
    resource: Resource,
    error: ApiError,
    stderr: str,
    watch: tuple[str, ...],
) -> None:
    shop(api)
    api.fail("list", resource, error, times=None)
    assert run(*watch) == (1, "", stderr)
    assert api.closed


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ("-n", "shop-17", "-A"),
            "Error: -n/--namespace and -A/--all-namespaces cannot be used together\n",
        ),
        (
            ("-o", "yaml"),
            "Error: Invalid value for '-o' / '--output': 'yaml' is not one of 'table', 'wide', "
            "'json'.\n",
        ),
        (("shop-17",), "Error: Got unexpected extra argument (shop-17)\n"),
    ],
)
def test_bad_flags_are_usage_errors(api: ClosingApi, args: tuple[str, ...], message: str) -> None:
    code, stdout, stderr = run(*args)
    assert (code, stdout) == (2, "")
    assert stderr.endswith(message)
    assert api.calls == []
