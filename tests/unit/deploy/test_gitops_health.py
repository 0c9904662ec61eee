"""Argo CD's and Flux's verdicts on a DaemonSet, with the health customizations in deploy/gitops.

The `gitops-health` program (`src/edgerollout_lab/gomod/gitops-health`) runs the Lua script and the
CEL expressions with the interpreters those tools embed, as they run them; `./dev test` builds it
with the lab. Without it these tests fail, naming `./dev lab build`: they never skip.

Every reason of the condition edgerollout.io/Progressing gets its verdict, a condition for an older
generation counts as still progressing, and a DaemonSet without the condition gets each tool's
built-in judgement (gitops-engine's getAppsv1DaemonSetHealth, kstatus's daemonsetConditions).
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from edgerollout_lab import versions
from edgerollout_lab.build import binary
from edgerollout_lab.versions import GITOPS_HEALTH

ROOT = Path(__file__).resolve().parents[3]
GITOPS = ROOT / "deploy" / "gitops"
LUA = GITOPS / "argocd-health-daemonset.lua"
ARGOCD_CM = GITOPS / "argocd-cm.yaml"
FLUX_KUSTOMIZATION = GITOPS / "flux-kustomization.yaml"
CONDITION = "edgerollout.io/Progressing"


@dataclass(frozen=True, slots=True)
class Verdict:
    argocd: str
    argocd_message: str
    flux: str


def judge(program: Path, daemonset: dict[str, Any]) -> Verdict:
    """Both tools' verdicts on one DaemonSet object, as the API server serves it."""
    result = subprocess.run(
        [
            str(program),
            "--argocd-cm",
            str(ARGOCD_CM),
            "--flux-kustomization",
            str(FLUX_KUSTOMIZATION),
        ],
        input=json.dumps(daemonset),
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    return Verdict(
        argocd=out["argocd"]["status"],
        argocd_message=out["argocd"]["message"],
        flux=out["flux"]["status"],
    )


@pytest.fixture(scope="session")
def gitops_health() -> Path:
    return binary("gitops-health", GITOPS_HEALTH)


def daemonset(
    *,
    strategy: str = "OnDelete",
    generation: int = 2,
    observed: int | None = 2,
    desired: int = 3,
    current: int = 3,
    updated: int = 3,
    available: int = 3,
    ready: int = 3,
    conditions: tuple[dict[str, str], ...] = (),
) -> dict[str, Any]:
    status: dict[str, Any] = {
        "desiredNumberScheduled": desired,
        "currentNumberScheduled": current,
        "updatedNumberScheduled": updated,
        "numberAvailable": available,
        "numberReady": ready,
        "numberMisscheduled": 0,
    }
    if observed is not None:
        status["observedGeneration"] = observed
    if conditions:
        status["conditions"] = list(conditions)
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": "shop-agent", "namespace": "edge", "generation": generation},
        "spec": {"updateStrategy": {"type": strategy}},
        "status": status,
    }


def progressing(
    reason: str, status: str, *, generation: int = 2, message: str = ""
) -> dict[str, str]:
    return {
        "type": CONDITION,
        "status": status,
        "reason": reason,
        "message": message
        or f"1 of 3 nodes updated, 1 offline, 0 broken, 0 held, 1 to go (generation {generation})",
        "lastTransitionTime": "2026-11-29T01:00:00Z",
    }


COUNTS = "1 of 3 nodes updated, 1 offline, 0 broken, 0 held, 1 to go (generation 2)"
BUILTIN_STALE = (
    "Waiting for rollout to finish: observed daemon set generation less than desired generation"
)


@pytest.mark.parametrize(
    ("reason", "status", "argocd", "flux"),
    [
        ("Complete", "True", "Healthy", "Current"),
        ("WaitingForOfflineNodes", "True", "Healthy", "Current"),
        ("Rolling", "True", "Progressing", "InProgress"),
        ("Held", "True", "Suspended", "Current"),
        ("MaintenanceWindowClosed", "True", "Suspended", "Current"),
        ("Paused", "Unknown", "Suspended", "Current"),
        ("RolloutFailed", "False", "Degraded", "Failed"),
        ("ProgressDeadlineExceeded", "False", "Degraded", "Failed"),
        ("InvalidAnnotation", "False", "Degraded", "Failed"),
    ],
)
def test_each_reason_of_a_current_condition_has_its_verdict(
    gitops_health: Path, reason: str, status: str, argocd: str, flux: str
) -> None:
    # Counts that Argo CD's built-in check would call Healthy (OnDelete) and kstatus InProgress:
    # the verdict comes from the condition alone.
    ds = daemonset(updated=1, available=2, ready=2, conditions=(progressing(reason, status),))

    assert judge(gitops_health, ds) == Verdict(argocd, f"{reason}: {COUNTS}", flux)


@pytest.mark.parametrize(
    "message",
    [
        "cannot follow InvalidMaxFailed; nodes not counted (generation 2)",
        "cannot follow InvalidPartition, InvalidMaxFailed; "
        "0 of 3 nodes updated, 0 offline, 0 broken, 0 held, 3 to go (generation 2)",
    ],
)
def test_invalid_annotation_shows_its_reasons_in_argo_cd(gitops_health: Path, message: str) -> None:
    ds = daemonset(conditions=(progressing("InvalidAnnotation", "False", message=message),))

    assert judge(gitops_health, ds) == Verdict(
        "Degraded", f"InvalidAnnotation: {message}", "Failed"
    )


@pytest.mark.parametrize("reason", ["Complete", "RolloutFailed", "Held"])
def test_a_condition_for_an_older_generation_is_still_progressing(
    gitops_health: Path, reason: str
) -> None:
    ds = daemonset(generation=3, observed=3, conditions=(progressing(reason, "True"),))

    assert judge(gitops_health, ds) == Verdict(
        "Progressing",
        "Waiting for edgerollout to judge generation 3 (its condition is for 2)",
        "InProgress",
    )


def test_a_condition_before_the_daemonset_controller_observed_the_generation_is_progressing(
    gitops_health: Path,
) -> None:
    ds = daemonset(
        generation=3, observed=2, conditions=(progressing("Complete", "True", generation=3),)
    )

    assert judge(gitops_health, ds) == Verdict("Progressing", BUILTIN_STALE, "InProgress")


def test_a_message_without_its_generation_is_progressing(gitops_health: Path) -> None:
    ds = daemonset(conditions=(progressing("Complete", "True", message="3 of 3 nodes updated"),))

    assert judge(gitops_health, ds) == Verdict(
        "Progressing",
        "Waiting for edgerollout to judge generation 2 (its condition is for no generation)",
        "InProgress",
    )


def test_an_unknown_reason_is_unknown_to_argo_cd_and_in_progress_to_flux(
    gitops_health: Path,
) -> None:
    ds = daemonset(conditions=(progressing("Rebalancing", "True"),))

    assert judge(gitops_health, ds) == Verdict(
        "Unknown", f"unknown edgerollout phase Rebalancing: {COUNTS}", "InProgress"
    )


def test_other_conditions_beside_edgerollouts_are_ignored(gitops_health: Path) -> None:
    other = {"type": "example.com/Audited", "status": "False", "reason": "Late", "message": "x"}
    ds = daemonset(conditions=(other, progressing("Complete", "True")))

    assert judge(gitops_health, ds) == Verdict("Healthy", f"Complete: {COUNTS}", "Current")


# Without the condition: each tool's built-in judgement, word for word where Argo CD has words.
@pytest.mark.parametrize(
    ("ds", "expected"),
    [
        pytest.param(
            daemonset(updated=1),
            Verdict("Healthy", "daemon set 1 out of 3 new pods have been updated", "InProgress"),
            id="on-delete-half-updated",
        ),
        pytest.param(
            daemonset(),
            Verdict("Healthy", "daemon set 3 out of 3 new pods have been updated", "Current"),
            id="on-delete-done",
        ),
        pytest.param(
            daemonset(current=2, updated=2, available=2, ready=2),
            Verdict("Healthy", "daemon set 2 out of 3 new pods have been updated", "InProgress"),
            id="on-delete-one-not-scheduled",
        ),
        pytest.param(
            daemonset(strategy="RollingUpdate", updated=1),
            Verdict(
                "Progressing",
                'Waiting for daemon set "shop-agent" rollout to finish: 1 out of 3 new pods have been updated...',
                "InProgress",
            ),
            id="rolling-update-updating",
        ),
        pytest.param(
            daemonset(strategy="RollingUpdate", available=2, ready=3),
            Verdict(
                "Progressing",
                'Waiting for daemon set "shop-agent" rollout to finish: 2 of 3 updated pods are available...',
                "InProgress",
            ),
            id="rolling-update-not-available",
        ),
        pytest.param(
            daemonset(strategy="RollingUpdate", ready=2),
            Verdict("Healthy", "", "InProgress"),
            id="rolling-update-available-not-ready",
        ),
        pytest.param(
            daemonset(strategy="RollingUpdate"),
            Verdict("Healthy", "", "Current"),
            id="rolling-update-done",
        ),
        pytest.param(
            daemonset(
                strategy="RollingUpdate", desired=0, current=0, updated=0, available=0, ready=0
            ),
            Verdict("Healthy", "", "Current"),
            id="no-nodes",
        ),
        pytest.param(
            daemonset(generation=3, observed=2),
            Verdict("Progressing", BUILTIN_STALE, "InProgress"),
            id="generation-not-observed",
        ),
        pytest.param(
            daemonset(
                generation=1, observed=None, desired=0, current=0, updated=0, available=0, ready=0
            ),
            Verdict("Progressing", BUILTIN_STALE, "InProgress"),
            id="never-observed",
        ),
    ],
)
def test_without_the_condition_each_tool_judges_as_it_does_built_in(
    gitops_health: Path, ds: dict[str, Any], expected: Verdict
) -> None:
    assert judge(gitops_health, ds) == expected


def test_the_argocd_cm_snippet_carries_the_lua_file_verbatim_with_the_libraries_it_needs() -> None:
    data = yaml.safe_load(ARGOCD_CM.read_text())["data"]

    assert data == {
        "resource.customizations.useOpenLibs.apps_DaemonSet": "true",
        "resource.customizations.health.apps_DaemonSet": LUA.read_text(),
    }


def test_the_flux_kustomization_has_one_health_check_for_daemonsets() -> None:
    checks = yaml.safe_load(FLUX_KUSTOMIZATION.read_text())["spec"]["healthCheckExprs"]

    assert [(c["apiVersion"], c["kind"], sorted(c)) for c in checks] == [
        ("apps/v1", "DaemonSet", ["apiVersion", "current", "failed", "inProgress", "kind"])
    ]


def test_the_program_pins_the_interpreters_at_the_versions_argo_cd_and_flux_pin() -> None:
    # Argo CD's go.mod: github.com/yuin/gopher-lua; kustomize-controller's: github.com/google/cel-go.
    (component,) = GITOPS_HEALTH.components
    go_mod = versions.gomod_files(component)["go.mod"].decode()

    assert f"\tgithub.com/yuin/gopher-lua {versions.GITOPS_HEALTH_LUA_VERSION}\n" in go_mod
    assert f"\tgithub.com/google/cel-go {versions.GITOPS_HEALTH_CEL_VERSION}\n" in go_mod
    assert (versions.GITOPS_HEALTH_LUA_VERSION, versions.GITOPS_HEALTH_CEL_VERSION) == (
        "v1.1.2",
        "v0.26.1",
    )
