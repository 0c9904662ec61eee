"""The agent under faults, and a corpus of malformed HTTP requests, on a lab with agents.

- An agent's node loses its link while an `upgrade` is under way — at a random moment a few
  milliseconds after the request, so across runs the cut lands before the agent's reads, between
  its checks and its delete, and after the delete. Whatever the moment, the answer tells the
  truth: `200` means the pod was deleted; `503` saying "nothing was changed" means the pod is
  exactly as it was; `503` saying the deletion "was sent but not confirmed" allows either. Every
  deletion carries the pod's UID (the API server's audit log shows it), no pod is deleted twice,
  and once the link is back the upgrade goes through.
- A corpus of malformed requests (methods, paths, names, headers, bodies, and bytes that are not
  HTTP at all) is sent to a live agent: no answer is a server error, the agent stays healthy,
  and nothing in the cluster changes.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from edgerollout.domain import vocabulary
from edgerollout.domain.vocabulary import UPDATE_STRATEGY_ANNOTATION
from edgerollout_lab.cluster import Lab
from edgerollout_lab.control_plane import audit_log_path
from tests.e2e.reliability.conftest import Plan
from tests.e2e.support.agents import agent_of, refused_with, snapshot
from tests.e2e.support.audit import audited_pod_deletions
from tests.e2e.support.controller_process import ControllerProcess
from tests.e2e.support.lab import LabHandle, by_node, condition, set_image, wait_for
from tests.e2e.support.seed import NAME, NODES, SELECTOR, seed_daemonset

# The session's lab of three nodes, each running edgerollout's agent (as the agent's own tests).
pytestmark = pytest.mark.lab(nodes=3, agents=True)

CORPUS = Path(__file__).parent / "corpus"
OTA = {UPDATE_STRATEGY_ANNOTATION: vocabulary.OTA}
NODE = "edge-2"
NOTHING_CHANGED = "nothing was changed"
SENT = "was sent but not confirmed"


async def outdated_pod(kube: LabHandle, namespace: str, image: str) -> Any:
    """Move the DaemonSet to `image`; the pod on NODE once the controller marks it outdated."""
    await set_image(kube, namespace, NAME, image)

    async def marked() -> Any:
        pods = by_node(await kube.pods(namespace, SELECTOR)).get(NODE, [])
        if len(pods) != 1 or pods[0].metadata.deletion_timestamp is not None:
            return None
        need = condition(pods[0], "PodNeedUpgrade")
        return pods[0] if need is not None and need.status == "True" else None

    return await wait_for(marked, timeout=45, what=f"{NODE}'s pod marked PodNeedUpgrade=True")


@pytest.mark.timeout(1800)
async def test_agent_cut_off_mid_upgrade_tells_the_truth_and_upgrades_once_back(
    lab: Lab,
    kube: LabHandle,
    namespace: str,
    controller: ControllerProcess,
    reliability: Plan,
) -> None:
    attempts = 4 * reliability.runs
    rng = random.Random(f"agent-cut:{reliability.seed}")  # noqa: S311 - chaos, not security
    audit_log = audit_log_path(lab.folder)
    offset = audit_log.stat().st_size
    await seed_daemonset(kube, namespace, annotations=OTA)
    edge2 = agent_of(lab, NODE)
    outcomes: dict[str, int] = {}
    deleted: list[str] = []
    for attempt in range(attempts):
        pod = await outdated_pod(kube, namespace, f"nginx:1.20.{attempt}")
        uid = pod.metadata.uid
        request = asyncio.create_task(edge2.upgrade(namespace, pod.metadata.name))
        await asyncio.sleep(rng.uniform(0.0, 0.015))
        await kube.disconnect(NODE)
        answer = await request
        after = await kube.core.list_namespaced_pod(
            namespace, field_selector=f"metadata.name={pod.metadata.name}"
        )
        same = [p for p in after.items if p.metadata.uid == uid]
        gone = not same or same[0].metadata.deletion_timestamp is not None
        if answer.status == 200:
            kind = "done"
            assert answer.text == f"Start updating pod {namespace}/{pod.metadata.name}"
            assert gone, f"attempt {attempt}: 200 but pod {uid} is still there"
        else:
            message = refused_with(answer, 503, "CloudUnreachable")
            if SENT in message:
                kind = "sent, unconfirmed"
            else:
                kind = "refused before any write"
                assert NOTHING_CHANGED in message, message
                assert not gone, f"attempt {attempt}: 'nothing was changed' but {uid} is going"
        outcomes[kind] = outcomes.get(kind, 0) + 1
        await kube.reconnect(NODE, timeout=60)
        if not gone:
            retry = await edge2.upgrade(namespace, pod.metadata.name)
            assert retry.status in (200, 409), retry.text
        if gone or retry.status == 200:
            deleted.append(uid)

        async def replaced(uid: str = uid) -> bool:
            pods = by_node(await kube.pods(namespace, SELECTOR)).get(NODE, [])
            return len(pods) == 1 and pods[0].metadata.uid != uid

        await wait_for(replaced, timeout=60, what=f"{NODE}'s pod replaced after attempt {attempt}")

    print(f"agent cut mid-upgrade, {attempts} attempts: {outcomes}")
    audited = audited_pod_deletions(audit_log, namespace, offset=offset)
    by_agent = [e for e in audited if "edgerollout-agent" in e["user"]["username"]]
    assert by_agent, "the agent deleted pods"
    for entry in by_agent:
        assert (entry["requestObject"].get("preconditions") or {}).get("uid"), entry
    accepted = [
        e["requestObject"]["preconditions"]["uid"]
        for e in by_agent
        if 200 <= e["responseStatus"]["code"] <= 299
    ]
    # 504 "context canceled": the link was cut mid-request; the deletion may have been made.
    cut_off = {
        e["requestObject"]["preconditions"]["uid"]
        for e in by_agent
        if e["responseStatus"]["code"] == 504
    }
    assert len(accepted) == len(set(accepted)), f"a pod deleted twice: {accepted}"
    assert set(accepted) <= set(deleted) <= set(accepted) | cut_off


def corpus_requests() -> list[dict[str, Any]]:
    lines = (CORPUS / "agent-requests.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines if line]


def with_token(raw: str, token: str) -> str:
    """The request as a program on the node holding the agent's token sends it: the token right
    after the request line. Without a request line there is nowhere to put it."""
    line, newline, rest = raw.partition("\r\n")
    if not newline or " " not in line:
        return raw
    return f"{line}\r\nAuthorization: Bearer {token}\r\n{rest}"


async def send_raw(url: str, data: bytes) -> bytes:
    """Write bytes to the agent's socket as they are; read what comes back (or nothing)."""
    parts = urlsplit(url)
    reader, writer = await asyncio.open_connection(parts.hostname, parts.port)
    try:
        writer.write(data)
        await writer.drain()
        received = b""
        # Every request says `Connection: close`: read until the agent hangs up (or goes quiet).
        with contextlib.suppress(TimeoutError, ConnectionError):
            while chunk := await asyncio.wait_for(reader.read(65536), timeout=5):
                received += chunk
        return received
    finally:
        writer.close()


async def test_corpus_of_malformed_requests_changes_nothing_and_breaks_nothing(
    lab: Lab, kube: LabHandle, namespace: str, controller: ControllerProcess
) -> None:
    await seed_daemonset(kube, namespace, annotations=OTA)
    pod = await outdated_pod(kube, namespace, "nginx:1.19.5")

    async def all_marked() -> bool:
        pods = await kube.pods(namespace, SELECTOR)
        marks = [condition(p, "PodNeedUpgrade") for p in pods]
        return len(pods) == len(NODES) and all(m is not None and m.status == "True" for m in marks)

    # The controller marks every node's pod, not only NODE's: the snapshot is taken once it has
    # written them all, so that its last writes are not mistaken for the agent's.
    await wait_for(all_marked, timeout=45, what="every pod marked PodNeedUpgrade=True")
    state = await snapshot(kube, namespace)
    agents = await snapshot(kube, "edgerollout-system")
    edge2 = agent_of(lab, NODE)
    assert edge2.url is not None
    assert edge2.token is not None
    answers: list[tuple[str, int]] = []
    for entry in corpus_requests():
        raw = entry["raw"].replace("{ns}", namespace).replace("{pod}", pod.metadata.name)
        raw = with_token(raw, edge2.token)
        data = raw.encode("utf-8", errors="surrogateescape")
        answer = await send_raw(edge2.url, data)
        if answer.startswith(b"HTTP/1.1 100 Continue\r\n\r\n"):
            answer = answer.removeprefix(b"HTTP/1.1 100 Continue\r\n\r\n")
        status_line = answer.split(b"\r\n", 1)[0].decode(errors="replace")
        code = int(status_line.split()[1]) if status_line.startswith("HTTP/") else 0
        answers.append((entry["id"], code))
        # 0: the agent closed the connection without an answer (nothing to answer to).
        assert code == entry["expect"], f"{entry['id']}: {answer[:300]!r}"
        health = await edge2.request("GET", "/healthz")
        assert health.status == 200, f"the agent is unwell after {entry['id']}"

    assert await snapshot(kube, namespace) == state
    assert await snapshot(kube, "edgerollout-system") == agents
    assert [code for _, code in answers if code >= 500] == []
    assert len(answers) == len(corpus_requests())
