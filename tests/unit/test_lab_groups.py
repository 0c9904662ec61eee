"""The two lab groups `./dev test` runs side by side (tests/conftest.py): real nodes in one only."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import LAB_OWN, lab_group

ROOT = Path(__file__).resolve().parents[2]
E2E = sorted((ROOT / "tests" / "e2e").rglob("test_*.py"))
# What makes a module start a lab of its own or real nodes.
OWN_LAB_SIGNS = ("real_nodes=1", "lab_of_its_own(", "bench_smoke", "installed_lab")


@pytest.mark.parametrize(
    ("nodeid", "group"),
    [
        ("tests/unit/agent/test_guards.py::test_x", "unit"),
        ("tests/e2e/test_real_node.py::test_x", "lab-own"),
        ("tests/e2e/reliability/test_agent_faults.py::test_x[a]", "lab-own"),
        ("tests/e2e/test_openyurt_comparison.py::test_x[openyurt]", "lab-simulated"),
        ("tests/e2e/reliability/test_chaos.py::test_x[watch-cuts]", "lab-simulated"),
    ],
)
def test_each_test_belongs_to_its_group(nodeid: str, group: str) -> None:
    assert lab_group(nodeid) == group


def test_every_module_with_a_lab_of_its_own_or_real_nodes_is_in_the_own_group() -> None:
    own = [
        str(path.relative_to(ROOT))
        for path in E2E
        if any(sign in path.read_text() for sign in OWN_LAB_SIGNS)
    ]

    assert own != []
    assert [module for module in own if module not in LAB_OWN] == []


def test_the_own_group_names_only_modules_that_exist() -> None:
    assert sorted(LAB_OWN - {str(path.relative_to(ROOT)) for path in E2E}) == []
