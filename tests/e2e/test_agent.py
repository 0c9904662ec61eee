"""The node-local OTA API against a real control plane (design §8, §6; seed 001 §3, design §11.5).

Every node of the lab runs its agent, reaching the API server only through that node's link and
with a token bound to that node. The tests call the agents over HTTP as a program on the node
does, run the real controller scoped to the test's namespace, and assert exact answers, exact
pods and exact conditions — and, for every refusal, that nothing in the cluster changed.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import hypothesis
import orjson
import pytest
import schemathesis
from kubernetes_asyncio import client, config
from kubernetes_asyncio.client.exceptions import ApiException
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    positive_data_acceptance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
    unsupported_method,
)

from edgerollout.domain.vocabulary import AGENT_OWN_NODE_POLICY, PREPULL_LABEL
from edgerollout_lab.cluster import Lab
from edgerollout_lab.kwok_stages import UNPULLABLE_IMAGE
from tests.e2e.support.agents import (
    OTA,
    AgentClient,
    Answer,
    agent_of,
    assert_nothing_changes,
    assert_pull_requested,
    assert_refused,
    assert_upgrade_held_for_the_pull,
    assert_upgrade_started,
    bare_pod,
    listed_condition,
    refused_with,
    running,
    running_on_every_node,
    snapshot,
    terminating_pod,
)
from tests.e2e.support.cli import edgerollout
from tests.e2e.support.controller_process import ControllerProcess
from tests.e2e.support.lab import (
    LabHandle,
    by_node,
    condition,
    daemonset,
    images,
    pod_ready,
    set_image,
    wait_for,
)
from tests.e2e.support.seed import (
    NAME,
    NEW,
    NODES,
    OLD,
    ON_DELETE,
    SELECTOR,
    newest_revision_hash,
    revision_after,
    running_everywhere,
    seed_daemonset,
)

# The session's lab of three nodes, each running edgerollout's agent.
pytestmark = pytest.mark.lab(nodes=3, agents=True)


@pytest.fixture
def edge2(lab: Lab) -> AgentClient:
    """edge-2's agent, as a program on edge-2 calls it."""
    return agent_of(lab, "edge-2")


async def ota_daemonset(kube: LabHandle, namespace: str) -> dict[str, str]:
    """Seed 001 §3's DaemonSet, Running everywhere; node -> pod name."""
    await seed_daemonset(kube, namespace, annotations=OTA)
    return {
        node: pods[0].metadata.name
        for node, pods in by_node(await kube.pods(namespace, SELECTOR)).items()
    }


async def all_marked(kube: LabHandle, namespace: str, status: str, revision: str) -> bool:
    pods = await kube.pods(namespace, SELECTOR)
    wanted = (status, f"controllerrevision: {revision}")
    return len(pods) == len(NODES) and all(
        (found := condition(pod, "PodNeedUpgrade")) is not None
        and (found.status, found.message) == wanted
        for pod in pods
    )


async def new_version_marked(kube: LabHandle, namespace: str, image: str = NEW) -> str:
    """Move the DaemonSet to `image` and wait until every pod says PodNeedUpgrade=True."""
    first = await newest_revision_hash(kube, namespace)
    await wait_for(
        lambda: all_marked(kube, namespace, "False", first), timeout=30, what="PodNeedUpgrade=False"
    )
    await set_image(kube, namespace, NAME, image)
    second = await revision_after(kube, namespace, first)
    await wait_for(
        lambda: all_marked(kube, namespace, "True", second), timeout=30, what="PodNeedUpgrade=True"
    )
    return second


async def outdated_pod(
    kube: LabHandle, namespace: str, node: str, image: str = NEW
) -> tuple[str, str, str]:
    """Seed 001 §3's DaemonSet Running everywhere, then moved to `image` until every pod says
    PodNeedUpgrade=True; (the name of `node`'s pod, its UID, the new revision's hash)."""
    pod = (await ota_daemonset(kube, namespace))[node]
    uid = (await kube.core.read_namespaced_pod(pod, namespace)).metadata.uid
    return pod, uid, await new_version_marked(kube, namespace, image)


async def replaced_by_new_version(
    kube: LabHandle, namespace: str, node: str, old_uid: str, revision: str
) -> client.V1Pod:
    async def probe() -> client.V1Pod | None:
        pods = by_node(await kube.pods(namespace, SELECTOR)).get(node, [])
        if len(pods) != 1 or pods[0].metadata.uid == old_uid:
            return None
        pod = pods[0]
        need = condition(pod, "PodNeedUpgrade")
        current = (
            images(pod) == [NEW]
            and pod_ready(pod)
            and need is not None
            and (need.status, need.message) == ("False", f"controllerrevision: {revision}")
        )
        return pod if current else None

    found: client.V1Pod = await wait_for(
        probe, timeout=45, what=f"{node}'s new nginx:1.19.5 pod with PodNeedUpgrade=False"
    )
    return found


# --- seed 001 §3 ------------------------------------------------------------------------------


async def test_seed_ota_upgrade_through_the_agent_replaces_only_that_nodes_pod(
    kube: LabHandle, namespace: str, controller: ControllerProcess, edge2: AgentClient
) -> None:
    names = await ota_daemonset(kube, namespace)
    uids = {
        node: pods[0].metadata.uid
        for node, pods in by_node(await kube.pods(namespace, SELECTOR)).items()
    }
    pod = names["edge-2"]
    first = await newest_revision_hash(kube, namespace)

    async def served_mark(status: str, revision: str) -> bool:
        listed = await edge2.listed(namespace)
        need = listed_condition(listed[0], "PodNeedUpgrade") if len(listed) == 1 else None
        return (
            [p["metadata"]["name"] for p in listed] == [pod]
            and need is not None
            and (need.status, need.message) == (status, f"controllerrevision: {revision}")
        )

    await wait_for(
        lambda: served_mark("False", first), timeout=30, what="GET /pods: PodNeedUpgrade=False"
    )
    second = await new_version_marked(kube, namespace)
    await wait_for(
        lambda: served_mark("True", second), timeout=15, what="GET /pods: PodNeedUpgrade=True"
    )
    everything = (await edge2.pods()).json()["items"]
    assert {p["spec"]["nodeName"] for p in everything} == {"edge-2"}

    await assert_upgrade_started(edge2, namespace, pod)

    fresh = await replaced_by_new_version(kube, namespace, "edge-2", uids["edge-2"], second)
    grouped = by_node(await kube.pods(namespace, SELECTOR))
    for node in ("edge-1", "edge-3"):
        (kept,) = grouped[node]
        assert (kept.metadata.uid, images(kept)) == (uids[node], [OLD])
        assert kept.metadata.deletion_timestamp is None

    async def served_new_pod() -> bool:
        listed = await edge2.listed(namespace)
        need = listed_condition(listed[0], "PodNeedUpgrade") if len(listed) == 1 else None
        return (
            [p["metadata"]["uid"] for p in listed] == [fresh.metadata.uid]
            and need is not None
            and need.status == "False"
        )

    await wait_for(served_new_pod, timeout=15, what="GET /pods: the new pod, PodNeedUpgrade=False")


# --- imagepull --------------------------------------------------------------------------------


async def test_imagepull_marks_the_newest_revision_and_holds_the_upgrade_back(
    kube: LabHandle, namespace: str, controller: ControllerProcess, edge2: AgentClient
) -> None:
    pod, _, newest = await outdated_pod(kube, namespace, "edge-2")
    # Only the agent writes from here on: whatever the controller later does with a requested
    # pre-pull is not what this test is about.
    assert controller.stop() == 0
    before = await kube.core.read_namespaced_pod(pod, namespace)

    await assert_pull_requested(edge2, namespace, pod)

    after = await kube.core.read_namespaced_pod(pod, namespace)
    pulled = condition(after, "PodImageReady")
    assert pulled is not None
    assert (pulled.status, pulled.reason, pulled.message) == (
        "False",
        "WaitPullImage",
        f"controllerrevision: {newest}",
    )
    assert after.metadata.uid == before.metadata.uid
    assert after.metadata.deletion_timestamp is None

    def others(subject: client.V1Pod) -> list[tuple[Any, ...]]:
        return sorted(
            (c.type, c.status, c.reason, c.message, c.last_transition_time)
            for c in subject.status.conditions
            if c.type != "PodImageReady"
        )

    assert others(after) == others(before)

    await assert_pull_requested(edge2, namespace, pod)
    state = await snapshot(kube, namespace)
    assert state[pod][1] == after.metadata.resource_version

    await assert_upgrade_held_for_the_pull(
        kube,
        edge2,
        namespace,
        pod,
        state,
        revision=newest,
        pull="has not finished yet",
        reason="WaitPullImage",
    )


async def pull_outcome(kube: LabHandle, namespace: str, pod: str) -> tuple[str, str, str] | None:
    """PodImageReady once the pull has an outcome: (status, reason, message); else None."""
    found = await kube.core.read_namespaced_pod(pod, namespace)
    pulled = condition(found, "PodImageReady")
    if pulled is None or pulled.reason == "WaitPullImage":
        return None
    return (pulled.status, pulled.reason, pulled.message)


async def pull_job_gone(kube: LabHandle, namespace: str) -> bool:
    """No pull Job left in the namespace, and none of its pods."""
    jobs = await client.BatchV1Api(kube.api).list_namespaced_job(namespace)
    pods = await kube.core.list_namespaced_pod(namespace, label_selector=PREPULL_LABEL)
    return jobs.items == [] and pods.items == []


async def pull_reported(kube: LabHandle, namespace: str, pod: str) -> tuple[str, str, str]:
    """The pre-pull's outcome, PodImageReady's (status, reason, message), once the controller has
    reported it and deleted the pull Job and its pods."""
    outcome = await wait_for(
        lambda: pull_outcome(kube, namespace, pod), timeout=30, what="the pre-pull's outcome"
    )
    await wait_for(
        lambda: pull_job_gone(kube, namespace),
        timeout=30,
        what="the pull Job deleted once reported",
    )
    return outcome


async def test_imagepull_then_upgrade_pulls_on_the_node_and_then_upgrades(
    kube: LabHandle, namespace: str, controller: ControllerProcess, edge2: AgentClient
) -> None:
    pod, uid, newest = await outdated_pod(kube, namespace, "edge-2")

    await assert_pull_requested(edge2, namespace, pod)
    outcome = await pull_reported(kube, namespace, pod)
    assert outcome == ("True", "PullImageSuccess", f"controllerrevision: {newest}")

    await assert_upgrade_started(edge2, namespace, pod)
    await replaced_by_new_version(kube, namespace, "edge-2", uid, newest)


async def test_failed_pull_holds_the_upgrade_back_and_changes_nothing(
    lab: Lab, kube: LabHandle, namespace: str, controller: ControllerProcess
) -> None:
    edge1 = agent_of(lab, "edge-1")
    pod, _, newest = await outdated_pod(kube, namespace, "edge-1", UNPULLABLE_IMAGE)

    await assert_pull_requested(edge1, namespace, pod)
    # The failed Job and its pod are deleted once reported; then nothing else may move.
    outcome = await pull_reported(kube, namespace, pod)
    assert outcome == ("False", "PullImageFail", f"controllerrevision: {newest}")
    state = await snapshot(kube, namespace)

    await assert_upgrade_held_for_the_pull(
        kube,
        edge1,
        namespace,
        pod,
        state,
        revision=newest,
        pull="has failed",
        reason="PullImageFail",
    )


# --- a paused rollout (edgerollout pause / resume) --------------------------------------------


async def test_upgrade_is_refused_while_the_rollout_is_paused_and_goes_ahead_once_resumed(
    lab: Lab, kube: LabHandle, namespace: str, controller: ControllerProcess, edge2: AgentClient
) -> None:
    pod, uid, newest = await outdated_pod(kube, namespace, "edge-2")

    paused = await edgerollout(lab.kubeconfig, "pause", NAME, "-n", namespace)
    assert (paused.returncode, paused.stdout) == (0, f"daemonset.apps/{NAME} paused\n")
    state = await snapshot(kube, namespace)

    assert_refused(
        await edge2.upgrade(namespace, pod),
        409,
        "RolloutPaused",
        f'the rollout of DaemonSet {namespace}/{NAME} is paused (edgerollout.io/paused: "true"), so '
        f"pod {namespace}/{pod} is not upgraded; to continue: edgerollout resume {NAME} -n {namespace}",
    )
    kept = await kube.core.read_namespaced_pod(pod, namespace)
    assert (kept.metadata.uid, images(kept)) == (uid, [OLD])
    assert kept.metadata.deletion_timestamp is None
    await assert_nothing_changes(kube, namespace, state)

    resumed = await edgerollout(lab.kubeconfig, "resume", NAME, "-n", namespace)
    assert (resumed.returncode, resumed.stdout) == (0, f"daemonset.apps/{NAME} resumed\n")
    await assert_upgrade_started(edge2, namespace, pod)
    await replaced_by_new_version(kube, namespace, "edge-2", uid, newest)


# --- refusals ---------------------------------------------------------------------------------


async def test_requests_for_pods_the_node_may_not_upgrade_are_refused_and_change_nothing(
    kube: LabHandle, namespace: str, controller: ControllerProcess, edge2: AgentClient
) -> None:
    names = await ota_daemonset(kube, namespace)
    first = await newest_revision_hash(kube, namespace)
    await wait_for(
        lambda: all_marked(kube, namespace, "False", first), timeout=30, what="PodNeedUpgrade=False"
    )
    annotations = {"apps.openyurt.io/update-strategy": "AdvancedRollingUpdate"}
    await kube.apps.create_namespaced_daemon_set(
        namespace, daemonset("rolling", image=OLD, strategy=ON_DELETE, annotations=annotations)
    )
    rolling = (await running_on_every_node(kube, namespace, "rolling"))["edge-2"]
    await kube.core.create_namespaced_pod(namespace, bare_pod("bare", node="edge-2"))
    await wait_for(
        lambda: running(kube, namespace, "bare"), timeout=30, what="the bare pod Running"
    )
    state = await snapshot(kube, namespace)

    cases = [
        ("nope", 404, "PodNotFound", f"pod {namespace}/nope does not exist"),
        (
            names["edge-1"],
            403,
            "PodOnAnotherNode",
            f"pod {namespace}/{names['edge-1']} is bound to node edge-1, not to this node edge-2: "
            "a node may only act on its own pods",
        ),
        (
            rolling,
            400,
            "NotAnOTAPod",
            f"pod {namespace}/{rolling} belongs to DaemonSet rolling, which does not use the OTA "
            "update strategy",
        ),
        (
            "bare",
            400,
            "NotAnOTAPod",
            f"pod {namespace}/bare is owned by no controller, not by a DaemonSet with the OTA update "
            "strategy",
        ),
        (
            names["edge-2"],
            409,
            "NoUpgradeAvailable",
            f"pod {namespace}/{names['edge-2']} has no newer version: its PodNeedUpgrade condition is "
            "False, expected True",
        ),
    ]
    for pod, code, reason, message in cases:
        for ask in (edge2.upgrade, edge2.imagepull):
            assert_refused(await ask(namespace, pod), code, reason, message)
    assert_refused(
        await edge2.upgrade("no-such-namespace", names["edge-2"]),
        404,
        "PodNotFound",
        f"pod no-such-namespace/{names['edge-2']} does not exist",
    )

    assert await snapshot(kube, namespace) == state


async def test_terminating_pod_is_refused_409_and_stays_as_it_is(
    kube: LabHandle, namespace: str, edge2: AgentClient
) -> None:
    async with terminating_pod(kube, namespace, "held", node="edge-2"):
        state = await snapshot(kube, namespace)
        assert state["held"][2] is not None
        for ask in (edge2.upgrade, edge2.imagepull):
            assert_refused(
                await ask(namespace, "held"),
                409,
                "PodTerminating",
                f"pod {namespace}/held is already terminating",
            )
        assert await snapshot(kube, namespace) == state


async def test_malformed_requests_for_an_upgradeable_pod_are_refused_and_change_nothing(
    kube: LabHandle, namespace: str, controller: ControllerProcess, edge2: AgentClient
) -> None:
    pod, _, _ = await outdated_pod(kube, namespace, "edge-2")
    state = await snapshot(kube, namespace)
    route = f"/openyurt.io/v1/namespaces/{namespace}/pods/{pod}"

    for method in ("GET", "PUT", "DELETE", "PATCH"):
        for action in ("upgrade", "imagepull"):
            path = f"{route}/{action}"
            answer = await edge2.request(method, path)
            assert_refused(
                answer,
                405,
                "MethodNotAllowed",
                f"{method} is not allowed on {path} (allowed: POST)",
            )
            assert answer.headers.get("Allow") == "POST"
    for path in (
        f"{route}/restart",
        f"{route}/upgrade/",
        f"{route}/upgrade/now",
        f"/openyurt.io/v2/namespaces/{namespace}/pods/{pod}/upgrade",
        f"/openyurt.io/v1/namespaces/{namespace}/pods//upgrade",
        f"/openyurt.io/v1/namespaces//pods/{pod}/upgrade",
        f"/openyurt.io/v1/{namespace}/{pod}/upgrade",
    ):
        assert_refused(await edge2.request("POST", path), 404, "NotFound", f"no such route: {path}")
    for target_namespace, name, wrong in (
        (namespace.upper(), pod, f"namespace '{namespace.upper()}' is not a DNS-1123 label"),
        (f"{namespace}_x", pod, f"namespace '{namespace}_x' is not a DNS-1123 label"),
        (namespace, pod.upper(), f"pod name '{pod.upper()}' is not a DNS-1123 subdomain"),
        (namespace, f"{pod}-", f"pod name '{pod}-' is not a DNS-1123 subdomain"),
    ):
        for ask in (edge2.upgrade, edge2.imagepull):
            message = refused_with(await ask(target_namespace, name), 400, "InvalidName")
            assert message.startswith(wrong)
    for action in ("upgrade", "imagepull"):
        assert_refused(
            await edge2.request("POST", f"{route}/{action}", data=b"x" * (64 * 1024 + 1)),
            413,
            "RequestEntityTooLarge",
            "bodies are limited to 65536 bytes",
        )

    assert await snapshot(kube, namespace) == state
    await assert_upgrade_started(edge2, namespace, pod)


# --- the API server's own-node rule ----------------------------------------------------------


@contextlib.asynccontextmanager
async def as_agent_of(lab: Lab, node: str) -> AsyncIterator[client.CoreV1Api]:
    """The API as the agent of `node` sees it: its token, through its node's link."""
    configuration = client.Configuration()
    await config.load_kube_config(
        config_file=str(lab.folder / "kubeconfigs" / f"agent-{node}.kubeconfig"),
        client_configuration=configuration,
    )
    async with client.ApiClient(configuration) as api:
        yield client.CoreV1Api(api)


async def test_api_server_lets_an_agents_identity_change_only_its_own_nodes_pods(
    lab: Lab, kube: LabHandle, namespace: str
) -> None:
    names = await ota_daemonset(kube, namespace)
    state = await snapshot(kube, namespace)
    foreign, own = names["edge-2"], names["edge-1"]
    expected = (
        "ValidatingAdmissionPolicy 'edgerollout-agent-own-node' with binding "
        "'edgerollout-agent-own-node' denied request: the edgerollout agent may only change "
        "pods bound to its own node: this pod is on edge-2, the token is bound to a pod on edge-1"
    )
    status_patch = {
        "status": {
            "conditions": [
                {
                    "type": "PodImageReady",
                    "status": "False",
                    "reason": "WaitPullImage",
                    "message": "controllerrevision: forged",
                }
            ]
        }
    }

    async with as_agent_of(lab, "edge-1") as edge1:
        with pytest.raises(ApiException) as deleting:
            await edge1.delete_namespaced_pod(foreign, namespace)
        with pytest.raises(ApiException) as patching:
            await edge1.patch_namespaced_pod_status(foreign, namespace, status_patch)
        await edge1.delete_namespaced_pod(own, namespace, dry_run="All")
        await edge1.patch_namespaced_pod_status(own, namespace, status_patch, dry_run="All")

    for refused in (deleting.value, patching.value):
        assert refused.body is not None
        status = orjson.loads(refused.body)
        assert (refused.status, status["code"], status["reason"]) == (403, 403, "Forbidden")
        assert status["message"].endswith(expected)
    assert await snapshot(kube, namespace) == state


# --- disconnection ---------------------------------------------------------------------------


async def test_disconnected_agent_serves_its_cache_refuses_changes_and_upgrades_once_back(
    kube: LabHandle, namespace: str, controller: ControllerProcess, edge2: AgentClient
) -> None:
    pod, uid, newest = await outdated_pod(kube, namespace, "edge-2")

    async def served_true() -> bool:
        listed = await edge2.listed(namespace)
        need = listed_condition(listed[0], "PodNeedUpgrade") if listed else None
        return need is not None and need.status == "True"

    await wait_for(served_true, timeout=15, what="GET /pods: PodNeedUpgrade=True")
    connected = await edge2.pods()
    assert connected.cache_age == 0.0
    # Only this test's pods: other tests' namespaces may still be going away on the node.
    served = [
        p["metadata"]["uid"]
        for p in connected.json()["items"]
        if p["metadata"]["namespace"] == namespace
    ]

    await kube.disconnect("edge-2")

    async def cache_aging() -> bool:
        return (await edge2.pods()).cache_age > 0

    await wait_for(cache_aging, timeout=10, what="the agent's cache aging")
    unreachable = "the API server cannot be reached from node edge-2 ("
    for ask in (edge2.upgrade, edge2.imagepull):
        answer = await ask(namespace, pod)
        message = refused_with(answer, 503, "CloudUnreachable")
        assert message.startswith(unreachable)
        assert message.endswith("); nothing was changed, try again once the link is back")
        assert answer.seconds < 2
    kept = await kube.core.read_namespaced_pod(pod, namespace)
    assert kept.metadata.uid == uid
    assert kept.metadata.deletion_timestamp is None
    assert condition(kept, "PodImageReady") is None

    early = await edge2.pods()
    await asyncio.sleep(3)
    late = await edge2.pods()
    assert (early.status, late.status) == (200, 200)
    # Cut off, the cache stands still: the same pods, this test's pod among them as it was served.
    assert late.json()["items"] == early.json()["items"]
    mine = [
        p["metadata"]["uid"]
        for p in late.json()["items"]
        if p["metadata"]["namespace"] == namespace
    ]
    assert mine == served == [uid]
    assert late.cache_age >= early.cache_age + 2.5

    await kube.reconnect("edge-2")
    await assert_upgrade_started(edge2, namespace, pod)
    await replaced_by_new_version(kube, namespace, "edge-2", uid, newest)


# --- the guards: the token, browsers, node scoping (design §8.3) -----------------------------

POLICY = AGENT_OWN_NODE_POLICY
FORBIDDEN = (403, "Forbidden", "this request is not served; the agent's log says why")
UNAUTHORIZED = (401, "Unauthorized", "a valid bearer token is required (Authorization header)")


async def test_requests_without_the_token_or_from_a_browser_are_refused_and_change_nothing(
    kube: LabHandle, namespace: str, controller: ControllerProcess, edge2: AgentClient
) -> None:
    pod, _, _ = await outdated_pod(kube, namespace, "edge-2")
    state = await snapshot(kube, namespace)
    anonymous = edge2.without_token()

    for ask in (anonymous.upgrade, anonymous.imagepull):
        answer = await ask(namespace, pod)
        assert_refused(answer, *UNAUTHORIZED)
    for headers in ({"Origin": "http://example.com"}, {"Host": "attacker.example"}):
        for ask in (edge2.upgrade, edge2.imagepull):
            answer = await ask(namespace, pod, headers=headers)
            assert_refused(answer, *FORBIDDEN)
        listed = await edge2.request("GET", "/pods", headers=headers)
        assert_refused(listed, *FORBIDDEN)

    await asyncio.sleep(1)
    assert await snapshot(kube, namespace) == state
    kept = await kube.core.read_namespaced_pod(pod, namespace)
    assert condition(kept, "PodImageReady") is None


def readyz_answers(agent: AgentClient, status: int) -> Callable[[], Awaitable[Answer | None]]:
    """For `wait_for`: the agent's /readyz answer once it has `status`, else None."""

    async def answer() -> Answer | None:
        answered = await agent.request("GET", "/readyz")
        return answered if answered.status == status else None

    return answer


async def _binding_restored(admission: Any, binding: dict[str, Any]) -> None:
    try:
        await admission.read_validating_admission_policy_binding(POLICY)
    except ApiException as error:
        if error.status != 404:
            raise
        await admission.create_validating_admission_policy_binding(binding)


async def test_without_the_policy_binding_the_agent_refuses_changes_until_it_is_back(
    kube: LabHandle, namespace: str, controller: ControllerProcess, edge2: AgentClient
) -> None:
    pod, _, _ = await outdated_pod(kube, namespace, "edge-2")
    admission = client.AdmissionregistrationV1Api(kube.api)
    shipped = await admission.read_validating_admission_policy_binding(POLICY)
    binding = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": POLICY},
        "spec": {
            "policyName": shipped.spec.policy_name,
            "validationActions": shipped.spec.validation_actions,
        },
    }
    ready = await edge2.request("GET", "/readyz")
    assert (ready.status, ready.text) == (200, "ok")
    state = await snapshot(kube, namespace)

    await admission.delete_validating_admission_policy_binding(POLICY)
    removed = time.monotonic()
    try:
        ready = await wait_for(
            readyz_answers(edge2, 503), timeout=30, what="the agent unready without the policy"
        )
        # The lab's agents re-check every 2 s; the binding's removal takes a moment to reach
        # the API server's admission.
        assert time.monotonic() - removed < 15
        # The probe answers anyone: it names no pod and repeats nothing the API server said.
        assert refused_with(ready, 503, "NodeScopingNotEnforced") == (
            "the API server is not proven to confine this agent to its node; the agent's log "
            "says why"
        )
        for ask in (edge2.upgrade, edge2.imagepull):
            message = refused_with(await ask(namespace, pod), 503, "NodeScopingNotEnforced")
            assert message == (
                "the API server is not proven to confine this agent to its node, so it changes "
                "nothing: the API server accepted a status patch that the admission policy "
                f"{POLICY} must deny: the policy or its binding is missing"
            )
        listed = await edge2.listed(namespace)
        assert [p["metadata"]["name"] for p in listed] == [pod]
        metrics = await edge2.request("GET", "/metrics")
        assert "\nedgerollout_agent_node_scoping_enforced 0.0\n" in metrics.text

        async def warned() -> bool:
            events = await kube.core.list_namespaced_event(
                "default",
                field_selector="reason=NodeScopingNotEnforced,involvedObject.name=edge-2",
            )
            return any(
                event.type == "Warning" and event.involved_object.kind == "Node"
                for event in events.items
            )

        await wait_for(warned, timeout=15, what="a NodeScopingNotEnforced Warning Event")
        assert await snapshot(kube, namespace) == state
    finally:
        await _binding_restored(admission, binding)

    await wait_for(
        readyz_answers(edge2, 200), timeout=30, what="the agent ready once the policy is back"
    )
    metrics = await edge2.request("GET", "/metrics")
    assert "\nedgerollout_agent_node_scoping_enforced 1.0\n" in metrics.text
    await assert_upgrade_started(edge2, namespace, pod)


async def test_a_policy_without_its_node_rule_is_not_proven_and_the_agent_refuses_changes(
    kube: LabHandle, namespace: str, controller: ControllerProcess, edge2: AgentClient
) -> None:
    # The status rule alone passes the first probe; the dry-run delete of another node's pod
    # finds the node rule missing.
    pod, _, _ = await outdated_pod(kube, namespace, "edge-2")
    admission = client.AdmissionregistrationV1Api(kube.api)
    shipped = await admission.read_validating_admission_policy(POLICY)
    node_rule, *others = shipped.spec.validations
    assert "spec.nodeName" in node_rule.expression
    state = await snapshot(kube, namespace)
    elsewhere = await kube.core.list_pod_for_all_namespaces(
        field_selector="spec.nodeName!=edge-2", limit=1
    )
    (other,) = elsewhere.items
    expected = (
        "the API server is not proven to confine this agent to its node, so it changes nothing: "
        f"the API server accepted a delete of {other.metadata.namespace}/{other.metadata.name}, "
        f"a pod on {other.spec.node_name}, that the admission policy {POLICY} must deny: the "
        "policy or its binding is missing"
    )

    await admission.patch_validating_admission_policy(
        POLICY, [{"op": "remove", "path": "/spec/validations/0"}]
    )
    try:
        await wait_for(
            readyz_answers(edge2, 503), timeout=30, what="the agent unready without the node rule"
        )
        refused = refused_with(await edge2.upgrade(namespace, pod), 503, "NodeScopingNotEnforced")
        assert refused == expected
        assert await snapshot(kube, namespace) == state
        assert (
            await kube.core.read_namespaced_pod(other.metadata.name, other.metadata.namespace)
        ).metadata.uid == other.metadata.uid
    finally:
        await admission.patch_validating_admission_policy(
            POLICY,
            [
                {
                    "op": "add",
                    "path": "/spec/validations/0",
                    "value": kube.api.sanitize_for_serialization(node_rule),
                }
            ],
        )

    await wait_for(
        readyz_answers(edge2, 200), timeout=30, what="the agent ready once the node rule is back"
    )
    assert len(
        (await admission.read_validating_admission_policy(POLICY)).spec.validations
    ) == 1 + len(others)


# --- the OpenAPI document against the live agent ----------------------------------------------


def fuzz(url: str, *, token: str, examples: int) -> list[tuple[str, int]]:
    """Requests generated from the agent's own /openapi.json, each with the node's token; each
    answer checked against the document."""
    authorized = {"Authorization": f"Bearer {token}"}
    schema = schemathesis.openapi.from_url(f"{url}/openapi.json", timeout=10, headers=authorized)
    schema.validate()
    checks = [
        not_a_server_error,
        status_code_conformance,
        content_type_conformance,
        response_schema_conformance,
        response_headers_conformance,
        unsupported_method,
        positive_data_acceptance,
    ]
    seen: list[tuple[str, int]] = []

    @hypothesis.settings(
        max_examples=examples,
        deadline=None,
        database=None,
        derandomize=True,
        suppress_health_check=list(hypothesis.HealthCheck),
    )
    @hypothesis.given(case=schema.as_strategy())
    def conforms(case: schemathesis.Case[Any]) -> None:
        response = case.call_and_validate(checks=checks, headers=authorized, timeout=10)
        seen.append((case.operation.label, response.status_code))

    conforms()
    return seen


async def test_live_agent_answers_as_its_openapi_document_says(
    lab: Lab, kube: LabHandle, namespace: str
) -> None:
    await ota_daemonset(kube, namespace)
    state = await snapshot(kube, namespace)
    agents = await snapshot(kube, "edgerollout-system")
    url, token = lab.node("edge-2").agent_url, lab.node("edge-2").agent_token
    assert url is not None
    assert token is not None

    seen = await asyncio.to_thread(fuzz, url, token=token, examples=150)

    labels = {label for label, _ in seen}
    assert {
        "GET /pods",
        "GET /healthz",
        "GET /readyz",
        "GET /metrics",
        "POST /openyurt.io/v1/namespaces/{ns}/pods/{pod}/upgrade",
        "POST /openyurt.io/v1/namespaces/{ns}/pods/{pod}/imagepull",
    } <= labels
    assert all(code < 500 for _, code in seen)
    assert await snapshot(kube, namespace) == state
    assert await snapshot(kube, "edgerollout-system") == agents


RESTRICTED = {
    "runAsNonRoot": True,
    "runAsUser": 65532,
    "allowPrivilegeEscalation": False,
    "capabilities": {"drop": ["ALL"]},
    "seccompProfile": {"type": "RuntimeDefault"},
}


async def test_pre_pull_succeeds_in_a_namespace_that_enforces_podsecurity_restricted(
    lab: Lab, kube: LabHandle, namespace: str, controller: ControllerProcess
) -> None:
    restricted: Any = {"metadata": {"labels": {"pod-security.kubernetes.io/enforce": "restricted"}}}
    await kube.core.patch_namespace(namespace, restricted)
    # The namespace refuses a pod that is not restricted: the guard is really on.
    with pytest.raises(ApiException) as refused:
        await kube.core.create_namespaced_pod(namespace, bare_pod("unrestricted", node="edge-1"))
    assert refused.value.status == 403
    assert refused.value.body is not None
    message = orjson.loads(refused.value.body)["message"]
    assert 'is forbidden: violates PodSecurity "restricted:latest"' in message

    manifest = daemonset(NAME, image=OLD, strategy=ON_DELETE, annotations=OTA)
    manifest["spec"]["template"]["spec"]["containers"][0]["securityContext"] = RESTRICTED
    await kube.apps.create_namespaced_daemon_set(namespace, manifest)
    await running_everywhere(kube, namespace, OLD, NODES)
    pod = by_node(await kube.pods(namespace, SELECTOR))["edge-3"][0].metadata.name
    newest = await new_version_marked(kube, namespace)

    await assert_pull_requested(agent_of(lab, "edge-3"), namespace, pod)
    outcome = await wait_for(
        lambda: pull_outcome(kube, namespace, pod), timeout=30, what="the pre-pull's outcome"
    )
    assert outcome == ("True", "PullImageSuccess", f"controllerrevision: {newest}")
