"""The install's rollback switch as `status`, `plan`, `list` and `list --watch` read it (design
§13.4.1): the dry run rolls back where the controller would, pauses where it would not, and says
which, on the fake API as the API server serves the install's RoleBinding."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime

import pytest

from edgerollout.cli.list_watch import RolloutWatch
from edgerollout.cli.plan_command import dry_run_of
from edgerollout.cli.plan_render import render_plan_json, render_plan_table
from edgerollout.cli.rollout_read import read_rollout, read_rollouts
from edgerollout.cli.status_command import status_of
from edgerollout.cli.status_render import render_json, render_table
from edgerollout.domain.spec.on_failure import RollbackSwitch
from edgerollout.domain.vocabulary import (
    MAX_FAILED_ANNOTATION,
    MAX_UNAVAILABLE_ANNOTATION,
    ON_FAILURE_ANNOTATION,
)
from edgerollout.kube.api import (
    CONTROLLER_REVISIONS,
    DAEMONSETS,
    JSON,
    NODES,
    PODS,
    ROLE_BINDINGS,
    ApiError,
)
from edgerollout.settings import KUBE_CLIENT
from tests.unit.kube.fake_api import FakeApi
from tests.unit.kube.objects import (
    ADVANCED,
    NAMESPACE,
    NEW,
    OLD,
    daemonset_json,
    node_json,
    pod_json,
    revision_json,
)

NOW = datetime(2025, 3, 1, 12, 0, 0, tzinfo=UTC)
ROLLBACK = {
    **ADVANCED,
    MAX_UNAVAILABLE_ANNOTATION: "2",
    MAX_FAILED_ANNOTATION: "1",
    ON_FAILURE_ANNOTATION: "rollback",
}
FORBIDDEN = ApiError(
    403,
    "Forbidden",
    'rolebindings.rbac.authorization.k8s.io "edgerollout-controller-rollback" is forbidden',
)
SWITCHED_ON_LINE = 'On failure: roll back (switched on in namespace "default" at install)'
SWITCHED_OFF_LINE = (
    'On failure: pause (a rollback is asked for, but not switched on in namespace "default" at '
    "install: RollbackNotAllowed)"
)
UNKNOWN_LINE = (
    'On failure: pause, as shown (a rollback is asked for; whether namespace "default" is switched '
    'on cannot be read: no right to get rolebinding "edgerollout-controller-rollback")'
)


def crash_looping(name: str, node: str) -> JSON:
    obj = pod_json(name, node=node, ready=False)
    obj["status"]["containerStatuses"] = [
        {
            "name": "web",
            "ready": False,
            "restartCount": 4,
            "state": {"waiting": {"reason": "CrashLoopBackOff"}},
        }
    ]
    return obj


def role_binding(namespace: str) -> JSON:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {"name": "edgerollout-controller-rollback", "namespace": namespace},
        "roleRef": {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "Role",
            "name": "edgerollout-controller-rollback",
        },
    }


def failing(api: FakeApi, annotations: dict[str, str] = ROLLBACK) -> None:
    """`default/web` past its failure budget: two nodes crash-loop on the new revision."""
    api.put(DAEMONSETS, daemonset_json(annotations=annotations))
    api.put(CONTROLLER_REVISIONS, revision_json("web-old", number=1, revision_hash=OLD))
    api.put(CONTROLLER_REVISIONS, revision_json("web-new", number=2, revision_hash=NEW))
    for index, name in enumerate(("edge-1", "edge-2", "edge-3"), 1):
        api.put(NODES, node_json(name))
        if index < 3:
            api.put(PODS, crash_looping(f"web-{index}", name))
        else:
            api.put(PODS, pod_json(f"web-{index}", node=name, revision_hash=OLD))


@pytest.fixture
def api() -> FakeApi:
    fake = FakeApi()
    failing(fake)
    return fake


async def test_switched_on_the_dry_run_rolls_back_as_the_controller_would(api: FakeApi) -> None:
    api.put(ROLE_BINDINGS, role_binding(NAMESPACE))
    views = await read_rollout(api, name="web", namespace=NAMESPACE)
    assert views.rollback is RollbackSwitch.ON

    dry_run = dry_run_of(views, now=NOW)
    document = json.loads(render_plan_json(dry_run))
    assert (document["rollsBackTo"], document["pausesRollout"]) == (OLD, False)
    assert document["rollbackSwitch"] == "on"
    assert [event["reason"] for event in document["events"]] == ["RolloutRolledBack"]
    assert render_plan_table(dry_run).splitlines()[1] == SWITCHED_ON_LINE

    status = status_of(views, now=NOW)
    assert render_table(status).splitlines()[1] == SWITCHED_ON_LINE
    assert json.loads(render_json(status))["rollbackSwitch"] == "on"


async def test_not_switched_on_the_dry_run_pauses_with_rollback_not_allowed(
    api: FakeApi,
) -> None:
    views = await read_rollout(api, name="web", namespace=NAMESPACE)
    assert views.rollback is RollbackSwitch.OFF

    dry_run = dry_run_of(views, now=NOW)
    document = json.loads(render_plan_json(dry_run))
    assert (document["rollsBackTo"], document["pausesRollout"]) == (None, True)
    assert document["rollbackSwitch"] == "off"
    assert [event["reason"] for event in document["events"]] == [
        "RolloutFailed",
        "RollbackNotAllowed",
    ]
    assert render_plan_table(dry_run).splitlines()[1] == SWITCHED_OFF_LINE
    assert render_table(status_of(views, now=NOW)).splitlines()[1] == SWITCHED_OFF_LINE


async def test_a_reader_who_may_not_read_the_switch_is_told_so(api: FakeApi) -> None:
    api.fail("get", ROLE_BINDINGS, FORBIDDEN)
    views = await read_rollout(api, name="web", namespace=NAMESPACE)
    assert views.rollback is RollbackSwitch.UNKNOWN

    dry_run = dry_run_of(views, now=NOW)
    document = json.loads(render_plan_json(dry_run))
    assert (document["rollsBackTo"], document["pausesRollout"]) == (None, True)
    assert document["rollbackSwitch"] == "unknown"
    assert render_plan_table(dry_run).splitlines()[1] == UNKNOWN_LINE
    assert json.loads(render_json(status_of(views, now=NOW)))["rollbackSwitch"] == "unknown"


async def test_another_error_reading_the_switch_is_raised_as_every_reads() -> None:
    api = FakeApi()
    failing(api)
    api.fail("get", ROLE_BINDINGS, ApiError(500, "InternalError", "etcd is down"))
    with pytest.raises(ApiError, match="500 InternalError: etcd is down"):
        await read_rollout(api, name="web", namespace=NAMESPACE)


async def test_a_daemonset_that_does_not_ask_for_a_rollback_reads_no_switch() -> None:
    api = FakeApi()
    failing(api, {**ROLLBACK, ON_FAILURE_ANNOTATION: "pause"})
    views = await read_rollout(api, name="web", namespace=NAMESPACE)
    assert views.rollback is RollbackSwitch.OFF
    assert api.calls_to("get", ROLE_BINDINGS) == []
    assert api.calls_to("list", ROLE_BINDINGS) == []
    dry_run = dry_run_of(views, now=NOW)
    assert json.loads(render_plan_json(dry_run))["rollbackSwitch"] is None
    assert "On failure" not in render_plan_table(dry_run)
    assert json.loads(render_json(status_of(views, now=NOW)))["rollbackSwitch"] is None
    assert (await read_rollouts(api, namespace=None))[0].views.rollback is RollbackSwitch.OFF
    assert api.calls_to("list", ROLE_BINDINGS) == []


async def test_list_reads_every_namespaces_switch_in_one_list(api: FakeApi) -> None:
    api.put(ROLE_BINDINGS, role_binding(NAMESPACE))
    api.put(ROLE_BINDINGS, role_binding("shops"))
    listed = await read_rollouts(api, namespace=None)
    assert [rollout.views.rollback for rollout in listed] == [RollbackSwitch.ON]
    [call] = api.calls_to("list", ROLE_BINDINGS)
    assert (call.namespace, call.params["field_selector"]) == (
        None,
        "metadata.name=edgerollout-controller-rollback",
    )

    api.remove(ROLE_BINDINGS, "edgerollout-controller-rollback", namespace=NAMESPACE)
    listed = await read_rollouts(api, namespace=NAMESPACE)
    assert [rollout.views.rollback for rollout in listed] == [RollbackSwitch.OFF]

    api.fail("list", ROLE_BINDINGS, FORBIDDEN)
    listed = await read_rollouts(api, namespace=NAMESPACE)
    assert [rollout.views.rollback for rollout in listed] == [RollbackSwitch.UNKNOWN]


@contextlib.asynccontextmanager
async def watched(api: FakeApi) -> AsyncIterator[RolloutWatch]:
    watch = RolloutWatch(api, namespace=NAMESPACE)
    await watch.start()
    try:
        yield watch
    finally:
        await watch.stop()


def switch_of(watch: RolloutWatch) -> RollbackSwitch:
    rollout = watch.index.rollout("default/web")
    assert rollout is not None
    return rollout.views.rollback


async def test_list_watch_follows_the_switch_as_the_install_changes_it(api: FakeApi) -> None:
    async with watched(api) as watch:
        assert switch_of(watch) is RollbackSwitch.OFF
        api.publish(ROLE_BINDINGS, "ADDED", role_binding(NAMESPACE))
        assert await watch.changes() == {"default/web"}
        assert switch_of(watch) is RollbackSwitch.ON
        api.publish(ROLE_BINDINGS, "DELETED", role_binding(NAMESPACE))
        assert await watch.changes() == {"default/web"}
        assert switch_of(watch) is RollbackSwitch.OFF


async def test_list_watch_refused_the_switch_says_unknown_and_asks_once(api: FakeApi) -> None:
    api.fail("list", ROLE_BINDINGS, FORBIDDEN, times=None)
    async with watched(api) as watch:
        assert switch_of(watch) is RollbackSwitch.UNKNOWN
        # The other informers go on: a pod's change still reaches the index.
        api.publish(PODS, "MODIFIED", pod_json("web-3", node="edge-3", revision_hash=NEW))
        assert "default/web" in await watch.changes()
        # An informer refused retries after first_retry_delay (0.5 s): this one does not.
        await asyncio.sleep(3 * KUBE_CLIENT.watch.first_retry_delay)
        assert len(api.calls_to("list", ROLE_BINDINGS)) == 1
        assert switch_of(watch) is RollbackSwitch.UNKNOWN


async def test_list_watch_ends_on_another_failure_of_the_switch(api: FakeApi) -> None:
    api.fail("list", ROLE_BINDINGS, ApiError(500, "InternalError", "etcd is down"), times=None)
    watch = RolloutWatch(api, namespace=NAMESPACE)
    try:
        with pytest.raises(ApiError, match="500 InternalError: etcd is down"):
            await watch.start()
    finally:
        await watch.stop()
