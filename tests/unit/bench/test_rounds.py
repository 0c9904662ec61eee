"""Scenario 1's rounds: one record per controller from several rollouts, and the table's row."""

from __future__ import annotations

from typing import Any

from bench.report import Row, rows
from bench.scenarios.rolling import mean_of

from tests.unit.bench.test_report import ROLLING


def a_round(
    seconds: float, by_method: dict[str, int], median: float, p90: float, note: str
) -> dict[str, Any]:
    """One rollout's record, as a round of scenario 1 writes it."""
    return {
        "seconds": seconds,
        "nodes": 1000,
        "curve": [[0.0, 0], [seconds, 1000]],
        "controller": {"by_method": by_method},
        "replacements": {"stages_seconds": {"gone_to_created": {"median": median, "p90": p90}}},
        "note": note,
    }


def test_numbers_are_averaged_counts_missing_from_a_round_count_zero_curves_are_the_first() -> None:
    first = a_round(20.0, {"DELETE": 1000, "POST": 20}, 0.4, 0.8, "first")
    second = a_round(23.0, {"DELETE": 1000, "GET": 3}, 0.5, 0.9, "second")

    assert mean_of([first, second]) == {
        "seconds": 21.5,
        "nodes": 1000,
        "curve": [[0.0, 0], [20.0, 1000]],
        "controller": {"by_method": {"DELETE": 1000, "POST": 10, "GET": 1.5}},
        "replacements": {"stages_seconds": {"gone_to_created": {"median": 0.45, "p90": 0.85}}},
        "note": "first",
    }


def test_one_rollout_is_its_own_mean() -> None:
    assert mean_of([ROLLING["native"]]) == ROLLING["native"]


def test_the_table_names_the_rounds_and_shows_each_one_after_the_mean() -> None:
    rolling = {
        **ROLLING,
        "rounds": [
            {
                "first": "native",
                "native_seconds": 19.0,
                "edgerollout_seconds": 17.0,
                "ratio": 0.895,
            },
            {
                "first": "edgerollout",
                "native_seconds": 21.0,
                "edgerollout_seconds": 15.0,
                "ratio": 0.714,
            },
        ],
    }

    table = rows({"scenarios": {"rolling": rolling}})

    assert table[:2] == [
        Row(
            "1 rollout, 1000 nodes Ready, max-unavailable 10% (mean of 2 rounds)",
            "16.0 s",
            "native 20.0 s (target ≤ 1.0x)",
            "0.80x",
        ),
        Row(
            "  each round (native first, edgerollout first)",
            "17.0 s, 15.0 s",
            "native 19.0 s, 21.0 s",
            "0.90x, 0.71x",
        ),
    ]
    assert table[2:] == rows({"scenarios": {"rolling": ROLLING}})[1:]
