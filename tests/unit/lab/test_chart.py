"""`helm template`'s output split into the committed manifests' files (edgerollout_lab.chart)."""

from __future__ import annotations

from pathlib import Path

import pytest

from edgerollout_lab import chart
from edgerollout_lab.chart import RenderError

STREAM = """\
---
# Source: edgerollout/templates/namespace.yaml
kind: Namespace

---
# Source: edgerollout/templates/controller.yaml
kind: Service

---
# Source: edgerollout/templates/agent-identity.yaml
# A comment of the template's.
kind: ServiceAccount

---
# Source: edgerollout/templates/controller.yaml
kind: Deployment
"""


def test_each_document_goes_to_its_templates_file_in_helms_order_after_the_header() -> None:
    assert chart.split(STREAM) == {
        chart.IDENTITY: chart.HEADER
        + "---\n# Source: edgerollout/templates/namespace.yaml\nkind: Namespace\n"
        + "---\n# Source: edgerollout/templates/agent-identity.yaml\n"
        + "# A comment of the template's.\nkind: ServiceAccount\n",
        chart.BASE / "controller.yaml": chart.HEADER
        + "---\n# Source: edgerollout/templates/controller.yaml\nkind: Service\n"
        + "---\n# Source: edgerollout/templates/controller.yaml\nkind: Deployment\n",
    }


def test_a_template_without_a_file_is_refused_naming_it() -> None:
    stream = STREAM + "---\n# Source: edgerollout/templates/webhook.yaml\nkind: Service\n"

    with pytest.raises(RenderError) as refused:
        chart.split(stream)

    assert str(refused.value) == (
        "the chart's template webhook.yaml is rendered into no file: name one in "
        "edgerollout_lab.chart.TARGETS"
    )


@pytest.mark.parametrize(
    "stream",
    ["", "kind: Namespace\n", "# Source: edgerollout/templates/namespace.yaml\nkind: Namespace\n"],
)
def test_what_helm_template_does_not_print_is_refused(stream: str) -> None:
    with pytest.raises(RenderError) as refused:
        chart.split(stream)

    assert str(refused.value) == "not the output of `helm template` of the chart edgerollout"


def test_every_file_is_generated_under_deploy_base_the_identity_among_them() -> None:
    assert {path.parent for path in chart.TARGETS.values()} == {chart.BASE}
    assert chart.TARGETS["agent-identity.yaml"] == Path("deploy/base/agent-identity.yaml")
