"""The hold verb (design §8.4): what the agent writes to take and lift a hold, and when it refuses."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from edgerollout.agent.scoping import NodeScoping
from edgerollout.domain.vocabulary import MAX_HOLD_ANNOTATION, PAUSED_ANNOTATION, UPGRADE_HELD
from edgerollout.kube.api import PODS, STRATEGIC_MERGE, ApiError
from tests.unit.kube.fake_api import JSON, FakeApi
from tests.unit.kube.objects import ADVANCED, STRATEGY, pod_json

from .harness import (
    HOLD,
    OTA,
    POD,
    agent,
    cluster,
    ota_pod,
    refusal,
    refused,
    serving,
)


def utc(text: str) -> datetime:
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)


def rfc3339(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


# Within max-hold of any moment the tests run at.
IN_TWO_HOURS = rfc3339(datetime.now(UTC) + timedelta(hours=2))


def standing_hold(*, until: datetime, asked: datetime, why: str = "shop open") -> JSON:
    return {
        "type": UPGRADE_HELD,
        "status": "True",
        "reason": "NodeAsked",
        "message": f"until {rfc3339(until)}, asked at {rfc3339(asked)}: {why}",
        "lastTransitionTime": rfc3339(asked),
    }


async def take(api: FakeApi, body: Any, *, raw: bytes | None = None) -> tuple[int, Any]:
    """POST a hold: the status, and the text of a success or the body of a refusal."""
    async with serving(agent(api)) as client:
        if raw is not None:
            response = await client.post(HOLD, data=raw)
        else:
            response = await client.post(HOLD, json=body)
        if response.status == 200:
            return response.status, await response.text()
        return response.status, await refusal(response)


def written(api: FakeApi) -> JSON:
    """The one condition the agent patched, checked to be a strategic-merge patch of
    `pods/status` on default/web-x preconditioned on its UID."""
    (write,) = api.writes
    assert (write.verb, write.resource, write.name, write.namespace) == (
        "patch",
        PODS,
        POD,
        "default",
    )
    assert (write.params["subresource"], write.params["content_type"]) == (
        "status",
        STRATEGIC_MERGE,
    )
    assert write.body is not None
    assert write.body["metadata"] == {"uid": "uid-web-x"}
    (condition,) = write.body["status"]["conditions"]
    assert sorted(write.body) == ["metadata", "status"]
    return dict(condition)


# --- taking a hold --------------------------------------------------------------------------


async def test_a_hold_until_a_time_is_written_as_the_upgrade_held_condition() -> None:
    api = cluster(ota_pod())
    before = datetime.now(UTC).replace(microsecond=0)

    status, text = await take(api, {"until": IN_TWO_HOURS, "reason": "a car driving"})

    assert (status, text) == (200, f"Upgrade of pod default/web-x held until {IN_TWO_HOURS}")
    condition = written(api)
    asked = utc(condition.pop("lastTransitionTime"))
    assert before <= asked <= datetime.now(UTC)
    assert condition == {
        "type": "edgerollout.io/UpgradeHeld",
        "status": "True",
        "reason": "NodeAsked",
        "message": f"until {IN_TWO_HOURS}, asked at {rfc3339(asked)}: a car driving",
    }


async def test_a_hold_for_a_duration_ends_that_long_from_now() -> None:
    api = cluster(ota_pod())
    before = datetime.now(UTC).replace(microsecond=0)

    status, text = await take(api, {"for": "2h", "reason": "shop open"})

    assert status == 200
    until = utc(text.removeprefix("Upgrade of pod default/web-x held until "))
    assert before + timedelta(hours=2) <= until <= datetime.now(UTC) + timedelta(hours=2)
    assert written(api)["message"].startswith(f"until {rfc3339(until)}, asked at ")


async def test_a_hold_asked_again_keeps_when_it_was_first_asked() -> None:
    asked = datetime.now(UTC).replace(microsecond=0) - timedelta(hours=3)
    standing = standing_hold(until=asked + timedelta(hours=4), asked=asked)
    api = cluster(ota_pod(conditions=[standing]))
    until = rfc3339(asked + timedelta(hours=20))

    assert await take(api, {"until": until, "reason": "still driving"}) == (
        200,
        f"Upgrade of pod default/web-x held until {until}",
    )
    assert written(api) == {
        "type": UPGRADE_HELD,
        "status": "True",
        "reason": "NodeAsked",
        "message": f"until {until}, asked at {rfc3339(asked)}: still driving",
        "lastTransitionTime": rfc3339(asked),
    }


async def test_a_hold_is_taken_on_an_advanced_rolling_update_pod_and_while_paused() -> None:
    for strategy in (ADVANCED, {**OTA, PAUSED_ANNOTATION: "true"}):
        api = cluster(ota_pod(), strategy=strategy)
        status, _ = await take(api, {"until": IN_TWO_HOURS, "reason": "x"})
        assert status == 200
        assert written(api)["status"] == "True"


async def test_a_hold_past_max_hold_is_refused_and_nothing_is_written() -> None:
    api = cluster(ota_pod(), strategy={**OTA, MAX_HOLD_ANNOTATION: "1h"})

    status, body = await take(api, {"for": "2h", "reason": "x"})

    assert (status, body["reason"]) == (400, "HoldTooLong")
    assert body["message"].startswith("a hold of pod default/web-x until ")
    assert body["message"].endswith("(max-hold counted from now)")
    assert "is longer than edgerollout.io/max-hold allows: at most until " in body["message"]
    assert api.writes == []


async def test_a_renewal_past_max_hold_from_the_first_ask_is_refused() -> None:
    asked = datetime.now(UTC).replace(microsecond=0) - timedelta(hours=20)
    standing = standing_hold(until=asked + timedelta(hours=21), asked=asked)
    api = cluster(ota_pod(conditions=[standing]))

    status, body = await take(api, {"for": "5h", "reason": "x"})

    assert (status, body["reason"]) == (400, "HoldTooLong")
    assert body["message"].endswith(
        f"at most until {rfc3339(asked + timedelta(hours=24))} "
        f"(max-hold counted from the hold standing since {rfc3339(asked)})"
    )
    assert api.writes == []


async def test_an_unreadable_max_hold_refuses_every_hold() -> None:
    api = cluster(ota_pod(), strategy={**OTA, MAX_HOLD_ANNOTATION: "a day"})

    assert await take(api, {"for": "1h", "reason": "x"}) == refused(
        409,
        "InvalidMaxHold",
        'the DaemonSet default/web of pod default/web-x sets edgerollout.io/max-hold to "a day", '
        "which is not a Go duration longer than zero: how long a hold may last is not known, so "
        "none is taken until it is fixed",
    )
    assert api.writes == []


@pytest.mark.parametrize(
    ("body", "says"),
    [
        ([], "the body is not a JSON object"),
        ({"until": IN_TWO_HOURS}, '"reason" must say why'),
        ({"until": IN_TWO_HOURS, "reason": "  "}, '"reason" must say why'),
        ({"until": IN_TWO_HOURS, "reason": 7}, '"reason" must say why'),
        ({"until": IN_TWO_HOURS, "reason": "a\nb"}, "without control characters"),
        ({"until": IN_TWO_HOURS, "reason": "x" * 257}, "at most 256 printable characters"),
        ({"reason": "x"}, 'give either "until" or "for"'),
        ({"until": IN_TWO_HOURS, "for": "1h", "reason": "x"}, 'give either "until" or "for"'),
        ({"until": IN_TWO_HOURS, "reason": "x", "node": "edge-1"}, "unknown field node"),
        ({"until": "tomorrow", "reason": "x"}, "\"until\" is 'tomorrow', not an RFC 3339 time"),
        ({"until": 1700000000, "reason": "x"}, '"until" is 1700000000, not an RFC 3339 time'),
        ({"until": "2000-01-01T00:00:00Z", "reason": "x"}, "which is not in the future"),
        ({"for": "1d", "reason": "x"}, "\"for\" is '1d', not a Go duration longer than zero"),
        ({"for": "-1h", "reason": "x"}, "\"for\" is '-1h', not a Go duration longer than zero"),
    ],
)
async def test_a_body_that_does_not_say_until_when_and_why_is_refused_writing_nothing(
    body: Any, says: str
) -> None:
    api = cluster(ota_pod())

    status, answer = await take(api, body)

    assert (status, answer["reason"]) == (400, "InvalidHold")
    assert says in answer["message"]
    assert [(call.verb, call.resource.plural) for call in api.calls] == [
        ("get", "pods"),
        ("get", "daemonsets"),
    ]


async def test_a_body_that_is_not_json_is_refused_writing_nothing() -> None:
    api = cluster(ota_pod())
    assert await take(api, None, raw=b"until=tomorrow") == refused(
        400, "InvalidHold", "the body is not JSON: expected {until, reason}"
    )
    assert api.writes == []


async def test_the_pod_is_judged_before_the_body() -> None:
    api = cluster(ota_pod(node="edge-1"))
    status, answer = await take(api, None, raw=b"not json")
    assert (status, answer["reason"]) == (403, "PodOnAnotherNode")


@pytest.mark.parametrize(
    ("pods", "strategy", "expected"),
    [
        (
            [],
            None,
            refused(404, "PodNotFound", "pod default/web-x does not exist"),
        ),
        (
            [ota_pod(node="edge-1")],
            None,
            refused(
                403,
                "PodOnAnotherNode",
                "pod default/web-x is bound to node edge-1, not to this node edge-2: a node may "
                "only act on its own pods",
            ),
        ),
        (
            [ota_pod(deleting=True)],
            None,
            refused(409, "PodTerminating", "pod default/web-x is already terminating"),
        ),
        (
            [ota_pod(owner_uid=None)],
            None,
            refused(
                400,
                "NotOptedIn",
                "pod default/web-x is owned by nothing, not by a DaemonSet, so edgerollout does "
                "not upgrade it and there is nothing to hold",
            ),
        ),
        (
            [pod_json(POD, node="edge-2", owner_kind="ReplicaSet")],
            None,
            refused(
                400,
                "NotOptedIn",
                "pod default/web-x is owned by ReplicaSet web, not by a DaemonSet, so edgerollout "
                "does not upgrade it and there is nothing to hold",
            ),
        ),
        (
            [ota_pod()],
            {STRATEGY: "Canary"},
            refused(
                400,
                "NotOptedIn",
                "pod default/web-x belongs to DaemonSet web, which edgerollout does not roll out "
                "(no runnable update-strategy annotation, or not OnDelete), so edgerollout does "
                "not upgrade it and there is nothing to hold",
            ),
        ),
    ],
    ids=["missing", "another-node", "terminating", "no-owner", "replicaset", "not-opted-in"],
)
async def test_a_pod_that_is_not_this_nodes_opted_in_pod_is_refused_for_hold_and_lift(
    pods: list[JSON], strategy: dict[str, str] | None, expected: tuple[int, JSON]
) -> None:
    for method in ("POST", "DELETE"):
        api = cluster(*pods, strategy=strategy)
        async with serving(agent(api)) as client:
            body = {"for": "1h", "reason": "x"} if method == "POST" else None
            response = await client.request(method, HOLD, json=body)
            assert (response.status, await refusal(response)) == expected
        assert api.writes == []


async def test_a_policy_from_before_holds_refuses_the_write_and_the_agent_says_so() -> None:
    api = cluster(ota_pod())
    denied = ApiError(
        403,
        "Forbidden",
        "pods \"web-x\" is forbidden: ValidatingAdmissionPolicy 'edgerollout-agent-own-node' "
        "with binding 'edgerollout-agent-own-node' denied request: the edgerollout agent's "
        "status update may only change the PodImageReady condition",
    )
    api.fail("patch", PODS, denied)

    assert await take(api, {"for": "1h", "reason": "x"}) == refused(
        503,
        "HoldNotAdmitted",
        "the admission policy edgerollout-agent-own-node does not let this agent write the "
        "edgerollout.io/UpgradeHeld condition (it was installed before holds existed): nothing "
        "was changed; install the agent's identity of this release (the Helm chart, or "
        "deploy/base)",
    )


# --- lifting a hold -------------------------------------------------------------------------


async def test_lifting_a_hold_writes_it_false_with_when() -> None:
    asked = datetime.now(UTC).replace(microsecond=0) - timedelta(hours=1)
    api = cluster(
        ota_pod(conditions=[standing_hold(until=asked + timedelta(hours=5), asked=asked)])
    )
    before = datetime.now(UTC).replace(microsecond=0)

    async with serving(agent(api)) as client:
        response = await client.delete(HOLD)
        assert (response.status, await response.text()) == (200, "Hold on pod default/web-x lifted")

    condition = written(api)
    lifted = condition.pop("lastTransitionTime")
    assert before <= utc(lifted) <= datetime.now(UTC)
    assert condition == {
        "type": UPGRADE_HELD,
        "status": "False",
        "reason": "HoldLifted",
        "message": f"lifted at {lifted}",
    }


async def test_lifting_a_pod_that_holds_nothing_changes_nothing() -> None:
    api = cluster(ota_pod())

    async with serving(agent(api)) as client:
        response = await client.delete(HOLD)
        assert (response.status, await response.text()) == (200, "Hold on pod default/web-x lifted")

    assert api.writes == []


async def test_without_proven_node_scoping_a_hold_is_503_and_nothing_is_asked() -> None:
    api = cluster(ota_pod())
    subject = agent(api)
    subject.scoping = NodeScoping(enforced=False, detail="the policy binding is missing")

    async with serving(subject) as client:
        for method in ("POST", "DELETE"):
            response = await client.request(method, HOLD, json={"for": "1h", "reason": "x"})
            assert (response.status, await refusal(response)) == refused(
                503,
                "NodeScopingNotEnforced",
                "the API server is not proven to confine this agent to its node, so it changes "
                "nothing: the policy binding is missing",
            )

    assert api.calls == []
