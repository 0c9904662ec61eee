"""A paused rollout refuses a node's upgrade, never its pre-pull (design §8.2, domain.pause)."""

from __future__ import annotations

import pytest

from edgerollout.agent.pause_refusal import judge_pause
from edgerollout.domain.model import DaemonSetUID, DaemonSetView
from edgerollout.domain.planning.ota_requests import Action, PodFacts, Refusal
from edgerollout.domain.vocabulary import PAUSED_ANNOTATION

POD = PodFacts(
    namespace="edge",
    name="nginx-daemonset-bwzss",
    node_name="edge-2",
    deleting=False,
    owner_kind="DaemonSet",
    owner_name="nginx-daemonset",
    conditions={},
)


def daemonset(paused: str | None) -> DaemonSetView:
    annotations = {"apps.openyurt.io/update-strategy": "OTA"}
    if paused is not None:
        annotations[PAUSED_ANNOTATION] = paused
    return DaemonSetView(
        namespace="edge",
        name="nginx-daemonset",
        uid=DaemonSetUID("uid-ds"),
        annotations=annotations,
        update_strategy_type="OnDelete",
    )


def paused(annotation: str) -> Refusal:
    """The refusal of an upgrade of POD, which tells what the pause annotation says."""
    return Refusal(
        409,
        "RolloutPaused",
        "the rollout of DaemonSet edge/nginx-daemonset is paused "
        f"(edgerollout.io/paused: {annotation}), so pod edge/nginx-daemonset-bwzss is not "
        "upgraded; to continue: edgerollout resume nginx-daemonset -n edge",
    )


@pytest.mark.parametrize("value", ["true", "True", " TRUE "])
def test_upgrade_of_a_paused_daemonsets_pod_is_409_rollout_paused(value: str) -> None:
    assert judge_pause(POD, daemonset=daemonset(value), action=Action.UPGRADE) == paused(
        f'"{value}"'
    )


@pytest.mark.parametrize("value", ["yes", "", "paused"])
def test_a_value_neither_true_nor_false_refuses_the_upgrade_and_is_named(value: str) -> None:
    assert judge_pause(POD, daemonset=daemonset(value), action=Action.UPGRADE) == paused(
        f'"{value}", which is neither "true" nor "false" and counts as paused'
    )


@pytest.mark.parametrize("value", [None, "false", "FALSE"])
def test_upgrade_of_a_daemonset_that_is_not_paused_passes(value: str | None) -> None:
    assert judge_pause(POD, daemonset=daemonset(value), action=Action.UPGRADE) is None


@pytest.mark.parametrize("value", ["true", "yes"])
def test_imagepull_of_a_paused_daemonsets_pod_passes(value: str) -> None:
    assert judge_pause(POD, daemonset=daemonset(value), action=Action.IMAGE_PULL) is None
