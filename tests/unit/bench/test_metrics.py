"""Quantiles read from a histogram's buckets, as the benchmarks read the controller's plan time."""

from __future__ import annotations

from bench.metrics import Samples, histogram_quantile


def _buckets(counts: dict[str, float]) -> Samples:
    return {
        ("edgerollout_plan_seconds_bucket", (("le", bound),)): count
        for bound, count in counts.items()
    }


def test_histogram_quantile_interpolates_within_the_bucket_as_prometheus_does() -> None:
    # 100 plans: 50 under 1 ms, 40 more under 2.5 ms, 9 more under 5 ms, one slower.
    samples = _buckets({"0.001": 50, "0.0025": 90, "0.005": 99, "0.01": 100, "+Inf": 100})

    assert histogram_quantile(samples, "edgerollout_plan_seconds", 0.5) == 0.001
    # The 99th of 100 is the last of the 9 between 2.5 and 5 ms.
    assert histogram_quantile(samples, "edgerollout_plan_seconds", 0.99) == 0.005
    # The 95th: 5 of those 9, so 5/9 of the way from 2.5 ms to 5 ms.
    quantile = histogram_quantile(samples, "edgerollout_plan_seconds", 0.95)
    assert quantile is not None
    assert round(quantile, 6) == round(0.0025 + 0.0025 * 5 / 9, 6)


def test_histogram_quantile_of_nothing_observed_is_none_and_of_the_last_bucket_its_floor() -> None:
    assert (
        histogram_quantile(_buckets({"0.001": 0, "+Inf": 0}), "edgerollout_plan_seconds", 0.5)
        is None
    )
    assert histogram_quantile({}, "edgerollout_plan_seconds", 0.5) is None
    slow = _buckets({"0.001": 0, "2.5": 0, "+Inf": 4})
    assert histogram_quantile(slow, "edgerollout_plan_seconds", 0.99) == 2.5
