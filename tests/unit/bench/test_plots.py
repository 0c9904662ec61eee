"""The plots' curves."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench.plots import held_until, write_all

PNG = b"\x89PNG\r\n\x1a\n"


def test_a_curve_that_never_moved_is_drawn_flat_to_the_end_of_its_watch() -> None:
    assert held_until([[0.0, 0]], 300.0) == [[0.0, 0], [300.0, 0]]


def test_a_curve_holds_its_last_value_to_the_end_of_its_watch() -> None:
    assert held_until([[0.0, 0], [2.5, 40], [9.0, 120]], 300.0) == [
        [0.0, 0],
        [2.5, 40],
        [9.0, 120],
        [300.0, 120],
    ]


def test_a_curve_that_reaches_the_end_of_its_watch_is_left_as_it_is() -> None:
    assert held_until([[0.0, 0], [300.0, 5]], 300.0) == [[0.0, 0], [300.0, 5]]
    assert held_until([], 300.0) == []


def _rolling(*, with_peer: bool) -> dict[str, Any]:
    curve = [[0.0, 0], [10.0, 1000]]
    result: dict[str, Any] = {
        "nodes": 1000,
        "max_unavailable": "10%",
        "native": {"seconds": 10.0, "curve": curve},
        "edgerollout": {"seconds": 10.0, "curve": curve},
        "rounds": [],
    }
    if with_peer:
        result["openyurt"] = {"seconds": 10.0, "curve": curve}
    return result


def _api_load(*, with_peer: bool) -> dict[str, Any]:
    api: dict[str, Any] = {
        "nodes": 1000,
        "apiserver_pods_by_verb": {"DELETE": 3000, "POST": 1000},
        "native_apiserver_pods_by_verb": {"DELETE": 3000, "POST": 1000},
    }
    if with_peer:
        api["openyurt_apiserver_pods_by_verb"] = {"DELETE": 3000, "PATCH": 10, "POST": 1000}
    return api


def test_the_peer_adds_a_plot_of_the_api_load_of_the_three(tmp_path: Path) -> None:
    results = {
        "scenarios": {"rolling": _rolling(with_peer=True), "api_load": _api_load(with_peer=True)}
    }
    written = write_all(results, tmp_path, "run")
    assert written == [tmp_path / "run-rolling.png", tmp_path / "run-api-load.png"]
    assert all(path.read_bytes()[:8] == PNG for path in written)


def test_without_the_peer_the_plots_are_those_of_before(tmp_path: Path) -> None:
    results = {
        "scenarios": {"rolling": _rolling(with_peer=False), "api_load": _api_load(with_peer=False)}
    }
    assert write_all(results, tmp_path, "run") == [tmp_path / "run-rolling.png"]
