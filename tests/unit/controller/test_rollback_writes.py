"""Roll back on failure, from the plan to the one template write (design §13.4.1): what is sent,
with which precondition, and what happens when the API server or a person gets there first."""

from __future__ import annotations

import dataclasses
import re
from typing import Any

from edgerollout.kube.api import CONTROLLER_REVISIONS, DAEMONSETS, ApiError
from edgerollout.settings import CONTROLLER

from ..kube.fake_api import JSON
from ..kube.objects import (
    ADVANCED,
    MAX_UNAVAILABLE,
    NAMESPACE,
    NEW,
    OLD,
    pod_json,
    revision_json,
)
from .test_reconciler import Controller, controller, crash_looping_json

SWITCHED_ON = dataclasses.replace(CONTROLLER, rollback_namespaces=frozenset({NAMESPACE}))
ROLLBACK = {
    **ADVANCED,
    MAX_UNAVAILABLE: "3",
    "edgerollout.io/max-failed": "1",
    "edgerollout.io/on-failure": "rollback",
}
BROKEN = [
    crash_looping_json("web-a", node="edge-1"),
    crash_looping_json("web-b", node="edge-2"),
    pod_json("web-c", node="edge-3", revision_hash=OLD),
]
# The DaemonSet's template now (the failed revision's), and the previous revision's.
NOW_TEMPLATE = {
    "metadata": {"labels": {"app": "web"}},
    "spec": {"containers": [{"name": "web", "image": "nginx:1.27"}]},
}
OLD_TEMPLATE = {
    "metadata": {"labels": {"app": "web"}},
    "spec": {"containers": [{"name": "web", "image": "nginx:1.26"}]},
}


def with_template(name: str, number: int, revision_hash: str, template: JSON) -> JSON:
    revision = revision_json(name, number=number, revision_hash=revision_hash)
    revision["data"] = {"spec": {"template": {**template, "$patch": "replace"}}}
    return revision


def stored_revisions(c: Controller) -> None:
    """The two revisions with their templates, as the DaemonSet controller writes them."""
    c.api.put(CONTROLLER_REVISIONS, with_template("web-old", 1, OLD, OLD_TEMPLATE))
    c.api.put(CONTROLLER_REVISIONS, with_template("web-new", 2, NEW, NOW_TEMPLATE))


def template_writes(c: Controller) -> list[Any]:
    return [
        call.body
        for call in c.api.calls_to("patch", DAEMONSETS)
        if call.body is not None and "spec" in call.body
    ]


async def test_past_the_budget_the_previous_template_is_written_with_a_precondition() -> None:
    async with controller(ROLLBACK, BROKEN, settings=SWITCHED_ON) as c:
        stored_revisions(c)
        stored = c.api.stored(DAEMONSETS, "web", namespace=NAMESPACE)
        assert stored is not None
        version = stored["metadata"]["resourceVersion"]
        await c.reconcile()

        assert c.deletions() == []
        assert c.pauses() == template_writes(c)  # no pause: the template is the only write
        (sent,) = c.api.calls_to("patch", DAEMONSETS)[:1]
        assert (sent.params["content_type"], sent.body) == (
            "application/strategic-merge-patch+json",
            {
                "spec": {"template": {**OLD_TEMPLATE, "$patch": "replace"}},
                "metadata": {
                    "resourceVersion": version,
                    "annotations": {
                        "edgerollout.io/rolled-back": f"from {NEW} (revision 2) to {OLD}"
                    },
                },
            },
        )
        ((kind, reason, message),) = c.events()
        assert (kind, reason) == ("Warning", "RolloutRolledBack")
        assert re.fullmatch(
            rf'2 nodes are broken on revision {NEW}, more than edgerollout.io/max-failed "1" '
            rf"tolerates \(1\): edge-1: CrashLoopBackOff since \S+; edge-2: CrashLoopBackOff "
            rf"since \S+\. The DaemonSet's template is rolled back to revision {OLD} \(as kubectl "
            r"rollout undo does\), which rolls out under the same budgets, the broken nodes first",
            message,
        )


async def test_a_rollback_the_api_server_refuses_pauses_the_rollout_and_says_why() -> None:
    async with controller(ROLLBACK, BROKEN, settings=SWITCHED_ON) as c:
        stored_revisions(c)
        denied = ApiError(403, "Forbidden", "may not change a DaemonSet's spec")
        c.api.fail("patch", DAEMONSETS, denied)
        await c.reconcile()

        assert c.deletions() == []
        assert c.pauses()[-1] == {"metadata": {"annotations": {"edgerollout.io/paused": "true"}}}
        assert [(kind, reason) for kind, reason, _ in c.events()] == [
            ("Warning", "RolloutFailed"),
            ("Warning", "RollbackNotAllowed"),
        ]
        assert c.events()[1][2] == (
            f"Revision {NEW} is not rolled back: the API server refused it: 403 Forbidden: may "
            "not change a DaemonSet's spec; the rollout is paused instead, as without "
            "edgerollout.io/on-failure: rollback"
        )


async def test_a_template_changed_since_the_failed_revision_is_left_alone() -> None:
    async with controller(ROLLBACK, BROKEN, settings=SWITCHED_ON) as c:
        stored_revisions(c)
        # A person set another template meanwhile; its revision is not in the cache yet.
        current = c.api.stored(DAEMONSETS, "web", namespace=NAMESPACE)
        assert current is not None
        current["spec"]["template"]["spec"]["containers"][0]["image"] = "nginx:1.28"
        c.api.put(DAEMONSETS, current)
        await c.reconcile()

        assert (template_writes(c), c.pauses(), c.events(), c.deletions()) == ([], [], [], [])


async def test_without_the_install_switch_nothing_is_read_and_the_rollout_pauses() -> None:
    async with controller(ROLLBACK, BROKEN) as c:
        stored_revisions(c)
        await c.reconcile()

        assert c.api.calls_to("get", CONTROLLER_REVISIONS) == []
        assert c.pauses() == [{"metadata": {"annotations": {"edgerollout.io/paused": "true"}}}]
        assert [reason for _, reason, _ in c.events()] == ["RolloutFailed", "RollbackNotAllowed"]
