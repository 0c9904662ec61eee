"""Whether a node may upgrade its pod while the DaemonSet's rollout is paused: it may not.

`edgerollout.io/paused` (`domain.pause`) stops a rollout wherever it is carried out: the controller
deletes nothing, and an OTA node, which decides for itself when its pod is replaced, is refused
`upgrade` with 409 `RolloutPaused`. The agent reads the DaemonSet fresh from the API server for
every request, so a pause holds from the moment it is written, also for a node that learned of an
upgrade long before. A value that is neither "true" nor "false" counts as paused (it fails closed)
and the refusal names it.

`imagepull` stays allowed: a pre-pull only puts images on the node, it replaces nothing that runs,
and a paused fleet that pre-pulls is ready to upgrade quickly once resumed.

This check follows the checks on the pod and its owner (`domain.ota_requests.judge_pod`, the OTA
strategy) and precedes those on the pod's conditions (`judge_request`): a pause is the operator's
word on the whole DaemonSet, and it is what a node must learn first — its pre-pull may still be
running, but no upgrade happens until the rollout is resumed.
"""

from __future__ import annotations

from edgerollout.domain.model import DaemonSetView
from edgerollout.domain.planning.ota_requests import Action, PodFacts, Refusal
from edgerollout.domain.spec.pause import read_pause
from edgerollout.domain.vocabulary import PAUSED_ANNOTATION, ROLLOUT_PAUSED


def judge_pause(pod: PodFacts, *, daemonset: DaemonSetView, action: Action) -> Refusal | None:
    """409 `RolloutPaused` for an upgrade while the pod's DaemonSet is paused, else None."""
    if action is not Action.UPGRADE:
        return None
    setting = read_pause(daemonset.annotations)
    if not setting.paused:
        return None
    value = daemonset.annotations.get(PAUSED_ANNOTATION, "")
    seen = f'{PAUSED_ANNOTATION}: "{value}"'
    if setting.notice is not None:
        seen += ', which is neither "true" nor "false" and counts as paused'
    return Refusal(
        409,
        ROLLOUT_PAUSED,
        f"the rollout of DaemonSet {daemonset.namespace}/{daemonset.name} is paused ({seen}), so "
        f"pod {pod.namespace}/{pod.name} is not upgraded; to continue: "
        f"edgerollout resume {daemonset.name} -n {daemonset.namespace}",
    )
