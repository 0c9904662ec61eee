"""The agent's log lines name the pod, the request and the outcome as structured fields."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from edgerollout.cli.logging_setup import structured_fields

from .harness import IMAGEPULL, UPGRADE, agent, cluster, ota_pod, serving


def _agent_lines(caplog: pytest.LogCaptureFixture) -> list[tuple[str, dict[str, Any]]]:
    return [
        (record.getMessage(), structured_fields(record))
        for record in caplog.records
        if record.name == "edgerollout.agent"
    ]


async def test_upgrade_logs_the_deleted_pod_and_its_uid(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="edgerollout.agent"):
        async with serving(agent(cluster(ota_pod()))) as client:
            response = await client.post(UPGRADE)
            assert response.status == 200

    assert _agent_lines(caplog) == [
        ("upgrade: deleted pod", {"pod": "default/web-x", "uid": "uid-web-x"})
    ]


async def test_refusal_logs_the_request_and_the_reason(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="edgerollout.agent"):
        async with serving(agent(cluster(ota_pod()), token="s3cret")) as client:
            response = await client.post(IMAGEPULL)
            assert response.status == 401

    assert _agent_lines(caplog) == [
        (
            "refused a request",
            {
                "method": "POST",
                "path": "/openyurt.io/v1/namespaces/default/pods/web-x/imagepull",
                "code": 401,
                "reason": "Unauthorized",
            },
        )
    ]
