"""The agent's fresh read of one pod before it acts on it (design §8.3): a node must not act on
a stale view, and a pod that does not exist is the caller's to know about, not an error."""

from __future__ import annotations

from typing import Any

from edgerollout.agent.refused import Refused
from edgerollout.domain.planning.ota_requests import Refusal
from edgerollout.kube.api import PODS, Api, ApiError

JSON = dict[str, Any]


async def read_pod(api: Api, *, namespace: str, name: str) -> JSON:
    """The pod as the API server has it now; refused 404 `PodNotFound` when it does not exist."""
    try:
        return await api.get(PODS, name, namespace=namespace)
    except ApiError as error:
        if error.not_found:
            raise Refused(
                Refusal(404, "PodNotFound", f"pod {namespace}/{name} does not exist")
            ) from None
        raise
