"""Label selectors agree with the API server: for the same text, `LabelSelector.matches` picks
exactly the nodes the API server lists for `?labelSelector=`, and a selector refused here is
refused there with 400 Bad Request.

The nodes of the lab get a few labels of the test's own (removed afterwards) beside those every
lab node has (`kubernetes.io/hostname`, `node-role.kubernetes.io/edge=""`, ...)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from edgerollout.domain.spec.label_selector import (
    LabelSelector,
    LabelSelectorError,
    parse_label_selector,
)
from edgerollout.kube.api import NODES, ApiError, KubeApi
from edgerollout_lab.cluster import Lab

pytestmark = pytest.mark.lab(nodes=3)

TIER = "e2e.edgerollout.io/tier"
LABELS = {
    "edge-1": {"e2e-zone": "west", "e2e-rank": "1", "e2e-gpu": ""},
    "edge-2": {"e2e-zone": "east", "e2e-rank": "020", TIER: "edge"},
    "edge-3": {"e2e-rank": "x", "e2e-gpu": "a100", TIER: "core"},
}
TEST_KEYS = {key for labels in LABELS.values() for key in labels}

# Each selector, and the nodes it selects (the API server and `matches` must both say so).
SELECTS = {
    "e2e-zone=west": {"edge-1"},
    "e2e-zone==west": {"edge-1"},
    "e2e-zone!=west": {"edge-2", "edge-3"},
    "e2e-zone in (west,east)": {"edge-1", "edge-2"},
    "e2e-zone notin (west)": {"edge-2", "edge-3"},
    "e2e-zone notin (west,east)": {"edge-3"},
    "e2e-gpu": {"edge-1", "edge-3"},
    "!e2e-gpu": {"edge-2"},
    "e2e-gpu=": {"edge-1"},
    "e2e-gpu in ()": {"edge-1"},
    "e2e-gpu notin (,a100)": {"edge-2"},
    "e2e-rank": {"edge-1", "edge-2", "edge-3"},
    "e2e-rank>0": {"edge-1", "edge-2"},
    "e2e-rank>1": {"edge-2"},
    "e2e-rank<20": {"edge-1"},
    "e2e-rank<21,e2e-rank>19": {"edge-2"},
    "e2e-rank>9223372036854775807": set(),
    f"{TIER} in (edge,core),e2e-zone": {"edge-2"},
    f"e2e-zone,!{TIER}": {"edge-1"},
    " e2e-zone = west , kubernetes.io/hostname in ( edge-1 , edge-2 ) ": {"edge-1"},
    "e2e-zone\t!=\teast\n,\r\ne2e-rank": {"edge-1", "edge-3"},
    "kubernetes.io/hostname notin (edge-1),e2e-rank": {"edge-2", "edge-3"},
    "node-role.kubernetes.io/edge=,e2e-zone in (,east)": {"edge-2"},
    "e2e-zone=west,e2e-zone=east": set(),
    "notin notin (in)": {"edge-1", "edge-2", "edge-3"},
    "!in": {"edge-1", "edge-2", "edge-3"},
}

REFUSED = [
    ",e2e-zone",
    "e2e-zone (west)",
    "e2e-zone in west",
    "e2e-zone in (west east)",
    "e2e-zone=west,",
    "!e2e-gpu=a100",
    "e2e-rank>=1",
    "e2e-rank>-1",
    "e2e-rank<1.5",
    "e2e-rank>9223372036854775808",
    "-e2e-zone",
    "Example.com/zone",
    "e2e/zone/a",
    "e2e-zone=" + "w" * 64,
    "e2e-zone\u00a0=west",
]


@pytest.fixture
async def labelled(lab: Lab) -> AsyncIterator[KubeApi]:
    """The product's API client on the lab, whose nodes carry `LABELS` until the test ends."""
    api = await KubeApi.connect(str(lab.kubeconfig))
    try:
        for node, labels in LABELS.items():
            await api.patch(NODES, node, {"metadata": {"labels": labels}})
        yield api
    finally:
        try:
            for node, labels in LABELS.items():
                # null removes a label; removing one never set is not an error
                await api.patch(NODES, node, {"metadata": {"labels": dict.fromkeys(labels)}})
            left = {
                node["metadata"]["name"]: TEST_KEYS & set(node["metadata"].get("labels") or {})
                for node in (await api.list(NODES)).items
            }
        finally:
            await api.close()
    assert left == {node: set() for node in LABELS}


async def listed(api: KubeApi, selector: str) -> set[str]:
    page = await api.list(NODES, label_selector=selector)
    return {node["metadata"]["name"] for node in page.items}


def picked(selector: LabelSelector, nodes: list[dict[str, Any]]) -> set[str]:
    return {
        node["metadata"]["name"]
        for node in nodes
        if selector.matches(node["metadata"].get("labels") or {})
    }


async def test_matches_picks_the_nodes_the_api_server_lists(labelled: KubeApi) -> None:
    nodes = (await labelled.list(NODES)).items
    assert {node["metadata"]["name"] for node in nodes} == set(LABELS)

    served = {text: await listed(labelled, text) for text in SELECTS}
    ours = {text: picked(parse_label_selector(text), nodes) for text in SELECTS}

    assert served == SELECTS
    assert ours == SELECTS


@pytest.mark.parametrize("text", REFUSED)
async def test_a_selector_refused_here_is_refused_by_the_api_server(
    labelled: KubeApi, text: str
) -> None:
    with pytest.raises(LabelSelectorError):
        parse_label_selector(text)
    with pytest.raises(ApiError) as refused:
        await listed(labelled, text)
    assert (refused.value.status, refused.value.reason) == (400, "BadRequest")


async def test_a_nul_is_refused_here_where_the_api_server_drops_what_follows(
    labelled: KubeApi,
) -> None:
    # apimachinery's lexer takes the NUL for the end: `!e2e-gpu` is silently ignored and edge-1,
    # which has e2e-gpu, is listed. A rollout must not reach more nodes than its selector says.
    text = "e2e-zone=west \0,!e2e-gpu"
    assert await listed(labelled, text) == {"edge-1"}
    with pytest.raises(LabelSelectorError) as refused:
        parse_label_selector(text)
    assert refused.value.column == 15
