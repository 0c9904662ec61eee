"""`--peer openyurt`: the peer's turns in scenario 1, and the error when it is not built."""

from __future__ import annotations

import pytest
from bench.__main__ import main
from bench.scenarios.rolling import order_of_round
from click.testing import CliRunner

from edgerollout_lab import build


def test_without_the_peer_native_and_edgerollout_alternate() -> None:
    assert [order_of_round(index, with_peer=False) for index in range(3)] == [
        ("native", "edgerollout"),
        ("edgerollout", "native"),
        ("native", "edgerollout"),
    ]


def test_with_the_peer_each_takes_each_place_once_in_three_rounds() -> None:
    assert [order_of_round(index, with_peer=True) for index in range(4)] == [
        ("native", "edgerollout", "openyurt"),
        ("edgerollout", "openyurt", "native"),
        ("openyurt", "native", "edgerollout"),
        ("native", "edgerollout", "openyurt"),
    ]


def test_an_unbuilt_peer_stops_the_run_before_any_lab_and_names_the_build_command(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(build, "missing_components", lambda build_set: ["yurt-manager"])
    result = CliRunner().invoke(main, ["--peer", "openyurt", "--scenario", "rolling"])
    assert result.exit_code == 2
    assert result.output.splitlines()[-1] == (
        "Error: OpenYurt's yurt-manager is not built; run `./dev lab build --peer openyurt` "
        "first (about 4 minutes on a cold cache)"
    )
