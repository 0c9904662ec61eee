"""The alert rules (deploy/prometheus/edgerollout-rules.yaml, a copy of the chart's
files/prometheus-rules.yaml): valid for Prometheus, each alert proven to fire and not to fire by
`promtool test rules` (edgerollout-rules.test.yaml), each reading only what edgerollout exports
and pointing to its section of docs/operations.md.

promtool comes with Debian's `prometheus` package, installed on first use (as root with apt-get,
as `./dev test` runs on a fresh machine); where it cannot be, the tests fail saying so, never skip.
That the rules fire from a real Prometheus scraping the lab is tests/e2e/test_alerts.py's.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from edgerollout.domain.reporting.rollout_phase import RolloutCounts, RolloutPhase
from edgerollout_lab import packages, prometheus

from .exported_series import exported_series

ROOT = Path(__file__).resolve().parents[3]
RULES = ROOT / "deploy" / "prometheus" / "edgerollout-rules.yaml"
RULE_TESTS = ROOT / "deploy" / "prometheus" / "edgerollout-rules.test.yaml"
OPERATIONS = ROOT / "docs" / "operations.md"
SEVERITIES = {"critical", "warning"}


@pytest.fixture(scope="module")
def promtool() -> Path:
    try:
        prometheus.ensure_installed(say=print)
    except packages.PackageError as error:
        pytest.fail(f"promtool is needed to test the alert rules: {error}")
    return prometheus.PROMTOOL


def _alerts() -> list[dict[str, Any]]:
    document = yaml.safe_load(RULES.read_text())
    return [rule for group in document["groups"] for rule in group["rules"]]


def _run(*argv: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(part) for part in argv],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=cwd,
    )


def test_promtool_finds_every_rule_valid(promtool: Path) -> None:
    checked = _run(promtool, "check", "rules", RULES)

    assert (checked.returncode, checked.stderr) == (0, "")
    assert checked.stdout == f"Checking {RULES}\n  SUCCESS: 8 rules found\n\n"


def test_every_alert_fires_and_stays_quiet_as_its_promtool_tests_expect(promtool: Path) -> None:
    # promtool reads the rule file relative to the test file.
    tested = _run(promtool, "test", "rules", RULE_TESTS.name, cwd=RULE_TESTS.parent)

    assert tested.returncode == 0, tested.stdout + tested.stderr
    assert tested.stdout == f"Unit Testing:  {RULE_TESTS.name}\n  SUCCESS\n\n"


def test_each_alert_is_tested_firing_and_not_firing() -> None:
    cases = [
        case
        for test in yaml.safe_load(RULE_TESTS.read_text())["tests"]
        for case in test["alert_rule_test"]
    ]
    names = [alert["alert"] for alert in _alerts()]

    assert {c["alertname"] for c in cases if c.get("exp_alerts")} == set(names)
    assert {c["alertname"] for c in cases if not c.get("exp_alerts")} == set(names)


def test_each_alert_has_a_severity_and_says_what_and_where_to_read_more() -> None:
    sections = re.findall(r"^#### (\w+)$", OPERATIONS.read_text(), flags=re.MULTILINE)

    for alert in _alerts():
        name = alert["alert"]
        assert alert["labels"]["severity"] in SEVERITIES, name
        assert set(alert["annotations"]) == {"summary", "description"}, name
        assert "What to do:" in alert["annotations"]["description"], name
        assert f"(docs/operations.md#{name.lower()})" in alert["annotations"]["description"]
    # GitHub's anchor of a heading `#### EdgerolloutRolloutFailed` is #edgerolloutrolloutfailed.
    assert sections == [alert["alert"] for alert in _alerts()]


# The words of the rules' PromQL that are not series: functions, keywords and label names.
_NOT_SERIES = {"max", "by", "on", "and", "unless", "changes", "absent", "m"} | {
    "namespace", "daemonset", "phase", "state", "job",
}  # fmt: skip


def test_the_rules_read_only_series_phases_and_states_edgerollout_exports() -> None:
    exprs = " ".join(alert["expr"] for alert in _alerts())
    words = set(re.findall(r"[a-zA-Z_:][a-zA-Z0-9_:]*", re.sub(r'"[^"]*"', "", exprs)))

    read = words - _NOT_SERIES
    assert read == {
        "edgerollout_rollout_phase",
        "edgerollout_daemonset_nodes",
        "up",
        "leader_election_master_status",
        "edgerollout_agent_node_scoping_enforced",
    }
    assert read <= exported_series()
    phases = set(re.findall(r'phase="(\w+)"', exprs))
    assert phases <= {phase.value for phase in RolloutPhase}
    assert phases == {"RolloutFailed", "ProgressDeadlineExceeded", "Rolling", "InvalidAnnotation"}
    states = set(re.findall(r'state="(\w+)"', exprs))
    assert states <= set(RolloutCounts().by_state())
    assert states == {"remaining", "updated"}
