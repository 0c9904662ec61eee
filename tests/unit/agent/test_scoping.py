"""The node-scoping probe (design §8.3): which answers prove the admission policy is in force."""

from __future__ import annotations

from typing import Any

import pytest

from edgerollout.agent.scoping import (
    NOT_PROVEN_YET,
    NodeScoping,
    ScopingProbe,
    Verdict,
    judge_probe,
)
from edgerollout.domain.events import EVENT_MESSAGE_LIMIT
from edgerollout.kube.api import EVENTS, PODS, ApiError
from tests.unit.kube.fake_api import FakeApi, unreachable

from .harness import NODE, ota_pod

DENIED = ApiError(
    422,
    "Invalid",
    "pods \"web-x\" is forbidden: ValidatingAdmissionPolicy 'edgerollout-agent-own-node' with "
    "binding 'edgerollout-agent-own-node' denied request: the agent may only change PodImageReady",
)
ACCEPTED = Verdict(
    False,
    "the API server accepted a status patch that the admission policy edgerollout-agent-own-node "
    "must deny: the policy or its binding is missing",
)
PROVEN = Verdict(True, "the admission policy edgerollout-agent-own-node is in force")


@pytest.mark.parametrize(
    ("answer", "verdict"),
    [
        (None, ACCEPTED),
        (DENIED, PROVEN),
        (ApiError(403, "Forbidden", "denied by edgerollout-agent-own-node"), PROVEN),
        (
            ApiError(403, "Forbidden", "cannot patch resource pods/status"),
            Verdict(
                False,
                "the API server refused the probe with 403 Forbidden without naming the "
                "admission policy edgerollout-agent-own-node: cannot patch resource pods/status",
            ),
        ),
        (unreachable(), None),
        (ApiError(500, "InternalError", "etcd"), None),
        (ApiError(404, "NotFound", 'pods "web-x" not found'), None),
    ],
)
def test_probe_answers_and_their_verdicts(answer: ApiError | None, verdict: Verdict | None) -> None:
    assert judge_probe(answer) == verdict


def test_scoping_is_not_proven_until_a_probe_says_so() -> None:
    assert NodeScoping().verdict == Verdict(False, NOT_PROVEN_YET)


async def test_a_denied_probe_proves_scoping_and_was_a_dry_run_label_patch_of_status() -> None:
    api = FakeApi()
    api.put(PODS, ota_pod())
    api.fail("patch", PODS, DENIED)
    scoping = NodeScoping()

    verdict = await ScopingProbe(api, scoping, node_name=NODE).check([ota_pod()])

    assert (verdict, scoping.verdict) == (PROVEN, PROVEN)
    assert [(c.verb, c.name, c.namespace, c.body, c.params) for c in api.calls] == [
        (
            "patch",
            "web-x",
            "default",
            {"metadata": {"labels": {"edgerollout.io/scoping-probe": "true"}}},
            {
                "subresource": "status",
                "content_type": "application/strategic-merge-patch+json",
                "dry_run": True,
            },
        ),
        # No pod on another node: the node rule has nothing to be tried on.
        (
            "list",
            None,
            None,
            None,
            {
                "limit": 1,
                "continue_token": None,
                "field_selector": f"spec.nodeName!={NODE}",
                "label_selector": None,
            },
        ),
    ]


PODS_THERE = ("web-x", "web-y")


def _elsewhere() -> dict[str, Any]:
    return ota_pod("web-y", node="edge-9")


def _two_nodes() -> FakeApi:
    """An API server holding this node's pod and a pod on another node (`_elsewhere`)."""
    api = FakeApi()
    for pod in (ota_pod(), _elsewhere()):
        api.put(PODS, pod)
    return api


async def test_the_node_rule_is_tried_with_a_dry_run_delete_of_a_pod_on_another_node() -> None:
    api = _two_nodes()
    api.fail("patch", PODS, DENIED)
    api.fail("delete", PODS, DENIED)
    scoping = NodeScoping()

    verdict = await ScopingProbe(api, scoping, node_name=NODE).check([ota_pod()])

    assert (verdict, scoping.verdict) == (PROVEN, PROVEN)
    (delete,) = [c for c in api.calls if c.verb == "delete"]
    uid = _elsewhere()["metadata"]["uid"]
    assert (delete.name, delete.namespace, delete.params) == (
        "web-y",
        "default",
        {"uid": uid, "propagation": None, "dry_run": True},
    )
    assert [api.stored(PODS, name, namespace="default") is not None for name in PODS_THERE] == [
        True,
        True,
    ]


async def test_a_delete_on_another_node_accepted_withdraws_scoping_naming_that_pod() -> None:
    api = _two_nodes()
    api.fail("patch", PODS, DENIED)
    scoping = NodeScoping(enforced=True, detail="proven earlier")

    verdict = await ScopingProbe(api, scoping, node_name=NODE).check([ota_pod()])

    expected = Verdict(
        False,
        "the API server accepted a delete of default/web-y, a pod on edge-9, that the admission "
        "policy edgerollout-agent-own-node must deny: the policy or its binding is missing",
    )
    assert (verdict, scoping.verdict) == (expected, expected)
    assert [c.resource for c in api.calls].count(EVENTS) == 1
    assert [api.stored(PODS, name, namespace="default") is not None for name in PODS_THERE] == [
        True,
        True,
    ]


async def test_without_an_answer_from_the_node_rule_the_status_rule_decides() -> None:
    api = _two_nodes()
    api.fail("patch", PODS, DENIED)
    api.fail("delete", PODS, unreachable())

    verdict = await ScopingProbe(api, NodeScoping(), node_name=NODE).check([ota_pod()])

    assert verdict == PROVEN


async def test_an_accepted_status_probe_is_the_verdict_without_trying_the_node_rule() -> None:
    api = _two_nodes()

    verdict = await ScopingProbe(api, NodeScoping(), node_name=NODE).check([ota_pod()])

    assert verdict == ACCEPTED
    assert [c.verb for c in api.calls] == ["patch", "create"]


async def test_an_accepted_probe_withdraws_scoping_and_reports_one_warning_event() -> None:
    api = FakeApi()
    api.put(PODS, ota_pod())
    scoping = NodeScoping(enforced=True, detail="proven earlier")
    probe = ScopingProbe(api, scoping, node_name=NODE)

    await probe.check([ota_pod()])
    await probe.check([ota_pod()])

    assert scoping.verdict == ACCEPTED
    events = [call.body for call in api.calls if call.resource == EVENTS]
    assert len(events) == 1
    event = events[0]
    assert event is not None
    assert (event["type"], event["reason"], event["involvedObject"], event["message"]) == (
        "Warning",
        "NodeScopingNotEnforced",
        {"apiVersion": "v1", "kind": "Node", "name": NODE},
        f"the edgerollout agent refuses every change: {ACCEPTED.detail}",
    )


@pytest.mark.parametrize("pods", [[], [ota_pod()]], ids=["no-pod", "unreachable"])
async def test_without_an_answer_the_last_verdict_stands(pods: list[dict[str, object]]) -> None:
    api = FakeApi()
    api.fail("patch", PODS, unreachable())
    scoping = NodeScoping(enforced=True, detail="proven earlier")

    verdict = await ScopingProbe(api, scoping, node_name=NODE).check(pods)

    assert (verdict, scoping.verdict) == (None, Verdict(True, "proven earlier"))


async def test_the_warning_event_message_is_cut_to_what_the_events_policy_admits() -> None:
    api = FakeApi()
    api.put(PODS, ota_pod())
    api.fail("patch", PODS, ApiError(403, "Forbidden", "x" * 5000))
    probe = ScopingProbe(api, NodeScoping(enforced=True, detail="proven earlier"), node_name=NODE)

    await probe.check([ota_pod()])

    (event,) = [call.body for call in api.calls if call.resource == EVENTS]
    assert event is not None
    assert len(event["message"]) == EVENT_MESSAGE_LIMIT
    assert event["message"].startswith("the edgerollout agent refuses every change: the API ")
    assert event["message"].endswith("x... (4162 more characters)")


async def test_the_pod_elsewhere_is_listed_once_and_looked_for_again_once_gone() -> None:
    api = _two_nodes()
    api.fail("patch", PODS, DENIED, times=None)
    api.fail("delete", PODS, DENIED, times=2)
    probe = ScopingProbe(api, NodeScoping(), node_name=NODE)

    proven = [await probe.check([ota_pod()]) for _ in range(2)]
    api.remove(PODS, "web-y", namespace="default")
    gone = await probe.check([ota_pod()])
    looked_again = await probe.check([ota_pod()])

    assert (proven, gone, looked_again) == ([PROVEN, PROVEN], PROVEN, PROVEN)
    assert [c.verb for c in api.calls if c.verb in ("list", "delete")] == [
        "list",
        "delete",
        "delete",
        "delete",
        "list",
    ]
