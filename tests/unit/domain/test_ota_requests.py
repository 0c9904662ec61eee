"""The checks before a node's OTA request is carried out (design §8.2, §6), first "no" wins."""

from __future__ import annotations

import dataclasses

import pytest

from edgerollout.domain.model import Condition, ConditionStatus
from edgerollout.domain.planning.ota_requests import (
    Action,
    PodFacts,
    Refusal,
    check_names,
    judge_pod,
    judge_request,
    newest_revision,
    not_ota,
)

NODE = "edge-2"
NEWEST = "7b9c5d6f4"
OLDER = "5d4c8b9a1"
TRUE = ConditionStatus.TRUE
FALSE = ConditionStatus.FALSE
UNKNOWN = ConditionStatus.UNKNOWN


def need_upgrade(status: ConditionStatus = TRUE, revision: str = NEWEST) -> Condition:
    return Condition(
        type="PodNeedUpgrade", status=status, message=f"controllerrevision: {revision}"
    )


def image_ready(status: ConditionStatus, reason: str, revision: str = NEWEST) -> Condition:
    return Condition(
        type="PodImageReady",
        status=status,
        reason=reason,
        message=f"controllerrevision: {revision}",
    )


def facts(
    *,
    node: str | None = NODE,
    deleting: bool = False,
    owner_kind: str | None = "DaemonSet",
    owner_name: str | None = "nginx-daemonset",
    conditions: tuple[Condition, ...] = (need_upgrade(),),
) -> PodFacts:
    """This node's running pod of an OTA DaemonSet with an upgrade available, unless told."""
    return PodFacts(
        namespace="default",
        name="nginx-daemonset-bwzss",
        node_name=node,
        deleting=deleting,
        owner_kind=owner_kind,
        owner_name=owner_name,
        conditions={condition.type: condition for condition in conditions},
    )


# --- names ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("namespace", "name"),
    [
        ("default", "nginx-daemonset-bwzss"),
        ("a", "b"),
        ("0", "9"),
        ("kube-system", "web.example-1.x"),
        ("n" * 63, "p" * 253),
        ("n" * 63, ".".join(["p" * 63] * 4)[:253]),
    ],
)
def test_dns_1123_names_pass(namespace: str, name: str) -> None:
    assert check_names(namespace, name) is None


@pytest.mark.parametrize(
    "namespace",
    [
        "",
        "Default",
        "kube_system",
        "-default",
        "default-",
        "web.example",
        "n" * 64,
        "déjà",
        "a b",
        "%2F",
    ],
)
def test_namespace_that_is_not_a_dns_1123_label_is_invalid(namespace: str) -> None:
    assert check_names(namespace, "web") == Refusal(
        400,
        "InvalidName",
        f"namespace {namespace!r} is not a DNS-1123 label (lower-case letters, digits and '-', "
        "starting and ending with a letter or digit, at most 63 characters)",
    )


@pytest.mark.parametrize(
    "name",
    ["", "Web", "web_1", "-web", "web-", ".web", "web.", "web..x", "p" * 254, "web/x", "wéb"],
)
def test_pod_name_that_is_not_a_dns_1123_subdomain_is_invalid(name: str) -> None:
    assert check_names("default", name) == Refusal(
        400,
        "InvalidName",
        f"pod name {name!r} is not a DNS-1123 subdomain (lower-case letters, digits, '-' and "
        "'.', starting and ending with a letter or digit, at most 253 characters)",
    )


def test_namespace_is_checked_before_the_pod_name() -> None:
    refusal = check_names("Bad_NS", "Bad_Pod")
    assert refusal is not None
    assert refusal.message.startswith("namespace 'Bad_NS' ")


@pytest.mark.parametrize(("namespace", "name"), [("default\n", "web"), ("default", "web\n")])
def test_names_with_a_trailing_newline_are_invalid(namespace: str, name: str) -> None:
    refusal = check_names(namespace, name)
    assert refusal is not None
    assert (refusal.code, refusal.reason) == (400, "InvalidName")


# --- the pod --------------------------------------------------------------------------------


def test_this_nodes_running_pod_of_a_daemonset_passes() -> None:
    assert judge_pod(facts(), node_name=NODE) is None


def test_pod_bound_to_another_node_is_forbidden() -> None:
    assert judge_pod(facts(node="edge-1"), node_name=NODE) == Refusal(
        403,
        "PodOnAnotherNode",
        "pod default/nginx-daemonset-bwzss is bound to node edge-1, not to this node edge-2: "
        "a node may only act on its own pods",
    )


def test_pod_bound_to_no_node_is_forbidden() -> None:
    refusal = judge_pod(facts(node=None), node_name=NODE)
    assert refusal is not None
    assert (refusal.code, refusal.reason) == (403, "PodOnAnotherNode")
    assert "is bound to node (none), not to this node edge-2" in refusal.message


def test_terminating_pod_is_a_conflict() -> None:
    assert judge_pod(facts(deleting=True), node_name=NODE) == Refusal(
        409, "PodTerminating", "pod default/nginx-daemonset-bwzss is already terminating"
    )


def test_pod_owned_by_another_kind_is_not_an_ota_pod() -> None:
    assert judge_pod(facts(owner_kind="ReplicaSet", owner_name="web-5d4c8"), node_name=NODE) == (
        Refusal(
            400,
            "NotAnOTAPod",
            "pod default/nginx-daemonset-bwzss is owned by ReplicaSet web-5d4c8, not by a "
            "DaemonSet with the OTA update strategy",
        )
    )


def test_pod_without_a_controller_is_not_an_ota_pod() -> None:
    assert judge_pod(facts(owner_kind=None, owner_name=None), node_name=NODE) == Refusal(
        400,
        "NotAnOTAPod",
        "pod default/nginx-daemonset-bwzss is owned by no controller, not by a DaemonSet with "
        "the OTA update strategy",
    )


def test_pod_of_a_daemonset_without_a_name_is_not_an_ota_pod() -> None:
    refusal = judge_pod(facts(owner_name=""), node_name=NODE)
    assert refusal is not None
    assert (refusal.code, refusal.reason) == (400, "NotAnOTAPod")


def test_another_node_is_reported_before_terminating_and_owner() -> None:
    refusal = judge_pod(
        facts(node="edge-1", deleting=True, owner_kind=None, owner_name=None), node_name=NODE
    )
    assert refusal is not None
    assert refusal.reason == "PodOnAnotherNode"


def test_terminating_is_reported_before_the_owner() -> None:
    refusal = judge_pod(facts(deleting=True, owner_kind=None, owner_name=None), node_name=NODE)
    assert refusal is not None
    assert refusal.reason == "PodTerminating"


def test_not_ota_names_the_daemonset_and_why() -> None:
    assert not_ota(facts(), "does not use the OTA update strategy") == Refusal(
        400,
        "NotAnOTAPod",
        "pod default/nginx-daemonset-bwzss belongs to DaemonSet nginx-daemonset, which does not "
        "use the OTA update strategy",
    )


# --- the conditions -------------------------------------------------------------------------


@pytest.mark.parametrize("action", list(Action))
def test_pod_with_an_upgrade_available_passes(action: Action) -> None:
    assert judge_request(facts(), action) is None


@pytest.mark.parametrize("action", list(Action))
def test_pod_without_a_need_upgrade_condition_has_no_upgrade(action: Action) -> None:
    assert judge_request(facts(conditions=()), action) == Refusal(
        409,
        "NoUpgradeAvailable",
        "pod default/nginx-daemonset-bwzss has no newer version: its PodNeedUpgrade condition "
        "is absent, expected True",
    )


@pytest.mark.parametrize("action", list(Action))
@pytest.mark.parametrize("status", [FALSE, UNKNOWN])
def test_pod_whose_need_upgrade_is_not_true_has_no_upgrade(
    action: Action, status: ConditionStatus
) -> None:
    assert judge_request(facts(conditions=(need_upgrade(status),)), action) == Refusal(
        409,
        "NoUpgradeAvailable",
        f"pod default/nginx-daemonset-bwzss has no newer version: its PodNeedUpgrade condition "
        f"is {status}, expected True",
    )


def upgrade_while_pulling(reason: str) -> Refusal | None:
    """An upgrade asked for while the newest revision's pre-pull is PodImageReady=False `reason`."""
    pulling = facts(conditions=(need_upgrade(), image_ready(FALSE, reason)))
    return judge_request(pulling, Action.UPGRADE)


def pull_not_done(outcome: str, reason: str) -> Refusal:
    return Refusal(
        409,
        "ImagePullNotDone",
        "the image pre-pull requested for pod default/nginx-daemonset-bwzss (revision "
        f"{NEWEST}) {outcome} (PodImageReady=False, reason {reason}); "
        "upgrade once it has succeeded",
    )


def test_upgrade_is_held_back_while_the_pre_pull_of_the_newest_revision_is_pending() -> None:
    assert upgrade_while_pulling("WaitPullImage") == pull_not_done(
        "has not finished yet", "WaitPullImage"
    )


def test_upgrade_is_held_back_when_the_pre_pull_of_the_newest_revision_failed() -> None:
    assert upgrade_while_pulling("PullImageFail") == pull_not_done("has failed", "PullImageFail")


def test_pre_pull_in_an_unknown_state_holds_the_upgrade_back() -> None:
    unknown = facts(conditions=(need_upgrade(), image_ready(UNKNOWN, "")))
    refusal = judge_request(unknown, Action.UPGRADE)
    assert refusal is not None
    assert (refusal.code, refusal.reason) == (409, "ImagePullNotDone")
    assert "(PodImageReady=Unknown, reason none)" in refusal.message


def test_upgrade_passes_once_the_pre_pull_of_the_newest_revision_succeeded() -> None:
    pulled = facts(conditions=(need_upgrade(), image_ready(TRUE, "PullImageSuccess")))
    assert judge_request(pulled, Action.UPGRADE) is None


@pytest.mark.parametrize("reason", ["WaitPullImage", "PullImageFail"])
def test_pre_pull_of_an_older_revision_does_not_hold_the_upgrade_back(reason: str) -> None:
    stale = facts(conditions=(need_upgrade(), image_ready(FALSE, reason, revision=OLDER)))
    assert judge_request(stale, Action.UPGRADE) is None


@pytest.mark.parametrize("reason", ["WaitPullImage", "PullImageFail"])
def test_pending_or_failed_pre_pull_does_not_stop_asking_for_another(reason: str) -> None:
    again = facts(conditions=(need_upgrade(), image_ready(FALSE, reason)))
    assert judge_request(again, Action.IMAGE_PULL) is None


def test_no_upgrade_is_reported_before_a_pending_pre_pull() -> None:
    current = facts(conditions=(need_upgrade(FALSE), image_ready(FALSE, "WaitPullImage")))
    refusal = judge_request(current, Action.UPGRADE)
    assert refusal is not None
    assert refusal.reason == "NoUpgradeAvailable"


def test_newest_revision_is_the_one_named_by_need_upgrade() -> None:
    assert newest_revision(facts()) == NEWEST
    assert newest_revision(facts(conditions=())) is None
    unnamed = dataclasses.replace(need_upgrade(), message="")
    assert newest_revision(facts(conditions=(unnamed,))) is None
