"""upgrade and imagepull (design §8, §6): what the agent reads, what it writes, and when it refuses."""

from __future__ import annotations

import time
from datetime import UTC, datetime

import pytest

from edgerollout.domain.vocabulary import PAUSED_ANNOTATION
from edgerollout.kube.api import DAEMONSETS, PODS, STRATEGIC_MERGE, ApiError, Resource
from tests.unit.kube.fake_api import JSON, Call, FakeApi, conflict, unreachable
from tests.unit.kube.objects import STRATEGY, daemonset_json

from .harness import (
    AUTHORIZED,
    IMAGEPULL,
    POD,
    TOKEN,
    UPGRADE,
    HangingApi,
    agent,
    cluster,
    image_ready,
    need_upgrade,
    ota_pod,
    posted_refusal,
    refusal,
    refused,
    serving,
)

ACTIONS = pytest.mark.parametrize("path", [UPGRADE, IMAGEPULL], ids=["upgrade", "imagepull"])


def reads(api: FakeApi) -> list[tuple[str, str]]:
    """(verb, resource) of every request the agent made, in order."""
    return [(call.verb, call.resource.plural) for call in api.calls]


def only_write(api: FakeApi, verb: str) -> Call:
    """The agent's one write, checked to be `verb` on the pod default/web-x."""
    (write,) = api.writes
    assert (write.verb, write.resource, write.name, write.namespace) == (verb, PODS, POD, "default")
    return write


# --- success --------------------------------------------------------------------------------


async def test_upgrade_deletes_the_pod_with_its_uid_as_precondition() -> None:
    api = cluster(ota_pod())

    async with serving(agent(api)) as client:
        response = await client.post(UPGRADE)
        assert response.status == 200
        assert response.content_type == "text/plain"
        assert await response.text() == "Start updating pod default/web-x"

    assert reads(api) == [("get", "pods"), ("get", "daemonsets"), ("delete", "pods")]
    write = only_write(api, "delete")
    assert write.params["uid"] == "uid-web-x"
    assert api.stored(PODS, POD, namespace="default") is None


async def test_upgrade_passes_once_the_pre_pull_of_the_newest_revision_succeeded() -> None:
    pulled = ota_pod(conditions=[need_upgrade(), image_ready("True", "PullImageSuccess")])
    api = cluster(pulled)

    async with serving(agent(api)) as client:
        response = await client.post(UPGRADE)
        assert (response.status, await response.text()) == (200, "Start updating pod default/web-x")

    assert [call.verb for call in api.writes] == ["delete"]


async def test_upgrade_is_not_held_back_by_a_pre_pull_of_an_older_revision() -> None:
    stale = ota_pod(conditions=[need_upgrade(), image_ready("False", "PullImageFail", "hash-old")])
    api = cluster(stale)

    async with serving(agent(api)) as client:
        response = await client.post(UPGRADE)
        assert response.status == 200

    assert [call.verb for call in api.writes] == ["delete"]


async def test_imagepull_patches_one_pod_image_ready_condition_on_pod_status_with_the_uid() -> None:
    api = cluster(ota_pod())
    before = datetime.now(UTC).replace(microsecond=0)

    async with serving(agent(api)) as client:
        response = await client.post(IMAGEPULL)
        assert response.status == 200
        assert response.content_type == "text/plain"
        assert await response.text() == "Image pre-pull requested for pod default/web-x"

    write = only_write(api, "patch")
    assert (write.params["subresource"], write.params["content_type"]) == (
        "status",
        STRATEGIC_MERGE,
    )
    assert write.body is not None
    (condition,) = write.body["status"]["conditions"]
    since = condition.pop("lastTransitionTime")
    assert write.body == {
        "metadata": {"uid": "uid-web-x"},
        "status": {
            "conditions": [
                {
                    "type": "PodImageReady",
                    "status": "False",
                    "reason": "WaitPullImage",
                    "message": "controllerrevision: hash-new",
                }
            ]
        },
    }
    written = datetime.strptime(since, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    assert before <= written <= datetime.now(UTC)


async def test_imagepull_already_requested_for_the_newest_revision_writes_nothing() -> None:
    requested = ota_pod(conditions=[need_upgrade(), image_ready("False", "WaitPullImage")])
    api = cluster(requested)

    async with serving(agent(api)) as client:
        response = await client.post(IMAGEPULL)
        assert (response.status, await response.text()) == (
            200,
            "Image pre-pull requested for pod default/web-x",
        )

    assert api.writes == []


async def test_imagepull_after_a_failed_pull_asks_again_keeping_the_transition_time() -> None:
    failed = ota_pod(conditions=[need_upgrade(), image_ready("False", "PullImageFail")])
    api = cluster(failed)

    async with serving(agent(api)) as client:
        response = await client.post(IMAGEPULL)
        assert response.status == 200

    (write,) = api.writes
    assert write.body is not None
    assert write.body["status"]["conditions"] == [
        {
            "type": "PodImageReady",
            "status": "False",
            "reason": "WaitPullImage",
            "message": "controllerrevision: hash-new",
            "lastTransitionTime": "2025-03-01T11:45:00Z",
        }
    ]


# --- refusals: nothing written ----------------------------------------------------------------


@ACTIONS
@pytest.mark.parametrize(
    ("pods", "status", "reason", "message"),
    [
        pytest.param(
            [], 404, "PodNotFound", "pod default/web-x does not exist", id="missing_pod_is_404"
        ),
        pytest.param(
            [ota_pod(node="edge-1")],
            403,
            "PodOnAnotherNode",
            "pod default/web-x is bound to node edge-1, not to this node edge-2: "
            "a node may only act on its own pods",
            id="pod_on_another_node_is_403_and_its_daemonset_is_not_read",
        ),
        pytest.param(
            [ota_pod(owner_uid=None)],
            400,
            "NotAnOTAPod",
            "pod default/web-x is owned by no controller, not by a DaemonSet "
            "with the OTA update strategy",
            id="pod_without_a_controller_is_400_not_an_ota_pod",
        ),
    ],
)
async def test_a_pod_refused_on_its_own_record_is_read_alone(
    path: str, pods: list[JSON], status: int, reason: str, message: str
) -> None:
    api = cluster(*pods)

    assert await posted_refusal(api, path) == refused(status, reason, message)

    assert reads(api) == [("get", "pods")]


@ACTIONS
async def test_terminating_pod_is_409(path: str) -> None:
    api = cluster(ota_pod(deleting=True))

    assert await posted_refusal(api, path) == refused(
        409, "PodTerminating", "pod default/web-x is already terminating"
    )

    assert api.writes == []


@ACTIONS
@pytest.mark.parametrize(
    ("annotations", "update_strategy"),
    [
        ({STRATEGY: "AdvancedRollingUpdate"}, "OnDelete"),
        ({}, "RollingUpdate"),
        ({STRATEGY: "OTA"}, "RollingUpdate"),
        ({STRATEGY: "over-the-air"}, "OnDelete"),
    ],
)
async def test_pod_of_a_daemonset_without_the_ota_strategy_is_400(
    path: str, annotations: dict[str, str], update_strategy: str
) -> None:
    api = cluster(ota_pod())
    api.put(DAEMONSETS, daemonset_json(annotations=annotations, update_strategy=update_strategy))

    assert await posted_refusal(api, path) == refused(
        400,
        "NotAnOTAPod",
        "pod default/web-x belongs to DaemonSet web, which does not use the OTA update strategy",
    )

    assert reads(api) == [("get", "pods"), ("get", "daemonsets")]


@ACTIONS
@pytest.mark.parametrize("value", ["ota", "Ota", " OTA "])
async def test_ota_strategy_matches_without_regard_to_case(path: str, value: str) -> None:
    api = cluster(ota_pod(), strategy={STRATEGY: value})

    async with serving(agent(api)) as client:
        response = await client.post(path)
        assert response.status == 200


@ACTIONS
async def test_pod_whose_daemonset_is_gone_is_400(path: str) -> None:
    api = cluster(ota_pod())
    api.remove(DAEMONSETS, "web", namespace="default")

    async with serving(agent(api)) as client:
        response = await client.post(path)
        assert (response.status, (await refusal(response))["message"]) == (
            400,
            "pod default/web-x belongs to DaemonSet web, which no longer exists",
        )

    assert api.writes == []


@ACTIONS
@pytest.mark.parametrize(
    ("conditions", "seen"), [([], "absent"), ([need_upgrade("False")], "False")]
)
async def test_pod_without_an_upgrade_is_409(
    path: str, conditions: list[dict[str, str]], seen: str
) -> None:
    api = cluster(ota_pod(conditions=conditions))

    assert await posted_refusal(api, path) == refused(
        409,
        "NoUpgradeAvailable",
        f"pod default/web-x has no newer version: its PodNeedUpgrade "
        f"condition is {seen}, expected True",
    )

    assert api.writes == []


@pytest.mark.parametrize(
    ("reason", "state"), [("WaitPullImage", "not finished yet"), ("PullImageFail", "failed")]
)
async def test_upgrade_while_the_pre_pull_is_not_done_is_409(reason: str, state: str) -> None:
    api = cluster(ota_pod(conditions=[need_upgrade(), image_ready("False", reason)]))

    assert await posted_refusal(api, UPGRADE) == refused(
        409,
        "ImagePullNotDone",
        "the image pre-pull requested for pod default/web-x (revision "
        f"hash-new) has {state} (PodImageReady=False, reason {reason}); upgrade once "
        "it has succeeded",
    )

    assert api.writes == []


PAUSED = {STRATEGY: "OTA", PAUSED_ANNOTATION: "true"}
PAUSED_MESSAGE = (
    'the rollout of DaemonSet default/web is paused (edgerollout.io/paused: "true"), so pod '
    "default/web-x is not upgraded; to continue: edgerollout resume web -n default"
)


async def test_upgrade_while_the_rollout_is_paused_is_409_and_deletes_nothing() -> None:
    api = cluster(ota_pod(), strategy=PAUSED)

    assert await posted_refusal(api, UPGRADE) == refused(409, "RolloutPaused", PAUSED_MESSAGE)

    assert reads(api) == [("get", "pods"), ("get", "daemonsets")]
    assert api.stored(PODS, POD, namespace="default") is not None


async def test_a_paused_rollout_is_named_before_a_pre_pull_that_is_not_done() -> None:
    pulling = ota_pod(conditions=[need_upgrade(), image_ready("False", "WaitPullImage")])
    api = cluster(pulling, strategy=PAUSED)

    async with serving(agent(api)) as client:
        response = await client.post(UPGRADE)
        assert (response.status, (await refusal(response))["reason"]) == (409, "RolloutPaused")

    assert api.writes == []


async def test_imagepull_while_the_rollout_is_paused_requests_the_pre_pull() -> None:
    api = cluster(ota_pod(), strategy=PAUSED)

    async with serving(agent(api)) as client:
        response = await client.post(IMAGEPULL)
        assert (response.status, await response.text()) == (
            200,
            "Image pre-pull requested for pod default/web-x",
        )

    (write,) = api.writes
    assert (write.verb, write.params["subresource"]) == ("patch", "status")


async def test_upgrade_once_the_pause_is_lifted_deletes_the_pod() -> None:
    api = cluster(ota_pod(), strategy={STRATEGY: "OTA", PAUSED_ANNOTATION: "false"})

    async with serving(agent(api)) as client:
        response = await client.post(UPGRADE)
        assert (response.status, await response.text()) == (200, "Start updating pod default/web-x")

    assert [call.verb for call in api.writes] == ["delete"]


async def test_imagepull_of_a_pod_whose_mark_names_no_revision_is_409() -> None:
    unnamed = {**need_upgrade(), "message": "an upgrade is available"}
    api = cluster(ota_pod(conditions=[unnamed]))

    assert await posted_refusal(api, IMAGEPULL) == refused(
        409, "NoUpgradeAvailable", "pod default/web-x names no newer revision yet"
    )

    assert api.writes == []


async def test_upgrade_of_a_pod_replaced_meanwhile_is_409_pod_changed() -> None:
    api = cluster(ota_pod())
    api.fail("delete", PODS, conflict(PODS, POD, "Precondition failed: UID in precondition"))

    assert await posted_refusal(api, UPGRADE) == refused(
        409,
        "PodChanged",
        "pod default/web-x changed while it was being upgraded; list the pods again",
    )


@pytest.mark.parametrize(
    ("error", "code", "reason"),
    [
        (ApiError(403, "Forbidden", "denied by edgerollout-agent-own-node"), 403, "Forbidden"),
        (ApiError(500, "InternalError", "etcd is unhappy"), 502, "InternalError"),
        (ApiError(429, "TooManyRequests", "slow down"), 502, "TooManyRequests"),
    ],
)
async def test_other_api_server_refusals_are_passed_on(
    error: ApiError, code: int, reason: str
) -> None:
    api = cluster(ota_pod())
    api.fail("delete", PODS, error)

    assert await posted_refusal(api, UPGRADE, token=TOKEN, headers=AUTHORIZED) == refused(
        code, reason, f"the API server refused: {error.message}"
    )


# --- the cloud is unreachable -----------------------------------------------------------------


@ACTIONS
@pytest.mark.parametrize("resource", [PODS, DAEMONSETS], ids=["pod", "daemonset"])
async def test_unreachable_api_server_is_503_and_nothing_is_written(
    path: str, resource: Resource
) -> None:
    api = cluster(ota_pod())
    api.fail("get", resource, unreachable("cannot connect to 127.0.0.1:6443: Connection refused"))

    assert await posted_refusal(api, path, token=TOKEN, headers=AUTHORIZED) == refused(
        503,
        "CloudUnreachable",
        "the API server cannot be reached from node edge-2 (cannot connect to "
        "127.0.0.1:6443: Connection refused); nothing was changed, try again once the "
        "link is back",
    )

    assert api.writes == []


@ACTIONS
async def test_api_server_that_does_not_answer_is_503_within_the_cloud_timeout(path: str) -> None:
    api = HangingApi(hang=30)
    api.put(DAEMONSETS, daemonset_json(annotations={STRATEGY: "OTA"}))
    api.put(PODS, ota_pod())
    started = time.monotonic()

    async with serving(agent(api, token=TOKEN, cloud_timeout=0.3)) as client:
        response = await client.post(path, headers=AUTHORIZED)
        elapsed = time.monotonic() - started
        assert (response.status, await refusal(response)) == refused(
            503,
            "CloudUnreachable",
            "the API server cannot be reached from node edge-2 (did not answer "
            "in time); nothing was changed, try again once the link is back",
        )

    assert 0.3 <= elapsed < 1.5
    assert api.writes == []
