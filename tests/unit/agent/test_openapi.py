"""GET /openapi.json: a valid OpenAPI 3 document that describes every route the agent serves."""

from __future__ import annotations

import re
from typing import Any

import pytest
import schemathesis
from schemathesis.core.result import Ok

from edgerollout.agent.openapi import openapi_document
from tests.unit.kube.fake_api import FakeApi

from .harness import agent, serving

POD_ACTIONS = (
    "/openyurt.io/v1/namespaces/{ns}/pods/{pod}/upgrade",
    "/openyurt.io/v1/namespaces/{ns}/pods/{pod}/imagepull",
)
HOLD = "/edgerollout.io/v1/namespaces/{ns}/pods/{pod}/hold"


async def served() -> dict[str, Any]:
    async with serving(agent(FakeApi())) as client:
        response = await client.get("/openapi.json")
        assert response.status == 200
        assert response.content_type == "application/json"
        document: dict[str, Any] = await response.json()
        return document


async def test_served_document_is_valid_openapi_3() -> None:
    document = await served()
    assert document == openapi_document()
    assert document["openapi"].startswith("3.")
    schema = schemathesis.openapi.from_dict(document)
    schema.validate()
    operations = []
    for result in schema.get_all_operations():
        assert isinstance(result, Ok), result
        operations.append((result.ok().method.upper(), result.ok().path))
    operations.sort()
    assert operations == sorted(
        [
            ("GET", "/pods"),
            ("GET", "/healthz"),
            ("GET", "/readyz"),
            ("GET", "/metrics"),
            *(("POST", path) for path in POD_ACTIONS),
            ("POST", HOLD),
            ("DELETE", HOLD),
        ]
    )


async def test_every_route_the_agent_serves_is_documented() -> None:
    app = agent(FakeApi()).app()
    served_routes = {
        (route.method, route.resource.canonical)
        for route in app.router.routes()
        if route.method != "HEAD" and route.resource is not None
    }
    documented = {
        (method.upper(), path)
        for path, item in openapi_document()["paths"].items()
        for method in item
    }
    assert served_routes - {("GET", "/openapi.json")} == documented


@pytest.mark.parametrize("path", POD_ACTIONS)
def test_pod_actions_document_every_refusal_and_the_text_answer(path: str) -> None:
    responses = openapi_document()["paths"][path]["post"]["responses"]
    assert sorted(responses) == ["200", "400", "401", "403", "404", "409", "413", "502", "503"]
    assert list(responses["200"]["content"]) == ["text/plain"]
    for code, response in responses.items():
        if code != "200":
            assert response["content"]["application/json"]["schema"] == {
                "$ref": "#/components/schemas/Refusal"
            }


def test_only_upgrade_documents_the_paused_rollout_refusal() -> None:
    paths = openapi_document()["paths"]
    upgrade, imagepull = (paths[path]["post"]["responses"]["409"] for path in POD_ACTIONS)
    assert "(RolloutPaused)" in upgrade["description"]
    assert "RolloutPaused" not in imagepull["description"]
    assert "A paused rollout does not hold a pre-pull back." in imagepull["description"]


def test_refusal_schema_is_exactly_code_reason_message() -> None:
    refusal = openapi_document()["components"]["schemas"]["Refusal"]
    assert refusal["required"] == ["code", "reason", "message"]
    assert refusal["additionalProperties"] is False
    pattern = re.compile(refusal["properties"]["reason"]["pattern"])
    for reason in (
        "PodNotFound",
        "CloudUnreachable",
        "NotAnOTAPod",
        "InvalidName",
        "RolloutPaused",
    ):
        assert pattern.match(reason)


@pytest.mark.parametrize("path", POD_ACTIONS)
def test_path_parameters_declare_the_names_the_agent_accepts(path: str) -> None:
    parameters = {
        parameter["name"]: parameter["schema"]
        for parameter in openapi_document()["paths"][path]["post"]["parameters"]
    }
    assert parameters["ns"].get("maxLength") == 63
    assert parameters["pod"].get("maxLength") == 253
    assert "pattern" in parameters["ns"]
    assert "pattern" in parameters["pod"]


def test_bearer_token_is_declared_and_only_the_health_probes_are_open() -> None:
    document = openapi_document()
    assert document["components"]["securitySchemes"]["agentToken"]["type"] == "http"
    assert document["components"]["securitySchemes"]["agentToken"]["scheme"] == "bearer"
    assert document["security"] == [{"agentToken": []}]
    open_routes = sorted(
        path
        for path, item in document["paths"].items()
        for operation in item.values()
        if operation.get("security") == []
    )
    assert open_routes == ["/healthz", "/readyz"]


def test_every_route_documents_the_browser_refusal_and_the_busy_answer() -> None:
    for item in openapi_document()["paths"].values():
        for operation in item.values():
            assert {"403", "503"} <= set(operation["responses"])


@pytest.mark.parametrize("method", ["post", "delete"])
def test_the_hold_documents_every_refusal_its_reasons_and_the_text_answer(method: str) -> None:
    operation = openapi_document()["paths"][HOLD][method]
    responses = operation["responses"]
    assert sorted(responses) == ["200", "400", "401", "403", "404", "409", "413", "502", "503"]
    assert list(responses["200"]["content"]) == ["text/plain"]
    assert "NotOptedIn" in responses["400"]["description"]
    assert "HoldNotAdmitted" in responses["503"]["description"]
    assert [p["name"] for p in operation["parameters"]] == ["ns", "pod"]
    if method == "post":
        assert "(HoldTooLong)" in responses["400"]["description"]
        assert "(InvalidHold)" in responses["400"]["description"]
        assert "(InvalidMaxHold)" in responses["409"]["description"]
        assert "A paused rollout does not refuse a hold." in responses["409"]["description"]
        assert operation["requestBody"]["content"]["application/json"]["schema"] == {
            "$ref": "#/components/schemas/Hold"
        }


def test_the_hold_body_is_until_or_for_and_a_reason() -> None:
    schema = openapi_document()["components"]["schemas"]["Hold"]
    assert sorted(schema["properties"]) == ["for", "reason", "until"]
    assert schema["required"] == ["reason"]
    assert schema["oneOf"] == [{"required": ["until"]}, {"required": ["for"]}]
    assert schema["additionalProperties"] is False
    assert schema["properties"]["reason"]["maxLength"] == 256
