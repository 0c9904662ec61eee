"""`edgerollout pause` / `resume`: the change each makes to the annotation, and what it says."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from edgerollout.cli import pause_command
from edgerollout.cli.main import cli
from edgerollout.cli.pause_command import PauseChange, plan_pause_change
from edgerollout.domain.vocabulary import PAUSED_ANNOTATION
from edgerollout.kube.api import DAEMONSETS, MERGE
from tests.unit.kube.fake_api import FakeApi, not_found
from tests.unit.kube.objects import STRATEGY, daemonset_json

OTHER = {STRATEGY: "OTA"}
SET_TRUE = {"metadata": {"annotations": {PAUSED_ANNOTATION: "true"}}}
REMOVE = {"metadata": {"annotations": {PAUSED_ANNOTATION: None}}}


# --- the decision --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "pause", "expected"),
    [
        (None, True, PauseChange(patch=SET_TRUE)),
        ("false", True, PauseChange(patch=SET_TRUE)),
        ("true", True, PauseChange(patch=None)),
        (" TRUE ", True, PauseChange(patch=None)),
        ("yes", True, PauseChange(patch=SET_TRUE, replaced="yes")),
        ("", True, PauseChange(patch=SET_TRUE, replaced="")),
        (None, False, PauseChange(patch=None)),
        ("false", False, PauseChange(patch=None)),
        ("False", False, PauseChange(patch=None)),
        ("true", False, PauseChange(patch=REMOVE)),
        ("yes", False, PauseChange(patch=REMOVE, replaced="yes")),
    ],
)
def test_pause_sets_true_and_resume_removes_unless_already_so(
    value: str | None, pause: bool, expected: PauseChange
) -> None:
    annotations = {**OTHER, **({} if value is None else {PAUSED_ANNOTATION: value})}
    assert plan_pause_change(annotations, pause=pause) == expected


# --- the commands, against the fake API ------------------------------------------------------------


class ClosingApi(FakeApi):
    closed = False

    async def close(self) -> None:
        self.closed = True


@pytest.fixture
def api(monkeypatch: pytest.MonkeyPatch) -> ClosingApi:
    fake = ClosingApi()

    async def connect(kubeconfig: str | None) -> ClosingApi:
        assert kubeconfig is None
        return fake

    monkeypatch.setattr(pause_command, "connect", connect)
    return fake


def with_pause(value: str | None) -> dict[str, object]:
    return daemonset_json(
        annotations={**OTHER, **({} if value is None else {PAUSED_ANNOTATION: value})}
    )


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_pause_sends_a_merge_patch_of_the_annotation_and_says_paused(api: ClosingApi) -> None:
    api.put(DAEMONSETS, with_pause(None))

    assert run("pause", "web") == (0, "daemonset.apps/web paused\n", "")

    (write,) = api.writes
    assert (write.verb, write.resource, write.name, write.namespace, write.body) == (
        "patch",
        DAEMONSETS,
        "web",
        "default",
        SET_TRUE,
    )
    assert dict(write.params) == {"subresource": None, "content_type": MERGE}
    assert api.closed


def test_resume_sends_a_merge_patch_removing_the_annotation_and_says_resumed(
    api: ClosingApi,
) -> None:
    api.put(DAEMONSETS, with_pause("true"))

    assert run("resume", "web", "-n", "default") == (0, "daemonset.apps/web resumed\n", "")

    (write,) = api.writes
    assert (write.body, write.params["content_type"]) == (REMOVE, MERGE)


@pytest.mark.parametrize(
    ("command", "value", "stderr"),
    [
        ("pause", "true", 'error: daemonsets.apps "web" is already paused\n'),
        ("resume", None, 'error: daemonsets.apps "web" is not paused\n'),
        ("resume", "false", 'error: daemonsets.apps "web" is not paused\n'),
    ],
)
def test_asking_for_the_state_it_is_in_exits_1_and_writes_nothing(
    api: ClosingApi, command: str, value: str | None, stderr: str
) -> None:
    api.put(DAEMONSETS, with_pause(value))

    assert run(command, "web") == (1, "", stderr)
    assert api.writes == []
    assert api.closed


@pytest.mark.parametrize(
    ("command", "body", "stdout", "outcome"),
    [
        ("pause", SET_TRUE, "daemonset.apps/web paused\n", 'set to "true"'),
        ("resume", REMOVE, "daemonset.apps/web resumed\n", "removed"),
    ],
)
def test_an_invalid_value_is_replaced_and_named(
    api: ClosingApi, command: str, body: dict[str, object], stdout: str, outcome: str
) -> None:
    api.put(DAEMONSETS, with_pause("yes"))

    assert run(command, "web") == (
        0,
        stdout,
        'warning: edgerollout.io/paused was "yes", which is neither "true" nor "false" and held '
        f"the rollout as paused; it is now {outcome}\n",
    )
    assert [write.body for write in api.writes] == [body]


@pytest.mark.parametrize("command", ["pause", "resume"])
def test_missing_daemonset_exits_3(api: ClosingApi, command: str) -> None:
    assert run(command, "web", "-n", "edge") == (
        3,
        "",
        'error: daemonset "web" not found in namespace "edge"\n',
    )
    assert api.writes == []


def test_daemonset_deleted_between_read_and_patch_exits_3(api: ClosingApi) -> None:
    api.put(DAEMONSETS, with_pause(None))
    api.fail("patch", DAEMONSETS, not_found(DAEMONSETS, "web"))

    assert run("pause", "web") == (
        3,
        "",
        'error: daemonset "web" not found in namespace "default"\n',
    )
