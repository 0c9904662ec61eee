"""The OpenAPI 3 description of the agent's API, served at GET /openapi.json.

Every route but the health probes takes the node's bearer token (`agentToken`); every route may
answer 403 to a browser's request or a foreign `Host` (design §8.3), and 503 when too many
requests are in flight."""

from __future__ import annotations

from typing import Any

from edgerollout.domain.planning.ota_requests import DNS_LABEL_PATTERN, DNS_SUBDOMAIN_PATTERN
from edgerollout.domain.spec.node_hold import LONGEST_REASON
from edgerollout.settings import AGENT

_REFUSAL = {"$ref": "#/components/schemas/Refusal"}


def _refusal(description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": _REFUSAL}}}


_UNAUTHORIZED = "A bearer token is required and was missing or wrong."
_BROWSER = (
    "A browser's request (Origin, Sec-Fetch-Site: cross-site or same-site), or a Host that is "
    "not loopback or the listen address."
)
_BUSY = "Too many requests at once (TooManyRequests)."


def _guarded(responses: dict[str, Any], busy: str = _BUSY) -> dict[str, Any]:
    """`responses` with the guards' refusals every route may give."""
    return {"403": _refusal(_BROWSER), "503": _refusal(busy), **responses}


def _text(description: str, example: str) -> dict[str, Any]:
    return {
        "description": description,
        "content": {"text/plain": {"schema": {"type": "string"}, "example": example}},
    }


_POD_PARAMETERS = [
    {
        "name": "ns",
        "in": "path",
        "required": True,
        "description": "The pod's namespace (a DNS-1123 label).",
        "schema": {"type": "string", "maxLength": 63, "pattern": DNS_LABEL_PATTERN},
    },
    {
        "name": "pod",
        "in": "path",
        "required": True,
        "description": "The pod's name (a DNS-1123 subdomain).",
        "schema": {"type": "string", "maxLength": 253, "pattern": DNS_SUBDOMAIN_PATTERN},
    },
]
_UNREACHABLE = (
    "The API server cannot be reached, or the agent has not proven that it is confined to its "
    "node (NodeScopingNotEnforced); nothing was changed."
)


def _pod_responses(
    ok: str, example: str, *, invalid: str, conflicts: str, unavailable: str = _UNREACHABLE
) -> dict[str, Any]:
    return {
        "200": _text(ok, example),
        "400": _refusal(invalid),
        "401": _refusal(_UNAUTHORIZED),
        "403": _refusal(f"The pod is bound to another node. {_BROWSER}"),
        "404": _refusal("The pod does not exist."),
        "409": _refusal(conflicts),
        "413": _refusal("The request body is too large."),
        "502": _refusal("The API server answered with an unexpected error."),
        "503": _refusal(f"{unavailable} {_BUSY}"),
    }


def _pod_action(summary: str, ok: str, example: str, *, conflicts: str) -> dict[str, Any]:
    return {
        "post": {
            "summary": summary,
            "parameters": _POD_PARAMETERS,
            "responses": _pod_responses(
                ok,
                example,
                invalid="An invalid name, or a pod not owned by an OTA DaemonSet.",
                conflicts=conflicts,
            ),
        }
    }


_HOLD_UNAVAILABLE = (
    f"{_UNREACHABLE} Also when the admission policy installed does not admit the "
    "edgerollout.io/UpgradeHeld condition (HoldNotAdmitted): an install from before holds."
)


def _hold() -> dict[str, Any]:
    """POST takes a hold on the pod, DELETE lifts it (design §8.4)."""
    return {
        "post": {
            "summary": "Hold the pod's upgrade until a time, for a reason: the controller does "
            "not replace it (AdvancedRollingUpdate) nor upgrade it at its OTA deadline until "
            "then, or until the DaemonSet's edgerollout.io/max-hold (default 24h) has passed "
            "since the hold was asked. Asking again moves the end, within max-hold of the "
            "first ask.",
            "parameters": _POD_PARAMETERS,
            "requestBody": {
                "required": True,
                "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Hold"}}},
            },
            "responses": _pod_responses(
                "The hold is taken.",
                "Upgrade of pod default/nginx-daemonset-bwzss held until 2026-11-29T18:00:00Z",
                invalid="An invalid name; a body without a future end or a reason (InvalidHold); "
                "an end past max-hold (HoldTooLong); a pod not owned by a DaemonSet edgerollout "
                "rolls out (NotOptedIn).",
                conflicts="The pod is terminating (PodTerminating), changed meanwhile "
                "(PodChanged), or its DaemonSet's edgerollout.io/max-hold cannot be read "
                "(InvalidMaxHold). A paused rollout does not refuse a hold.",
                unavailable=_HOLD_UNAVAILABLE,
            ),
        },
        "delete": {
            "summary": "Lift the pod's hold; a pod without one is left as it is.",
            "parameters": _POD_PARAMETERS,
            "responses": _pod_responses(
                "The hold is lifted (or there was none).",
                "Hold on pod default/nginx-daemonset-bwzss lifted",
                invalid="An invalid name, or a pod not owned by a DaemonSet edgerollout rolls "
                "out (NotOptedIn).",
                conflicts="The pod is terminating (PodTerminating) or changed meanwhile "
                "(PodChanged).",
                unavailable=_HOLD_UNAVAILABLE,
            ),
        },
    }


def openapi_document() -> dict[str, Any]:
    """The agent's OpenAPI 3 document (served at `/openapi.json`)."""
    # One literal, kept whole: it reads as the document a client sees, route after route.
    plain_ok = {"description": "OK", "content": {"text/plain": {"schema": {"type": "string"}}}}
    return {
        "openapi": "3.0.3",
        "info": {
            "title": "edgerollout agent",
            "version": "1",
            "description": "The node-local OTA API: list this node's pods, pre-pull a pod's new "
            "images, upgrade a pod (compatible with OpenYurt's YurtHub OTA API); and hold a "
            "pod's upgrade until a time, or lift the hold.",
        },
        "paths": {
            "/pods": {
                "get": {
                    "summary": "The pods bound to this node, with their status and conditions.",
                    "responses": _guarded(
                        {
                            "200": {
                                "description": "A v1 PodList, from the agent's cache.",
                                "headers": {
                                    "X-Edgerollout-Cache-Age": {
                                        "description": "Seconds since the cache last heard from "
                                        "the API server (0 while connected).",
                                        "schema": {"type": "string"},
                                    }
                                },
                                "content": {
                                    "application/json": {
                                        "schema": {"$ref": "#/components/schemas/PodList"}
                                    }
                                },
                            },
                            "401": _refusal(_UNAUTHORIZED),
                        },
                        busy=f"No pods are known yet. {_BUSY}",
                    ),
                }
            },
            "/openyurt.io/v1/namespaces/{ns}/pods/{pod}/imagepull": _pod_action(
                "Pre-pull the images of the pod's newest revision on this node.",
                "The pre-pull was requested.",
                "Image pre-pull requested for pod default/nginx-daemonset-bwzss",
                conflicts="The pod is terminating (PodTerminating), has no upgrade "
                "(NoUpgradeAvailable), or was replaced meanwhile (the API server's Conflict). "
                "A paused rollout does not hold a pre-pull back.",
            ),
            "/openyurt.io/v1/namespaces/{ns}/pods/{pod}/upgrade": _pod_action(
                "Upgrade the pod now: it is deleted and recreated from the newest revision.",
                "The upgrade started.",
                "Start updating pod default/nginx-daemonset-bwzss",
                conflicts="The pod is terminating (PodTerminating), the rollout of its "
                "DaemonSet is paused (RolloutPaused), it has no upgrade (NoUpgradeAvailable), "
                "its requested pre-pull has not succeeded (ImagePullNotDone), it is being "
                "upgraded by an earlier request (UpgradeInProgress), or it changed while being "
                "upgraded (PodChanged).",
            ),
            "/edgerollout.io/v1/namespaces/{ns}/pods/{pod}/hold": _hold(),
            "/healthz": {
                "get": {
                    "summary": "Liveness.",
                    "security": [],
                    "responses": _guarded({"200": plain_ok}),
                }
            },
            "/readyz": {
                "get": {
                    "summary": "Readiness: the pod cache has content and the API server is "
                    "proven to confine the agent to its node.",
                    "security": [],
                    "responses": _guarded(
                        {"200": plain_ok},
                        busy=f"Not ready yet (CacheNotReady, NodeScopingNotEnforced). {_BUSY}",
                    ),
                }
            },
            "/metrics": {
                "get": {
                    "summary": "Prometheus metrics.",
                    "responses": _guarded({"200": plain_ok, "401": _refusal(_UNAUTHORIZED)}),
                }
            },
        },
        # The node's token (design §8.3), on every route that does not say otherwise.
        "security": [{"agentToken": []}],
        "components": {
            "securitySchemes": {
                "agentToken": {
                    "type": "http",
                    "scheme": "bearer",
                    "description": "The token in the agent's --token-file (by default "
                    f"{AGENT.token_file}, readable by root only). Not required with --auth=none.",
                }
            },
            "schemas": {
                "Refusal": {
                    "type": "object",
                    "required": ["code", "reason", "message"],
                    "properties": {
                        "code": {"type": "integer"},
                        "reason": {"type": "string", "pattern": "^[A-Z][A-Za-z]*$"},
                        "message": {"type": "string"},
                    },
                    "additionalProperties": False,
                },
                "Hold": {
                    "type": "object",
                    "description": 'Either "until" or "for", and "reason".',
                    "required": ["reason"],
                    "properties": {
                        "until": {
                            "type": "string",
                            "format": "date-time",
                            "description": "When the hold ends (RFC 3339), in the future.",
                            "example": "2026-11-29T18:00:00Z",
                        },
                        "for": {
                            "type": "string",
                            "description": "How long the hold lasts from now, a Go duration.",
                            "example": "2h",
                        },
                        "reason": {
                            "type": "string",
                            "minLength": 1,
                            "maxLength": LONGEST_REASON,
                            "description": "Why, in a few words, shown in status and plan.",
                            "example": "a car driving",
                        },
                    },
                    "additionalProperties": False,
                    "oneOf": [{"required": ["until"]}, {"required": ["for"]}],
                },
                "PodList": {
                    "type": "object",
                    "required": ["apiVersion", "kind", "items"],
                    "properties": {
                        "apiVersion": {"type": "string", "enum": ["v1"]},
                        "kind": {"type": "string", "enum": ["PodList"]},
                        "metadata": {"type": "object"},
                        "items": {"type": "array", "items": {"type": "object"}},
                    },
                },
            },
        },
    }
