"""`edgerollout dashboard` against the lab, its page in a real browser (headless Chromium): a
rollout with a cut node and a broken node drawn as the controller reads it, pause from the page,
and a change from another site refused; an operator without the rights to list or to patch
told so on the page; a DaemonSet deleted while shown, and the API server restarted under the
page, each said on the page while the server keeps serving; and a rollout of 10,000 nodes (the
fake API's, no lab holds that many here) drawn and followed."""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import tempfile
import urllib.parse
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from edgerollout.domain.vocabulary import MAX_UNAVAILABLE_ANNOTATION, PAUSED_ANNOTATION
from edgerollout_lab import browser, cluster
from edgerollout_lab.control_plane import free_port
from edgerollout_lab.kubeconfig import read_kubeconfig, write_kubeconfig
from edgerollout_lab.kwok_stages import CRASHLOOP_IMAGE
from tests.e2e.support.cli import BIN, edgerollout
from tests.e2e.support.controller_process import ControllerProcess
from tests.e2e.support.fleet_page import drawn as fleet_drawn
from tests.e2e.support.fleet_page import fleet_page
from tests.e2e.support.lab import LabHandle, set_image, wait_for
from tests.e2e.support.seed import NAME, seed_daemonset
from tests.unit.kube.objects import NEW

pytestmark = pytest.mark.lab(nodes=3)

ARU = {"apps.openyurt.io/update-strategy": "AdvancedRollingUpdate", MAX_UNAVAILABLE_ANNOTATION: "1"}
START_TIMEOUT = 30.0


@dataclass
class Dashboard:
    """A running `edgerollout dashboard --no-browser`: its URL (with the token) and process."""

    url: str
    process: asyncio.subprocess.Process

    @property
    def origin(self) -> str:
        parts = urllib.parse.urlsplit(self.url)
        return f"{parts.scheme}://{parts.netloc}"

    async def stderr(self) -> str:
        """What it wrote on stderr, once stopped."""
        assert self.process.stderr is not None
        return (await self.process.stderr.read()).decode()


@contextlib.asynccontextmanager
async def dashboard_for(
    kube: LabHandle, namespace: str, *, kubeconfig: Path | None = None
) -> AsyncIterator[Dashboard]:
    """`edgerollout dashboard -n NAMESPACE --no-browser` with the admin's kubeconfig or
    `kubeconfig`, stopped on exit."""
    credentials = kube.lab.kubeconfig if kubeconfig is None else kubeconfig
    process = await asyncio.create_subprocess_exec(
        str(BIN / "edgerollout"),
        *("dashboard", "-n", namespace, "--no-browser", "--kubeconfig", str(credentials)),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        assert process.stdout is not None
        first = await asyncio.wait_for(process.stdout.readline(), START_TIMEOUT)
        prefix = "Dashboard: http://127.0.0.1:"
        assert first.decode().startswith(prefix), first
        yield Dashboard(url=first.decode().removeprefix("Dashboard: ").strip(), process=process)
    finally:
        if process.returncode is None:
            process.terminate()
            await asyncio.wait_for(process.wait(), 10)


@contextlib.asynccontextmanager
async def another_site(target: str) -> AsyncIterator[str]:
    """A page of another origin (another port of loopback, as any local program could serve)
    whose form posts to `target` as soon as it loads; its URL."""
    page = f"<form method=post action='{target}'></form><script>document.forms[0].submit()</script>"

    async def serve(_: web.Request) -> web.Response:
        return web.Response(text=page, content_type="text/html")

    app = web.Application()
    app.router.add_get("/", serve)
    runner = web.AppRunner(app)
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    try:
        yield f"http://127.0.0.1:{port}/"
    finally:
        await runner.cleanup()


@pytest.fixture(scope="module")
def chromium() -> None:
    browser.ensure_installed(print)


async def status_document(kube: LabHandle, namespace: str) -> dict[str, Any]:
    result = await edgerollout(kube.lab.kubeconfig, "status", NAME, "-n", namespace, "-o", "json")
    assert result.returncode in (0, 1), result.stderr
    document: dict[str, Any] = json.loads(result.stdout)
    return document


async def drawn(page: browser.Page) -> dict[str, str] | None:
    """node -> the state its cell was drawn in (None: nothing drawn yet)."""
    cells: dict[str, str] | None = await page.evaluate(
        "window.edgerolloutDashboard?.cells() ?? null"
    )
    return cells


async def text_of(page: browser.Page, selector: str) -> str:
    """The text of the element `selector` finds ("" while the page has none: not loaded yet)."""
    found: str = await page.evaluate(
        f"document.querySelector({json.dumps(selector)})?.textContent ?? ''"
    )
    return found


def holds(page: browser.Page, expression: str) -> Callable[[], Awaitable[bool]]:
    """A probe for `wait_for`: whether the page's boolean JavaScript `expression` holds now
    (written to be false, not to throw, while the page's elements are not there yet)."""

    async def probe() -> bool:
        held: bool = await page.evaluate(expression)
        return held

    return probe


def text_when(
    page: browser.Page, selector: str, accept: Callable[[str], bool] = bool
) -> Callable[[], Awaitable[str | None]]:
    """A probe for `wait_for`: the text of `selector` once `accept` takes it (by default, once
    there is any), else None."""

    async def probe() -> str | None:
        text = await text_of(page, selector)
        return text if accept(text) else None

    return probe


async def test_the_page_draws_a_cut_and_a_broken_node_and_pauses_the_rollout(
    kube: LabHandle, namespace: str, controller: ControllerProcess, chromium: None
) -> None:
    await seed_daemonset(kube, namespace, annotations=ARU)
    await kube.cut_off("edge-3")
    await set_image(kube, namespace, NAME, CRASHLOOP_IMAGE)

    async def one_broken() -> dict[str, Any] | None:
        document = await status_document(kube, namespace)
        states = {node["node"]: node["state"] for node in document["nodes"]}
        return document if "broken: CrashLoopBackOff" in states.values() else None

    await wait_for(one_broken, timeout=90, what="a node broken by the crash-looping image")
    # The controller's reading: edge-1 upgraded first and broken, which stops the rollout there
    # (max-unavailable 1); edge-2 waits outdated; edge-3, cut off, waits.
    status = await status_document(kube, namespace)
    assert [(node["node"], node["state"]) for node in status["nodes"]] == [
        ("edge-1", "broken: CrashLoopBackOff"),
        ("edge-2", "old"),
        ("edge-3", "waiting: node NotReady"),
    ]
    expected = {"edge-1": "broken", "edge-2": "outdated", "edge-3": "waiting"}

    async with dashboard_for(kube, namespace) as served, browser.headless_page() as page:
        await page.navigate(f"{served.url}#/rollouts/{namespace}/{NAME}")

        async def as_expected() -> dict[str, str] | None:
            cells = await drawn(page)
            return cells if cells == expected else None

        assert await wait_for(as_expected, timeout=30, what="the cells drawn") == expected
        legend = await text_of(page, "#legend")
        assert "broken (B): 1" in legend
        assert "waiting: node offline (W): 1" in legend
        assert "outdated (O): 1" in legend
        assert await text_of(page, "#rollout-summary") == status["summary"]
        # The broken node's detail, as hovering or selecting its cell shows it.
        detail = await page.evaluate("window.edgerolloutDashboard.describeAt(2, 24)")
        assert detail.splitlines()[:4] == [
            "node      edge-1   (pool (no pool), Ready)",
            f"pod       {status['nodes'][0]['pod']}",
            f"revision  {status['nodes'][0]['revision']} (current)",
            "state     broken (broken: CrashLoopBackOff)",
        ]

        # Pause from the page: the same patch as `edgerollout pause`.
        await page.evaluate("document.querySelector('#pause').click()")

        said = text_when(page, "#action-message", lambda message: message not in ("", "pause…"))
        assert await wait_for(said, timeout=15, what="the answer to pause") == (
            f"daemonset.apps/{NAME} paused"
        )
        found = await kube.apps.read_namespaced_daemon_set(NAME, namespace)
        assert found.metadata.annotations[PAUSED_ANNOTATION] == "true"

        staged_paused = text_when(
            page, "#rollout-staging", lambda staging: staging.startswith("Staging: paused")
        )
        await wait_for(staged_paused, timeout=15, what="the page showing the pause")
        assert await drawn(page) == {"edge-1": "broken", "edge-2": "held", "edge-3": "waiting"}

        # Another site's page posts a resume to the dashboard: the browser sends it (a form
        # needs no permission), the dashboard refuses it, and the rollout stays paused.
        resume = f"{served.origin}/api/rollouts/{namespace}/{NAME}/resume"
        async with another_site(resume) as attacker:
            await page.navigate(attacker)
            answered = holds(page, f"location.href === {json.dumps(resume)}")
            await wait_for(answered, timeout=15, what="the form's post answered")
        attacker_origin = attacker.removesuffix("/")
        assert json.loads(await page.evaluate("document.body.innerText")) == {
            "message": f"a change from another site ({attacker_origin}) is refused"
        }
        async with aiohttp.ClientSession() as session:
            scripted = await session.post(resume, headers={"Origin": "http://evil.example"})
            assert (scripted.status, await scripted.json()) == (
                403,
                {"message": "a change from another site (http://evil.example) is refused"},
            )
        found = await kube.apps.read_namespaced_daemon_set(NAME, namespace)
        assert found.metadata.annotations[PAUSED_ANNOTATION] == "true"

    logged = await served.stderr()
    refused = [line for line in logged.splitlines() if line.startswith("refused POST")]
    assert refused == [
        f"refused POST /api/rollouts/{namespace}/{NAME}/resume: "
        f"a change from another site ({attacker_origin}) is refused",
        f"refused POST /api/rollouts/{namespace}/{NAME}/resume: "
        "a change from another site (http://evil.example) is refused",
    ]


async def test_a_daemonset_deleted_while_shown_is_said_gone_and_home_still_served(
    kube: LabHandle, namespace: str, chromium: None
) -> None:
    await seed_daemonset(kube, namespace, annotations=ARU)
    everywhere = {"edge-1": "updated", "edge-2": "updated", "edge-3": "updated"}
    async with dashboard_for(kube, namespace) as served, browser.headless_page() as page:
        await page.navigate(f"{served.url}#/rollouts/{namespace}/{NAME}")

        async def all_drawn() -> dict[str, str] | None:
            cells = await drawn(page)
            return cells if cells == everywhere else None

        await wait_for(all_drawn, timeout=30, what="the cells drawn")
        await kube.apps.delete_namespaced_daemon_set(NAME, namespace)
        gone = f"daemonset {namespace}/{NAME} does not exist, or is not opted in to edgerollout"

        said_gone = text_when(page, "#rollout-summary", gone.__eq__)
        assert await wait_for(said_gone, timeout=30, what="the page saying so") == gone
        assert await page.evaluate("document.querySelector('#rollout').className") == "gone"
        assert await text_of(page, "#banner") == ""

        # The server goes on: its home page loads, without the DaemonSet.
        await page.navigate(served.url)

        home_shown = holds(
            page,
            "document.querySelector('#home')?.hidden === false"
            " && document.querySelector('#home-empty')?.hidden === false",
        )
        await wait_for(home_shown, timeout=30, what="the home page")
        assert await text_of(page, "#home-empty") == (
            "No DaemonSet here is opted in to edgerollout."
        )
        assert await text_of(page, "#rollouts tbody") == ""
        assert served.process.returncode is None
    assert "Traceback" not in await served.stderr()


# The first of the five informers to fail names its watch (or list), how it failed (refused,
# cut short, timed out: it depends on the moment) and when the watches start again.
LOST = re.compile(
    r"The API server cannot be read: cannot reach the API server: "
    r"(watch (daemonsets|controllerrevisions|pods|nodes|rolebindings)|GET /\S+): .+ "
    r"\(trying again in \d+ s\)"
)


async def test_a_lost_api_server_is_a_banner_until_it_is_back_and_the_page_follows_again(
    kube: LabHandle, namespace: str, chromium: None
) -> None:
    await seed_daemonset(kube, namespace, annotations=ARU)
    async with dashboard_for(kube, namespace) as served, browser.headless_page() as page:
        await page.navigate(f"{served.url}#/rollouts/{namespace}/{NAME}")

        summary = text_when(page, "#rollout-summary")
        assert await wait_for(summary, timeout=30, what="the summary") == (
            f'daemon set "{NAME}" successfully rolled out'
        )
        restarting = asyncio.create_task(
            asyncio.to_thread(cluster.restart, kube.lab.folder, "kube-apiserver", down_for=8.0)
        )
        try:
            bannered = text_when(page, "#banner")
            banner = await wait_for(bannered, timeout=30, what="the banner")
            assert LOST.fullmatch(banner), banner
            assert await page.evaluate("document.querySelector('#banner').hidden") is False
        finally:
            await restarting

        banner_gone = holds(
            page,
            "document.querySelector('#banner').hidden"
            " && document.querySelector('#banner').textContent === ''",
        )
        # The watches start again within their back-off (at most 30 s), the banner goes.
        await wait_for(banner_gone, timeout=60, what="the banner gone")

        # And the page follows the cluster again: a pause made elsewhere is drawn.
        await kube.apps.patch_namespaced_daemon_set(
            NAME, namespace, {"metadata": {"annotations": {PAUSED_ANNOTATION: "true"}}}
        )

        staged_paused = text_when(page, "#rollout-staging", "Staging: paused".__eq__)
        assert await wait_for(staged_paused, timeout=30, what="the pause drawn") == (
            "Staging: paused"
        )
        # The API server was gone longer than the lab's node grace period (10 s): the node
        # lifecycle controller may mark the nodes NotReady, and their pods unavailable, once it
        # reads again, until KWOK renews their Leases. The page draws that too, and then the
        # nodes' return.
        rolled_out = f'daemon set "{NAME}" successfully rolled out'
        summary_back = text_when(page, "#rollout-summary", rolled_out.__eq__)
        assert await wait_for(summary_back, timeout=60, what="the summary back") == rolled_out
        assert await text_of(page, "#rollout-staging") == "Staging: paused"
        assert served.process.returncode is None


VIEWER = "dashboard-viewer"
# What `list` reads, and `get` of a DaemonSet (what pause reads first): every right but a write.
READS = ["get", "list", "watch"]


async def viewer_kubeconfig(kube: LabHandle, namespace: str, path: Path) -> tuple[Path, str]:
    """A kubeconfig of a ServiceAccount holding no right at all yet, and its user name."""
    # Plain manifests, as the client accepts them where it types models.
    account: Any = {"metadata": {"name": VIEWER}}
    await kube.core.create_namespaced_service_account(namespace, account)
    request: Any = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}}
    answer = await kube.core.create_namespaced_service_account_token(VIEWER, namespace, request)
    admin = read_kubeconfig(kube.lab.kubeconfig)
    user = f"system:serviceaccount:{namespace}:{VIEWER}"
    written = write_kubeconfig(
        path, server=admin.server, ca_file=admin.ca_file, user=user, token=answer.status.token
    )
    return written, user


def forbidden(user: str, resource: str, group: str, scope: str) -> str:
    """The banner of a list the API server refused to `user`."""
    named = f"{resource}.{group}" if group else resource
    return (
        "The API server cannot be read: the API server answered 403 Forbidden: "
        f'{named} is forbidden: User "{user}" cannot list resource "{resource}" in API group '
        f'"{group}" {scope}'
    )


def binding(kind: str, name: str, namespace: str) -> Any:
    """A (Cluster)RoleBinding `name` of the (Cluster)Role `name` to the viewer."""
    return {
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": name},
        "subjects": [{"kind": "ServiceAccount", "name": VIEWER, "namespace": namespace}],
    }


async def grant_reads(kube: LabHandle, namespace: str) -> None:
    """The viewer may read what the dashboard reads: in the namespace, and the Nodes (a
    ClusterRole named after the namespace, `revoke_node_reads` deletes it)."""
    rbac = client.RbacAuthorizationV1Api(kube.api)
    role: Any = {
        "metadata": {"name": VIEWER},
        "rules": [
            {
                "apiGroups": ["apps"],
                "resources": ["daemonsets", "controllerrevisions"],
                "verbs": READS,
            },
            {"apiGroups": [""], "resources": ["pods", "events"], "verbs": READS},
        ],
    }
    await rbac.create_namespaced_role(namespace, role)
    await rbac.create_namespaced_role_binding(namespace, binding("Role", VIEWER, namespace))
    nodes: Any = {
        "metadata": {"name": namespace},
        "rules": [{"apiGroups": [""], "resources": ["nodes"], "verbs": READS}],
    }
    await rbac.create_cluster_role(nodes)
    await rbac.create_cluster_role_binding(binding("ClusterRole", namespace, namespace))


async def revoke_node_reads(kube: LabHandle, namespace: str) -> None:
    rbac = client.RbacAuthorizationV1Api(kube.api)
    with contextlib.suppress(ApiException):
        await rbac.delete_cluster_role_binding(namespace)
    with contextlib.suppress(ApiException):
        await rbac.delete_cluster_role(namespace)


async def test_an_operator_without_rights_is_told_on_the_page_and_not_served(
    kube: LabHandle, namespace: str, chromium: None, tmp_path: Path
) -> None:
    await seed_daemonset(kube, namespace, annotations=ARU)
    kubeconfig, user = await viewer_kubeconfig(kube, namespace, tmp_path / "viewer.kubeconfig")
    try:
        async with (
            dashboard_for(kube, namespace, kubeconfig=kubeconfig) as served,
            browser.headless_page() as page,
        ):
            await page.navigate(f"{served.url}#/rollouts/{namespace}/{NAME}")
            bannered = text_when(page, "#banner")
            # Without the right to list: a banner saying which list was refused (the four
            # informers start together, so any of them may be first), the page still served.
            banner = await wait_for(bannered, timeout=30, what="the banner")
            refusals = [
                forbidden(user, "daemonsets", "apps", f'in the namespace "{namespace}"'),
                forbidden(user, "controllerrevisions", "apps", f'in the namespace "{namespace}"'),
                forbidden(user, "pods", "", f'in the namespace "{namespace}"'),
                forbidden(user, "nodes", "", "at the cluster scope"),
            ]
            retry = r" \(trying again in \d+ s\)"
            assert any(re.fullmatch(re.escape(one) + retry, banner) for one in refusals), banner

            # Granted reads only: the watches start again, the grid is drawn, and a pause is
            # refused with the API server's words, written nowhere.
            await grant_reads(kube, namespace)

            async def listed() -> dict[str, str] | None:
                cells = await drawn(page)
                return cells if cells and not await text_of(page, "#banner") else None

            assert await wait_for(listed, timeout=60, what="the grid, once granted") == {
                "edge-1": "updated",
                "edge-2": "updated",
                "edge-3": "updated",
            }
            await page.evaluate("document.querySelector('#pause').click()")

            async def refused() -> str | None:
                refusal = await page.evaluate(
                    "document.querySelector('#action-message.refused')?.textContent ?? null"
                )
                return refusal or None

            assert await wait_for(refused, timeout=15, what="the refusal") == (
                "the API server answered 403 Forbidden: "
                f'daemonsets.apps "{NAME}" is forbidden: User "{user}" cannot patch resource '
                f'"daemonsets" in API group "apps" in the namespace "{namespace}"'
            )
        found = await kube.apps.read_namespaced_daemon_set(NAME, namespace)
        assert PAUSED_ANNOTATION not in (found.metadata.annotations or {})
    finally:
        await revoke_node_reads(kube, namespace)


async def test_a_10000_node_rollout_is_drawn_and_followed_while_it_runs(chromium: None) -> None:
    # How fast it draws is measured, not asserted here (docs/design.md §9.4: about 0.2-0.35 s
    # from navigation to the grid on this 2-core machine, a 0.94 MB document).
    async with fleet_page(10_000) as fleet, browser.headless_page() as page:
        await page.navigate(fleet.url)
        await fleet_drawn(page)
        first = await page.evaluate("window.edgerolloutDashboard.timing()")
        cells = await page.evaluate("Object.keys(window.edgerolloutDashboard.cells()).length")
        legend = await text_of(page, "#legend")
        # The keyboard selects too: the first cell, then the next of its pool (sorted by name).
        for _ in range(2):
            await page.evaluate(
                "document.querySelector('#grid')"
                ".dispatchEvent(new KeyboardEvent('keydown', {key: 'ArrowRight'}))"
            )
        selected = (await text_of(page, "#detail")).splitlines()[0]

        # While it runs: a pod replaced every 50 ms for 5 s, 100 in all, on the Ready nodes.
        replaced = [f"shop-{number:05d}" for number in range(1, 1000, 10)]
        for node in replaced:
            fleet.replace_pod(node, NEW)
            await asyncio.sleep(0.05)

        async def every_replacement_drawn() -> dict[str, str] | None:
            cells = await drawn(page)
            done = cells is not None and {cells[node] for node in replaced} == {"updated"}
            return cells if done else None

        # The last document comes within a second of the last change (at most one a second).
        drawn_cells = await wait_for(
            every_replacement_drawn, timeout=30, what="every replaced pod drawn updated"
        )
        running = await page.evaluate("window.edgerolloutDashboard.timing()")
    assert cells == 10_000
    # A third of the nodes run the newest revision, the 2,000 of the two cut pools too: the
    # other 1,333 of them wait, the 5,333 Ready ones are outdated.
    assert legend == (
        "updated (U): 3334upgrading (G): 0pulling its image (P): 0outdated (O): 5333"
        "held (H): 0waiting: node offline (W): 1333broken (B): 0"
    )
    assert selected == "node      shop-00010   (pool shops-00, Ready)"
    # Pushed at most once a second while it changes, the last with every replaced pod.
    seconds = (running["receivedAt"] - first["receivedAt"]) / 1000
    assert 1 <= running["documents"] - first["documents"] <= seconds + 1, running
    assert {drawn_cells[node] for node in replaced} == {"updated"}


async def test_a_node_whose_pod_is_gone_is_drawn_and_described_without_one(
    chromium: None,
) -> None:
    async with fleet_page(1000) as fleet, browser.headless_page() as page:
        await page.navigate(fleet.url)
        await fleet_drawn(page)
        before = await drawn(page)
        assert before is not None
        fleet.remove_pod("shop-00001")

        async def redrawn() -> dict[str, str] | None:
            cells = await drawn(page)
            return cells if cells and cells.get("shop-00001") == "upgrading" else None

        after = await wait_for(redrawn, timeout=30, what="the cell without a pod")
        # shop-00001 is the first cell of the second pool (shops-01, 100 nodes each).
        await page.evaluate(
            "for (let i = 0; i < 101; i++) document.querySelector('#grid')"
            ".dispatchEvent(new KeyboardEvent('keydown', {key: 'ArrowRight'}))"
        )
        detail = (await text_of(page, "#detail")).splitlines()
    assert before["shop-00001"] == "outdated"
    assert {node: state for node, state in after.items() if before.get(node) != state} == {
        "shop-00001": "upgrading"
    }
    assert len(after) == 1000
    assert detail[:4] == [
        "node      shop-00001   (pool shops-01, Ready)",
        "pod       <none>",
        "revision  <none>",
        "state     upgrading (no pod)",
    ]
    assert re.fullmatch(r"since     \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", detail[4]), detail


async def test_the_home_page_shows_lists_row_and_a_bar_of_each_rollout(chromium: None) -> None:
    async with fleet_page(1000) as fleet, browser.headless_page() as page:
        await page.navigate(fleet.url.split("#", 1)[0])

        rows = text_when(page, "#rollouts tbody")
        listed = await wait_for(rows, timeout=30, what="the home page's rows")
        bar = await page.evaluate("document.querySelector('.progress').getAttribute('aria-label')")
    # list's row of the fleet: 334 of 1,000 updated, 133 offline (the two cut pools' outdated).
    assert listed == "defaultshop-agentAdvancedRollingUpdate334/100013300<none>rolling"
    assert bar == "334 updated, 0 held, 133 offline, 0 broken of 1000"


async def test_a_closed_page_leaves_none_of_the_browsers_files_behind(chromium: None) -> None:
    # Chromium keeps its singleton socket in a folder of TMPDIR and leaves it there when stopped.
    temp = Path(tempfile.gettempdir())

    def browsers_files() -> set[Path]:
        return {*temp.glob("org.chromium.Chromium.*"), *temp.glob("edgerollout-chromium-*")}

    before = browsers_files()
    async with browser.headless_page() as page:
        await page.navigate("about:blank")
        opened = browsers_files() - before
    assert [path.name.startswith("edgerollout-chromium-") for path in opened] == [True]
    assert browsers_files() - before == set()
