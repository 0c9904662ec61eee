"""`./dev demo` (`python -m edgerollout_lab demo`): the scenarios users run (design §11.5),
played on a local lab and narrated step by step.

1. The problem: a native RollingUpdate DaemonSet on 3 edge nodes, 2 of them disconnected, stalls.
2. AdvancedRollingUpdate: the same change upgrades the connected node at once, skips the
   disconnected ones, and upgrades each of them within seconds of its link coming back.
3. OTA: the controller marks every pod `PodNeedUpgrade=True` and deletes nothing; on edge-2 the
   node asks its agent to pre-pull the new image, then to upgrade — only that pod is replaced.

Everything runs for real: the lab's control plane, the native DaemonSet controller, and
`edgerollout controller` as its own process. The lab is torn down at the end, also on Ctrl-C.
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any

import aiohttp

from edgerollout.cli.status_command import read_status
from edgerollout.cli.status_render import render_table
from edgerollout.domain.model import Condition, ConditionStatus, NodeReadiness, PodView
from edgerollout.domain.vocabulary import (
    ADVANCED_ROLLING_UPDATE,
    MAX_UNAVAILABLE_ANNOTATION,
    ON_DELETE,
    OTA,
    POD_IMAGE_READY,
    POD_NEED_UPGRADE,
    UPDATE_STRATEGY_ANNOTATION,
)
from edgerollout.kube.api import (
    DAEMONSETS,
    NAMESPACES,
    NODES,
    PODS,
    SERVICE_ACCOUNTS,
    ApiError,
    KubeApi,
)
from edgerollout.kube.views import CachedPod, node_from_api, pod_conditions, pod_from_api
from edgerollout.settings import AGENT
from edgerollout_lab import build, cluster
from edgerollout_lab.controller_process import ControllerProcess

Say = Callable[[str], None]
OLD, NEW = "nginx:1.19.4", "nginx:1.19.5"
NODE_NAMES = ["edge-1", "edge-2", "edge-3"]


def _daemonset(name: str, strategy: str | None) -> dict[str, Any]:
    annotations = {UPDATE_STRATEGY_ANNOTATION: strategy} if strategy else {}
    if strategy == ADVANCED_ROLLING_UPDATE:
        annotations[MAX_UNAVAILABLE_ANNOTATION] = "30%"
    update = {"type": ON_DELETE} if strategy else {"type": "RollingUpdate"}
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": name, "annotations": annotations},
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "updateStrategy": update,
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "nginx", "image": OLD}]},
            },
        },
    }


def _status(conditions: Mapping[str, Condition], kind: str) -> ConditionStatus | None:
    """The status of the pod's condition of this type (None: the pod has none)."""
    condition = conditions.get(kind)
    return None if condition is None else condition.status


class Demo:
    def __init__(self, api: KubeApi, lab: cluster.Lab, say: Say) -> None:
        self.api = api
        self.lab = lab
        self.say = say

    async def node_ready(self) -> dict[str, bool]:
        listed = await self.api.list(NODES)
        views = [node_from_api(node) for node in listed.items]
        return {view.name: view.readiness is NodeReadiness.READY for view in views}

    async def pods(self, namespace: str, name: str) -> list[CachedPod]:
        listed = await self.api.list(PODS, namespace=namespace, label_selector=f"app={name}")
        pods = [pod_from_api(item) for item in listed.items]
        return sorted(pods, key=lambda p: (p.view.node_name or "", p.view.name))

    async def table(self, namespace: str, name: str) -> None:
        """What `edgerollout status` prints at this moment, indented under its command line."""
        self.say(f"  $ edgerollout status {name} -n {namespace}")
        status = await read_status(self.api, name=name, namespace=namespace)
        for line in render_table(status).splitlines():
            self.say(f"    {line}")

    async def wait(self, check: Callable[[], Awaitable[bool]], what: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while not await check():
            if time.monotonic() > deadline:
                raise TimeoutError(f"the demo waited {timeout:.0f} s for {what}")
            await asyncio.sleep(0.5)

    async def all_on(self, namespace: str, name: str, image: str, nodes: list[str]) -> bool:
        pods = await self.pods(namespace, name)
        live = [p for p in pods if not p.view.deleting]
        on = {p.view.node_name for p in live if p.images[0] == image}
        return set(nodes) <= on and all(p.view.ready for p in live if p.view.node_name in nodes)

    async def set_image(self, namespace: str, name: str, image: str) -> None:
        patch = {
            "spec": {"template": {"spec": {"containers": [{"name": "nginx", "image": image}]}}}
        }
        await self.api.patch(DAEMONSETS, name, patch, namespace=namespace)

    async def cut(self, *nodes: str) -> None:
        await asyncio.to_thread(cluster.disconnect, self.lab.folder, list(nodes))

        async def not_ready() -> bool:
            ready = await self.node_ready()
            return not any(ready[n] for n in nodes)

        await self.wait(not_ready, f"{', '.join(nodes)} to turn NotReady", 60)

    async def restore(self, *nodes: str) -> None:
        await asyncio.to_thread(cluster.connect, self.lab.folder, list(nodes))

        async def ready() -> bool:
            ready = await self.node_ready()
            return all(ready[n] for n in nodes)

        await self.wait(ready, f"{', '.join(nodes)} to turn Ready", 60)

    async def namespace(self, name: str) -> None:
        await self.api.create(NAMESPACES, {"metadata": {"name": name}})
        for _ in range(120):
            try:
                await self.api.get(SERVICE_ACCOUNTS, "default", namespace=name)
            except ApiError as error:
                if not error.not_found:
                    raise
                await asyncio.sleep(0.5)  # pods are refused until this ServiceAccount exists
            else:
                return

    async def native(self) -> None:
        ns, name = "native", "nginx-daemonset"
        self.say("\n== 1. The problem: a native RollingUpdate with 2 of 3 edge nodes offline")
        await self.namespace(ns)
        await self.api.create(DAEMONSETS, _daemonset(name, None), namespace=ns)
        await self.wait(lambda: self.all_on(ns, name, OLD, NODE_NAMES), "3 running pods", 60)
        await self.table(ns, name)
        self.say("  $ ./dev lab disconnect edge-2 edge-3   # their links to the cloud drop")
        await self.cut("edge-2", "edge-3")
        self.say(f"  $ kubectl -n {ns} set image ds/{name} nginx={NEW}")
        await self.set_image(ns, name, NEW)
        await asyncio.sleep(15)
        await self.table(ns, name)
        self.say(
            "  Stalled: the offline nodes' pods were deleted but can never finish terminating, "
            "they hold the whole budget (maxUnavailable 1), and edge-1 is never upgraded."
        )
        await self.api.delete(DAEMONSETS, name, namespace=ns)
        await self.restore("edge-2", "edge-3")

    async def advanced(self) -> None:
        ns, name = "advanced", "nginx-daemonset"
        self.say("\n== 2. AdvancedRollingUpdate: the same change, with edgerollout's controller")
        await self.namespace(ns)
        await self.api.create(DAEMONSETS, _daemonset(name, ADVANCED_ROLLING_UPDATE), namespace=ns)
        await self.wait(lambda: self.all_on(ns, name, OLD, NODE_NAMES), "3 running pods", 60)
        await self.table(ns, name)
        self.say("  $ ./dev lab disconnect edge-2 edge-3")
        await self.cut("edge-2", "edge-3")
        self.say(f"  $ kubectl -n {ns} set image ds/{name} nginx={NEW}")
        await self.set_image(ns, name, NEW)
        await self.wait(lambda: self.all_on(ns, name, NEW, ["edge-1"]), "edge-1 upgraded", 60)
        await self.table(ns, name)
        self.say("  edge-1 is upgraded; the offline nodes keep their pods and do not block it.")
        self.say("  $ ./dev lab connect edge-2 edge-3")
        await self.restore("edge-2", "edge-3")
        ready_at = time.monotonic()
        await self.wait(lambda: self.all_on(ns, name, NEW, NODE_NAMES), "all upgraded", 60)
        self.say(
            "  Back online, both were upgraded and running the new image "
            f"{time.monotonic() - ready_at:.1f} s after their nodes turned Ready:"
        )
        await self.table(ns, name)

    async def ota(self) -> None:
        ns, name = "ota", "nginx-daemonset"
        self.say("\n== 3. OTA: the controller marks pods, the node decides when")
        await self.namespace(ns)
        await self.api.create(DAEMONSETS, _daemonset(name, OTA), namespace=ns)
        await self.wait(lambda: self.all_on(ns, name, OLD, NODE_NAMES), "3 running pods", 60)

        async def marked(status: ConditionStatus) -> bool:
            pods = await self.pods(ns, name)
            return len(pods) == 3 and all(
                _status(p.view.conditions, POD_NEED_UPGRADE) is status for p in pods
            )

        await self.wait(lambda: marked(ConditionStatus.FALSE), f"{POD_NEED_UPGRADE}=False", 30)
        await self.table(ns, name)
        self.say(f"  $ kubectl -n {ns} set image ds/{name} nginx={NEW}")
        await self.set_image(ns, name, NEW)
        await self.wait(lambda: marked(ConditionStatus.TRUE), f"{POD_NEED_UPGRADE}=True", 30)
        await self.table(ns, name)
        self.say("  Every pod says an upgrade is available; nothing was deleted.")
        agent, token = self.lab.node("edge-2").agent_url, self.lab.node("edge-2").agent_token
        assert agent is not None
        assert token is not None
        self.say("  On edge-2 the node asks its agent (the same API as OpenYurt's YurtHub),")
        self.say(f"  with the token only root on the node can read ({AGENT.token_file}):")
        curl = f'curl -H "Authorization: Bearer $(cat {AGENT.token_file})"'
        async with aiohttp.ClientSession(headers={"Authorization": f"Bearer {token}"}) as http:
            found: list[PodView] = []

            async def agent_sees_upgrade() -> bool:
                async with http.get(f"{agent}/pods") as response:
                    listed = await response.json()
                views = [pod_from_api(item).view for item in listed["items"]]
                found[:] = [
                    view
                    for view in views
                    if view.namespace == ns
                    and _status(view.conditions, POD_NEED_UPGRADE) is ConditionStatus.TRUE
                ]
                return bool(found)

            await self.wait(agent_sees_upgrade, "edge-2's agent to list the upgrade", 60)
            pod, mark = found[0].name, found[0].conditions[POD_NEED_UPGRADE]
            self.say(f"  $ {curl} http://127.0.0.1:10267/pods")
            self.say(f"    {ns}/{pod}: {POD_NEED_UPGRADE}={mark.status} ({mark.message})")
            for action in ("imagepull", "upgrade"):
                path = f"/openyurt.io/v1/namespaces/{ns}/pods/{pod}/{action}"
                if action == "upgrade":
                    await self.wait(lambda: self.pulled(ns, pod), "the image pre-pull", 60)
                    self.say("  The new image is on edge-2 before its pod is touched:")
                    await self.table(ns, name)
                self.say(f"  $ {curl} -X POST http://127.0.0.1:10267{path}")
                async with http.post(f"{agent}{path}") as response:
                    self.say(f"    {await response.text()}")
        await self.wait(lambda: self.all_on(ns, name, NEW, ["edge-2"]), "edge-2 upgraded", 60)
        self.say(
            "  Only edge-2 was upgraded, when it chose to; the others still wait for their nodes:"
        )
        await self.table(ns, name)

    async def pulled(self, namespace: str, pod: str) -> bool:
        found = await self.api.get(PODS, pod, namespace=namespace)
        return _status(pod_conditions(found), POD_IMAGE_READY) is ConditionStatus.TRUE


def run_demo(folder: Path | None, say: Say) -> None:
    say(
        "edgerollout demo: the scenarios users run, on a local lab (etcd, kube-apiserver, "
        "kube-controller-manager, kube-scheduler, KWOK)"
    )
    build.build_all(say)
    owned = folder is None
    lab_dir = Path(tempfile.mkdtemp(prefix="edgerollout-demo-")) if folder is None else folder
    lab = cluster.up(lab_dir, nodes=3, say=say, agents=True)
    controller_log = lab.folder / "logs" / "edgerollout-controller.log"
    controller = ControllerProcess.launch(lab.kubeconfig, controller_log)
    say(f"started edgerollout controller (pid {controller.pid}, log {controller_log})")
    try:
        asyncio.run(_play(lab, say))
        say("\nDone. Every step above ran against a real API server and the native controllers.")
    finally:
        controller.stop()
        cluster.down(lab.folder, say=lambda _: None)
        say(f"lab stopped{'' if owned else f' (its files stay in {lab.folder})'}")


async def _play(lab: cluster.Lab, say: Say) -> None:
    api = await KubeApi.connect(str(lab.kubeconfig))
    try:
        demo = Demo(api, lab, say)
        await demo.native()
        await demo.advanced()
        await demo.ota()
    finally:
        await api.close()
