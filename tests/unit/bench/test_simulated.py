"""The bench's rollouts simulated with the stages it measured: the fleet built from a results
file, and the comparison printed."""

import json
from pathlib import Path
from typing import Any

import pytest
from bench.simulated import Comparison, compare, lab_fleet, latency, main

from edgerollout.simulation.fleet import Latency


def stage(median: float, p90: float | None = None) -> dict[str, float]:
    return {"median": median, "p90": median if p90 is None else p90, "max": 9.0}


def replacements(scale: float = 1.0) -> dict[str, Any]:
    """A rollout's stages without spread: 1 s to gone, 1 s to re-created, 1 s to Ready."""
    return {
        "replaced": 10,
        "stages_seconds": {
            "deleting_to_gone": stage(1.0 * scale),
            "gone_to_created": stage(1.0 * scale),
            "created_to_bound": stage(0.25 * scale),
            "bound_to_ready": stage(0.75 * scale),
            "deleting_to_ready": stage(3.0 * scale),
        },
        "first_deletion": 0.25,
        "slot_reuse_seconds": {"median": 0.0, "p90": 0.1, "max": 0.2},
    }


def results(**disconnected: Any) -> dict[str, Any]:
    scenarios: dict[str, Any] = {
        "rolling": {
            "nodes": 10,
            "max_unavailable": "50%",
            "budget": 5,
            "edgerollout": {"seconds": 6.5, "replacements": replacements()},
        }
    }
    if disconnected:
        scenarios["disconnected"] = {
            "nodes": 10,
            "disconnected": 0,
            "edgerollout": {"connected_seconds": 12.0, **disconnected},
        }
    return {"scenarios": scenarios}


def test_stages_in_a_row_add_their_medians_and_their_spreads_as_independent_ones() -> None:
    assert latency(stage(0.5, 0.8)) == Latency(0.5, 0.8)
    assert latency(stage(0.3, 0.7), stage(0.2, 0.5)) == Latency(0.5, 1.0)


def test_the_fleet_takes_the_lab_stages_the_cut_nodes_and_the_slot_reuse() -> None:
    fleet = lab_fleet(replacements(), nodes=1000, cut=200, seed=3)
    assert (fleet.nodes, fleet.seed, fleet.always_offline, fleet.image_size) == (1000, 3, 0.2, 0)
    assert fleet.termination == Latency(1.0, 1.0)
    assert fleet.recreate == Latency(1.0, 1.0)
    assert fleet.container_start == Latency(1.0, 1.0)
    assert fleet.reconcile_delay == 0.0


def test_two_rounds_of_five_take_six_seconds_after_the_first_deletion() -> None:
    # Nodes 0-4 deleted at 0, gone at 1, re-created at 2, Ready at 3; nodes 5-9 Ready at 6.
    assert compare(results()) == [Comparison("rolling", 10, 10, 6.5, 6.25)]
    assert compare(results())[0].ratio == 0.962


def test_the_connected_nodes_stages_are_used_when_kept_else_scenario_one_s() -> None:
    assert compare(results(connected_replacements=replacements(scale=2.0)))[1] == Comparison(
        "disconnected", 10, 10, 12.0, 12.25
    )
    assert compare(results(reconnected_replacements={}))[1] == Comparison(
        "disconnected", 10, 10, 12.0, 6.25
    )


def test_the_command_prints_the_table_or_refuses_what_it_cannot_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "results.json"
    path.write_text(json.dumps(results()))
    assert main([str(path)]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "scenario       nodes  updated  measured  simulated  ratio",
        "rolling           10       10     6.5 s      6.2 s  0.96x",
    ]

    assert main([str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == [
        {
            "scenario": "rolling",
            "nodes": 10,
            "updated": 10,
            "measured_seconds": 6.5,
            "simulated_seconds": 6.25,
            "ratio": 0.962,
        }
    ]

    path.write_text(json.dumps({"scenarios": {}}))
    assert main([str(path)]) == 1
    assert capsys.readouterr().err == f"{path}: no rollout of edgerollout to simulate\n"

    assert main([str(tmp_path / "missing.json")]) == 2
    assert capsys.readouterr().err.startswith(f"cannot read {tmp_path / 'missing.json'}: ")
