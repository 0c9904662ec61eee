"""The controller starts only where its admission policies can be in force (design §10.9).

`kubectl apply -k deploy/base` on an API server without ValidatingAdmissionPolicy applies the rest
and reports the policies as unknown kinds; the controller must then refuse to start, not run with
its identity unconfined. The discovery documents below are an API server's own answers.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest
import yaml
from aiohttp import web
from kubernetes_asyncio import client

from edgerollout.controller.manager import AdmissionPoliciesNotServed, require_admission_policies
from edgerollout.kube.api import KubeApi

# GET /apis/admissionregistration.k8s.io/v1, trimmed to the resources' names.
SERVED_1_36 = {
    "kind": "APIResourceList",
    "groupVersion": "admissionregistration.k8s.io/v1",
    "resources": [
        {"name": name}
        for name in (
            "mutatingwebhookconfigurations",
            "validatingadmissionpolicies",
            "validatingadmissionpolicies/status",
            "validatingadmissionpolicybindings",
            "validatingwebhookconfigurations",
        )
    ],
}
SERVED_1_29 = {
    "kind": "APIResourceList",
    "groupVersion": "admissionregistration.k8s.io/v1",
    "resources": [
        {"name": "mutatingwebhookconfigurations"},
        {"name": "validatingwebhookconfigurations"},
    ],
}
REFUSAL = (
    "the API server does not serve ValidatingAdmissionPolicy (admissionregistration.k8s.io/v1, "
    "Kubernetes 1.30 or later): the admission policies that confine the controller's identity "
    "cannot be in force, so the controller does not start"
)

Answer = Callable[[], web.Response]


@pytest.fixture
async def discovery() -> AsyncIterator[tuple[KubeApi, list[Answer], list[str]]]:
    """A KubeApi on a server that gives each request the next answer; the paths it was asked."""
    answers: list[Answer] = []
    asked: list[str] = []

    async def handle(request: web.Request) -> web.Response:
        asked.append(request.path)
        return answers.pop(0)()

    app = web.Application()
    app.router.add_get("/{tail:.*}", handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    api = KubeApi(client.ApiClient(client.Configuration(host=f"http://127.0.0.1:{port}")))
    try:
        yield api, answers, asked
    finally:
        await api.close()
        await runner.cleanup()


def _json(body: object, status: int = 200) -> Answer:
    return lambda: web.json_response(body, status=status)


async def test_an_api_server_serving_the_policies_lets_the_controller_start(
    discovery: tuple[KubeApi, list[Answer], list[str]],
) -> None:
    api, answers, asked = discovery
    answers.append(_json(SERVED_1_36))

    await require_admission_policies(api, retry=0.01)

    assert asked == ["/apis/admissionregistration.k8s.io/v1"]


@pytest.mark.parametrize(
    "answer",
    [
        pytest.param(_json(SERVED_1_29), id="kubernetes-1.29"),
        pytest.param(_json({"kind": "Status", "code": 404}, status=404), id="no-such-group"),
    ],
)
async def test_an_api_server_without_the_policies_stops_the_controller_saying_why(
    discovery: tuple[KubeApi, list[Answer], list[str]], answer: Answer
) -> None:
    api, answers, _ = discovery
    answers.append(answer)

    with pytest.raises(AdmissionPoliciesNotServed) as raised:
        await require_admission_policies(api, retry=0.01)

    assert str(raised.value) == REFUSAL


async def test_an_unanswered_discovery_is_asked_again_until_it_is_answered(
    discovery: tuple[KubeApi, list[Answer], list[str]],
) -> None:
    api, answers, asked = discovery
    answers.extend([_json({"kind": "Status"}, status=503), _json(SERVED_1_36)])

    await require_admission_policies(api, retry=0.01)

    assert asked == ["/apis/admissionregistration.k8s.io/v1"] * 2


async def test_the_controller_command_exits_1_naming_the_missing_api(
    discovery: tuple[KubeApi, list[Answer], list[str]], tmp_path: Path
) -> None:
    api, answers, _ = discovery
    answers.append(_json(SERVED_1_29))
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": api.host}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "x",
            }
        )
    )

    command = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "edgerollout",
        "controller",
        f"--kubeconfig={kubeconfig}",
        "--metrics-address=127.0.0.1:0",
        "--health-address=127.0.0.1:0",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    stdout, stderr = await asyncio.wait_for(command.communicate(), timeout=60)

    assert (command.returncode, stdout) == (1, b"")
    assert stderr.decode().splitlines()[-1] == f"Error: {REFUSAL}"
