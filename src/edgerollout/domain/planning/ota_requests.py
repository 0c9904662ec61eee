"""Whether a node's request to upgrade a pod, or to pre-pull its new images, may go ahead.

An edge node's agent serves OpenYurt's OTA API (design §8.2). Before it changes anything it asks
the questions below, in this order, and the first "no" is the answer — with the HTTP code, a
CamelCase reason and a sentence saying what was found and what was expected:

| question                                          | refusal                  | code |
|---------------------------------------------------|--------------------------|------|
| are the namespace and pod names valid DNS names?  | `InvalidName`            | 400  |
| does the pod exist?                               | `PodNotFound`            | 404  |
| is it bound to this node?                         | `PodOnAnotherNode`       | 403  |
| is it still running (not terminating)?            | `PodTerminating`         | 409  |
| is it owned by a DaemonSet with the OTA strategy? | `NotAnOTAPod`            | 400  |
| does it have an upgrade (`PodNeedUpgrade=True`)?  | `NoUpgradeAvailable`     | 409  |
| upgrade only: has a requested pre-pull of the     | `ImagePullNotDone`       | 409  |
| newest revision succeeded?                        |                          |      |

A pre-pull is only meaningful for a pod with an upgrade available: the newest revision it pulls is
the one named by the pod's `PodNeedUpgrade` message (`controllerrevision: <hash>`), which the
controller keeps current. A `PodImageReady` condition naming an older revision is a pre-pull of a
revision that is no longer the target, and does not hold an upgrade back.
"""

import re
from dataclasses import dataclass
from enum import Enum

from edgerollout.domain.model import Condition, ConditionStatus
from edgerollout.domain.planning.conditions import revision_in_message
from edgerollout.domain.vocabulary import (
    DAEMONSET_KIND,
    POD_IMAGE_READY,
    POD_NEED_UPGRADE,
    PULL_IMAGE_FAIL,
)

_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
DNS_LABEL_PATTERN = rf"^{_LABEL}$"
DNS_SUBDOMAIN_PATTERN = rf"^{_LABEL}(\.{_LABEL})*$"
# fullmatch: `$` alone would also accept a name followed by a newline.
_DNS_LABEL = re.compile(_LABEL)
_DNS_SUBDOMAIN = re.compile(rf"{_LABEL}(\.{_LABEL})*")


class Action(Enum):
    UPGRADE = "upgrade"
    IMAGE_PULL = "imagepull"


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why a request is refused: the HTTP code, a CamelCase reason, a sentence for people."""

    code: int
    reason: str
    message: str


@dataclass(frozen=True, slots=True, kw_only=True)
class PodFacts:
    """What the agent read about the pod, fresh from the API server."""

    namespace: str
    name: str
    node_name: str | None
    deleting: bool
    owner_kind: str | None
    owner_name: str | None
    conditions: dict[str, Condition]


def check_names(namespace: str, name: str) -> Refusal | None:
    """Namespaces are DNS-1123 labels (63 characters); pod names DNS-1123 subdomains (253)."""
    if len(namespace) > 63 or not _DNS_LABEL.fullmatch(namespace):
        return Refusal(
            400,
            "InvalidName",
            f"namespace {namespace!r} is not a DNS-1123 label (lower-case letters, digits and '-', "
            "starting and ending with a letter or digit, at most 63 characters)",
        )
    if len(name) > 253 or not _DNS_SUBDOMAIN.fullmatch(name):
        return Refusal(
            400,
            "InvalidName",
            f"pod name {name!r} is not a DNS-1123 subdomain (lower-case letters, digits, '-' and "
            "'.', starting and ending with a letter or digit, at most 253 characters)",
        )
    return None


def judge_pod(pod: PodFacts, *, node_name: str) -> Refusal | None:
    """The checks that need only the pod: its node, whether it is terminating, its owner kind."""
    refusal = judge_placement(pod, node_name=node_name)
    if refusal is None and (pod.owner_kind != DAEMONSET_KIND or not pod.owner_name):
        owner = f"{pod.owner_kind} {pod.owner_name}" if pod.owner_kind else "no controller"
        return Refusal(
            400,
            "NotAnOTAPod",
            f"pod {pod.namespace}/{pod.name} is owned by {owner}, not by a DaemonSet with the "
            "OTA update strategy",
        )
    return refusal


def judge_placement(pod: PodFacts, *, node_name: str) -> Refusal | None:
    """Whether the pod is this node's to act on: bound to it, and not terminating."""
    ref = f"{pod.namespace}/{pod.name}"
    if pod.node_name != node_name:
        return Refusal(
            403,
            "PodOnAnotherNode",
            f"pod {ref} is bound to node {pod.node_name or '(none)'}, not to this node "
            f"{node_name}: a node may only act on its own pods",
        )
    if pod.deleting:
        return Refusal(409, "PodTerminating", f"pod {ref} is already terminating")
    return None


def not_ota(pod: PodFacts, why: str) -> Refusal:
    return Refusal(
        400,
        "NotAnOTAPod",
        f"pod {pod.namespace}/{pod.name} belongs to DaemonSet {pod.owner_name}, which {why}",
    )


def newest_revision(pod: PodFacts) -> str | None:
    """The newest revision as the controller marked it on the pod (None before it did)."""
    mark = pod.conditions.get(POD_NEED_UPGRADE)
    return revision_in_message(mark.message) if mark is not None else None


def judge_request(pod: PodFacts, action: Action) -> Refusal | None:
    """The checks on the pod's conditions, once it is known to be this node's OTA pod."""
    ref = f"{pod.namespace}/{pod.name}"
    mark = pod.conditions.get(POD_NEED_UPGRADE)
    if mark is None or mark.status is not ConditionStatus.TRUE:
        seen = "absent" if mark is None else f"{mark.status}"
        return Refusal(
            409,
            "NoUpgradeAvailable",
            f"pod {ref} has no newer version: its {POD_NEED_UPGRADE} condition is {seen}, "
            "expected True",
        )
    if action is Action.UPGRADE:
        pull = pod.conditions.get(POD_IMAGE_READY)
        newest = newest_revision(pod)
        if (
            pull is not None
            and pull.status is not ConditionStatus.TRUE
            and revision_in_message(pull.message) == newest
        ):
            state = "failed" if pull.reason == PULL_IMAGE_FAIL else "not finished yet"
            return Refusal(
                409,
                "ImagePullNotDone",
                f"the image pre-pull requested for pod {ref} (revision {newest}) has {state} "
                f"({POD_IMAGE_READY}={pull.status}, reason {pull.reason or 'none'}); "
                "upgrade once it has succeeded",
            )
    return None
