"""Bad input changes nothing: a corpus of malformed annotation values replayed against the lab.

One DaemonSet with an image change pending (every pod outdated) is given each malformed value in
turn. Each value gets its Warning Event — proof that the controller read it — and nothing else:
no pod is deleted (the API server's audit log shows no deletion at all), no pod condition is
written, and the controller keeps running.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from edgerollout.domain.spec.bounds import LONGEST
from edgerollout.domain.vocabulary import (
    ADVANCED_ROLLING_UPDATE,
    ANNOTATION_TOO_LONG,
    MAX_UNAVAILABLE_ANNOTATION,
    UPDATE_STRATEGY_ANNOTATION,
)
from edgerollout_lab.control_plane import audit_log_path
from tests.e2e.support.audit import audited_pod_deletions
from tests.e2e.support.controller_process import ControllerProcess
from tests.e2e.support.lab import (
    LabHandle,
    by_node,
    daemonset,
    events,
    hold_for,
    set_image,
    wait_for,
)
from tests.e2e.support.seed import NAME, NEW, NODES, OLD, ON_DELETE, SELECTOR, running_everywhere

pytestmark = pytest.mark.lab(nodes=3)

CORPUS = Path(__file__).parent / "corpus"
STRATEGY = UPDATE_STRATEGY_ANNOTATION
MAX_UNAVAILABLE = MAX_UNAVAILABLE_ANNOTATION


async def refusals(kube: LabHandle, namespace: str, reason: str) -> list[Any]:
    """The Warnings refusing a value: for its content (`reason`) or for its length."""
    return [
        event
        for event in await events(kube, namespace)
        if event.reason in (reason, ANNOTATION_TOO_LONG)
    ]


def corpus(name: str) -> list[str]:
    return [json.loads(line) for line in (CORPUS / name).read_text().splitlines() if line]


@pytest.mark.parametrize(
    ("corpus_file", "reason", "annotations_for"),
    [
        pytest.param(
            "max-unavailable.jsonl",
            "InvalidMaxUnavailable",
            lambda value: {STRATEGY: ADVANCED_ROLLING_UPDATE, MAX_UNAVAILABLE: value},
            id="max-unavailable",
        ),
        pytest.param(
            "update-strategy.jsonl",
            "UnknownUpdateStrategy",
            lambda value: {STRATEGY: value, MAX_UNAVAILABLE: "100%"},
            id="update-strategy",
        ),
    ],
)
async def test_every_malformed_annotation_in_the_corpus_is_refused_and_changes_nothing(
    kube: LabHandle,
    namespace: str,
    controller: ControllerProcess,
    corpus_file: str,
    reason: str,
    annotations_for: Any,
) -> None:
    values = corpus(corpus_file)
    audit_log = audit_log_path(kube.lab.folder)
    offset = audit_log.stat().st_size
    await kube.apps.create_namespaced_daemon_set(
        namespace,
        daemonset(NAME, image=OLD, strategy=ON_DELETE, annotations={STRATEGY: "not yet"}),
    )
    before = await running_everywhere(kube, namespace, OLD, NODES)
    await set_image(kube, namespace, NAME, NEW)
    await wait_for(
        lambda: events(kube, namespace, reason="UnknownUpdateStrategy"),
        timeout=20,
        what="the first UnknownUpdateStrategy Event",
    )
    first = 1 if reason == "UnknownUpdateStrategy" else 0

    for index, value in enumerate(values, start=1):
        patch: Any = {"metadata": {"annotations": annotations_for(value)}}
        await kube.apps.patch_namespaced_daemon_set(NAME, namespace, patch)

        async def warned(count: int = index + first) -> bool:
            return len(await refusals(kube, namespace, reason)) >= count

        await wait_for(warned, timeout=20, what=f"a {reason} Event for {value[:40]!r}")

    async def untouched() -> bool:
        pods = await kube.pods(namespace, SELECTOR)
        grouped = by_node(pods)
        return (
            {node: [p.metadata.uid for p in on_node] for node, on_node in grouped.items()}
            == {node: [uid] for node, uid in before.items()}
            and all(p.metadata.deletion_timestamp is None for p in pods)
            and all(
                c.type not in ("PodNeedUpgrade", "PodImageReady")
                for p in pods
                for c in p.status.conditions or []
            )
        )

    await hold_for(untouched, seconds=3, what="every old pod staying as it was")
    warnings = await refusals(kube, namespace, reason)
    assert len(warnings) == len(values) + first
    # A value longer than edgerollout reads is refused by its length, unread (design §12.7).
    annotation = STRATEGY if reason == "UnknownUpdateStrategy" else MAX_UNAVAILABLE
    too_long = [value for value in values if len(value) > LONGEST[annotation]]
    assert [e.reason for e in warnings].count(ANNOTATION_TOO_LONG) == len(too_long) == 1
    recorded = await events(kube, namespace)
    assert {e.reason for e in recorded} <= {
        "UnknownUpdateStrategy",
        "InvalidMaxUnavailable",
        ANNOTATION_TOO_LONG,
    }
    assert audited_pod_deletions(audit_log, namespace, offset=offset) == []
    assert controller.process.poll() is None, controller.log_text()
    assert controller.metric("edgerollout_pods_deleted_total", reason="outdated_within_budget") == 0
