"""The plots' curves."""

from __future__ import annotations

from bench.plots import held_until


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
