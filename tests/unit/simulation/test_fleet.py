"""A fleet file is read into its values, every default filled in; anything it cannot take is
refused with the dotted key and what is expected."""

import random
from datetime import UTC, datetime

import pytest

from edgerollout.simulation.fleet import (
    Flapping,
    Fleet,
    FleetError,
    Latency,
    OtaModel,
    Outages,
    Pool,
    read_fleet,
)
from edgerollout.simulation.units import UnitError, read_duration, read_rate, read_size


def test_an_empty_file_is_the_default_fleet() -> None:
    assert read_fleet(None) == read_fleet({}) == Fleet()
    assert Fleet().pools == (Pool(name="default"),)
    assert Fleet().horizon == 7 * 86400


def test_every_key_is_read_into_its_unit() -> None:
    fleet = read_fleet(
        {
            "nodes": 20,
            "seed": 7,
            "start": "2026-03-01T06:00:00+01:00",
            "horizon": "2d",
            "sample_every": "5m",
            "pool_label": "example.com/site",
            "image_size": "250MB",
            "container_start": "1m30s",
            "termination": 2,
            "recreate": {"median": "400ms", "p90": "1.5s"},
            "reconcile_delay": 0,
            "crash_loop": 0.5,
            "always_offline": 0.25,
            "flapping": {"fraction": 0.1, "online": "1h", "offline": "5m"},
            "ota": {"upgrade_after": "2h"},
            "pools": [
                {
                    "name": "north",
                    "weight": 3,
                    "link_rate": "8Mbit/s",
                    "outages": {"fraction": 0.2, "duration": "4h", "start_hours": [0] * 23 + [1]},
                },
                {"name": "south"},
            ],
        }
    )
    assert fleet == Fleet(
        nodes=20,
        seed=7,
        start=datetime(2026, 3, 1, 5, tzinfo=UTC),
        horizon=172800.0,
        sample_every=300.0,
        pool_label="example.com/site",
        image_size=250e6,
        container_start=Latency.exactly(90.0),
        termination=Latency.exactly(2.0),
        recreate=Latency(0.4, 1.5),
        reconcile_delay=0.0,
        crash_loop=0.5,
        always_offline=0.25,
        flapping=Flapping(fraction=0.1, online=3600.0, offline=300.0),
        ota=OtaModel(upgrade_after=7200.0),
        pools=(
            Pool(
                name="north",
                weight=3.0,
                link_rate=1e6,
                outages=Outages(fraction=0.2, duration=14400.0, start_hours=(0.0,) * 23 + (1.0,)),
            ),
            Pool(name="south"),
        ),
    )


def test_an_unquoted_yaml_timestamp_is_taken_as_it_comes() -> None:
    moment = datetime(2026, 1, 1, tzinfo=UTC)
    assert read_fleet({"start": moment}).start == moment


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"nodez": 3}, "nodez: unknown key; expected one of nodes, seed, start, horizon,"),
        ({"nodes": -1}, "nodes: must not be negative, got -1"),
        ({"nodes": 1.5}, "nodes: expected a whole number, got float 1.5"),
        ({"nodes": True}, "nodes: expected a whole number, got bool True"),
        ({"crash_loop": 1.5}, "crash_loop: must be a fraction from 0 to 1, got 1.5"),
        ({"always_offline": -0.1}, "always_offline: must be a fraction from 0 to 1, got -0.1"),
        ({"horizon": "-1h"}, "horizon: must not be negative, got '-1h'"),
        ({"horizon": -5}, "horizon: must not be negative, got -5"),
        ({"horizon": "a week"}, "horizon: expected a duration such as 90s, 1h30m or 7d"),
        ({"sample_every": 0}, "sample_every: must be more than zero, got 0"),
        ({"image_size": "1TB"}, "image_size: expected a size such as 200MB or 1.5GiB (units B,"),
        ({"start": "2026-01-05T00:00:00"}, "start: needs a time zone (such as Z for UTC)"),
        ({"start": "monday"}, "start: expected an RFC 3339 time such as 2026-01-05T00:00:00Z"),
        ({"pool_label": "a/b/c"}, 'pool_label: label key "a/b/c" has more than one "/"'),
        ({"flapping": {"online": 0}}, "flapping.online: must be more than zero, got 0"),
        ({"flapping": {"fraction": 2}}, "flapping.fraction: must be a fraction from 0 to 1, got 2"),
        ({"flapping": []}, "flapping: expected a mapping of keys to values, got list []"),
        ({"ota": {"after": "1h"}}, "ota.after: unknown key; expected one of upgrade_after"),
        ({"pools": []}, "pools: expected a list of at least one pool"),
        ({"pools": [{"weight": 1}]}, "pools[0].name: every pool needs a name"),
        (
            {"pools": [{"name": "a"}, {"name": "b", "link_rate": -5}]},
            "pools[1].link_rate: must not be negative, got -5",
        ),
        (
            {"pools": [{"name": "a"}, {"name": "b", "link_rate": "0Mbit/s"}]},
            "pools[1].link_rate: must be more than zero, got '0Mbit/s'",
        ),
        ({"pools": [{"name": "a"}, {"name": "a"}]}, "pools[1].name: 'a' is named twice"),
        ({"pools": [{"name": "a", "weight": 0}]}, "pools: at least one pool needs a weight above"),
        (
            {"pools": [{"name": "a", "outages": {"fraction": 1.01}}]},
            "pools[0].outages.fraction: must be a fraction from 0 to 1, got 1.01",
        ),
        (
            {"pools": [{"name": "a", "outages": {"start_hours": [1] * 23}}]},
            "pools[0].outages.start_hours: expected a list of 24 weights, one per hour (UTC)",
        ),
        (
            {"pools": [{"name": "a", "outages": {"start_hours": [1] * 23 + [-1]}}]},
            "pools[0].outages.start_hours[23]: must not be negative, got -1",
        ),
        ([1, 2], "the fleet file: expected a mapping of keys to values, got list [1, 2]"),
        ({"termination": {"p90": "1s"}}, "termination.median: a spread latency needs its median"),
        (
            {"recreate": {"median": "2s", "p90": "1s"}},
            "recreate.p90: must be at least the median, got '1s'",
        ),
        (
            {"container_start": {"median": 0, "p90": "1s"}},
            "container_start.median: must be more than zero when p90 is above it",
        ),
        (
            {"container_start": {"median": "1s", "p99": "1s"}},
            "container_start.p99: unknown key; expected one of median, p90",
        ),
        ({"termination": {"median": "-1s"}}, "termination.median: must not be negative, got '-1s'"),
    ],
)
def test_a_value_it_cannot_take_is_refused_naming_its_key(raw: object, message: str) -> None:
    with pytest.raises(FleetError) as refused:
        read_fleet(raw)
    assert str(refused.value).startswith(message)


def test_an_error_carries_its_key_apart_from_its_problem() -> None:
    with pytest.raises(FleetError) as refused:
        read_fleet({"pools": [{"name": "a", "link_rate": "fast"}]})
    assert refused.value.path == "pools[0].link_rate"
    assert refused.value.problem == (
        "expected a link rate such as 10Mbit/s or 2MB/s (units bit/s, kbit/s, Mbit/s, Gbit/s, "
        "B/s, kB/s, MB/s, GB/s), got 'fast'"
    )


@pytest.mark.parametrize(
    ("raw", "seconds"),
    [(90, 90.0), (0.5, 0.5), ("90s", 90.0), ("1h30m", 5400.0), ("7d", 604800.0), ("250ms", 0.25)],
)
def test_durations(raw: object, seconds: float) -> None:
    assert read_duration(raw) == seconds


@pytest.mark.parametrize("raw", ["", "1x", "h", "1h 30m", "1.h", None, [1]])
def test_what_is_not_a_duration(raw: object) -> None:
    with pytest.raises(UnitError):
        read_duration(raw)


def test_sizes_and_rates() -> None:
    assert read_size("1.5GiB") == 1.5 * 2**30
    assert read_size(1000) == 1000.0
    assert read_rate("10Mbit/s") == 1.25e6
    assert read_rate("2MB/s") == 2e6
    assert read_rate(125) == 125.0


def test_a_latency_spread_draws_its_median_and_p90_and_none_without_it() -> None:
    rng = random.Random(1)  # noqa: S311 (a seeded stream, as the simulator's)
    draws = sorted(Latency(0.5, 0.8).draw(rng) for _ in range(20_000))
    assert round(draws[10_000], 2) == 0.5
    assert round(draws[18_000], 2) == 0.8
    state = rng.getstate()
    assert Latency.exactly(2.0).draw(rng) == 2.0
    assert rng.getstate() == state
