"""Reading `apps.openyurt.io/max-unavailable` into a number of nodes (design §2.3)."""

import dataclasses
import math
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from edgerollout.domain.events import printable
from edgerollout.domain.model import NO_IN_FLIGHT
from edgerollout.domain.spec.max_unavailable import InvalidMaxUnavailable, MaxUnavailable

from .builders import daemonset, in_flight, max_unavailable, old_pod, pod, snapshot, warning


@pytest.mark.parametrize(
    ("raw", "base", "value", "written"),
    [
        pytest.param("3", 10, 3, "3", id="integer"),
        pytest.param("30%", 10, 3, "30%", id="percentage"),
        pytest.param("30%", 7, 3, "30%", id="percentage-rounds-up-2.1-to-3"),
        pytest.param("10%", 3, 1, "10%", id="ten-percent-of-three-is-one"),
        pytest.param("1%", 1000, 10, "1%", id="one-percent-of-a-thousand"),
        pytest.param("1%", 1, 1, "1%", id="tiny-percentage-of-one-is-one"),
        pytest.param("50%", 5, 3, "50%", id="half-of-five-rounds-up"),
        pytest.param("15", 10, 10, "15", id="integer-above-base-clamps"),
        pytest.param("100%", 10, 10, "100%", id="hundred-percent-is-base"),
        pytest.param("101%", 10, 10, "101%", id="above-hundred-percent-clamps"),
        pytest.param("250%", 4, 4, "250%", id="far-above-hundred-percent-clamps"),
        pytest.param("007", 10, 7, "007", id="leading-zeros"),
        pytest.param(" 3", 10, 3, "3", id="leading-space-ignored"),
        pytest.param("30% \n", 10, 3, "30%", id="trailing-whitespace-ignored"),
        pytest.param("99999999999999999999", 5, 5, "99999999999999999999", id="huge-integer"),
        pytest.param("99999999999999999999%", 5, 5, "99999999999999999999%", id="huge-percent"),
        pytest.param("3", 0, 0, "3", id="no-node-means-no-budget"),
        pytest.param("50%", 0, 0, "50%", id="percent-of-no-node-is-zero"),
    ],
)
def test_valid_forms_resolve_against_the_base(
    raw: str, base: int, value: int, written: str
) -> None:
    assert max_unavailable(raw, base=base) == MaxUnavailable(
        value=value, base=base, written=written
    )


@pytest.mark.parametrize(
    ("raw", "base", "value"),
    [
        pytest.param(None, 10, 1, id="unset-of-10"),
        pytest.param(None, 25, 3, id="unset-of-25-rounds-up"),
        pytest.param(None, 3, 1, id="unset-of-3"),
        pytest.param(None, 0, 0, id="unset-of-0"),
        pytest.param("0", 20, 2, id="zero"),
        pytest.param("0%", 20, 2, id="zero-percent"),
        pytest.param("000", 20, 2, id="zero-with-leading-zeros"),
        pytest.param(" 0% ", 20, 2, id="zero-percent-with-spaces"),
    ],
)
def test_unset_and_zero_mean_ten_percent(raw: str | None, base: int, value: int) -> None:
    assert max_unavailable(raw, base=base) == MaxUnavailable(value=value, base=base, written="10%")


@pytest.mark.parametrize(
    "raw",
    [
        pytest.param("abc", id="word"),
        pytest.param("-1", id="negative"),
        pytest.param("-0", id="negative-zero"),
        pytest.param("+3", id="explicit-plus"),
        pytest.param("1.5", id="fraction"),
        pytest.param("1.5%", id="fractional-percent"),
        pytest.param("%", id="bare-percent"),
        pytest.param("", id="empty"),
        pytest.param("   ", id="only-whitespace"),
        pytest.param("30 %", id="space-before-percent"),
        pytest.param("1e3", id="exponent"),
        pytest.param("0x10", id="hexadecimal"),
        pytest.param("3%%", id="double-percent"),
        pytest.param("%3", id="percent-first"),
        pytest.param("1,000", id="thousands-separator"),
        pytest.param("\u0663", id="non-ascii-digit"),
    ],
)
def test_invalid_forms_are_an_error_value_not_an_exception(raw: str) -> None:
    assert max_unavailable(raw, base=10) == InvalidMaxUnavailable(raw=raw)


def test_invalid_value_notice_names_value_seen_and_forms_expected() -> None:
    result = max_unavailable("1.5", base=10)
    assert isinstance(result, InvalidMaxUnavailable)
    assert result.notice == warning(
        "InvalidMaxUnavailable",
        (
            'apps.openyurt.io/max-unavailable is "1.5", which is neither an integer such as "3" '
            'nor a percentage such as "30%": no pod is deleted until it is fixed'
        ),
        "1.5",
    )
    assert result.notice.key == ("InvalidMaxUnavailable", "1.5")


def test_base_counts_distinct_nodes_holding_any_pod() -> None:
    pods = [
        pod("a1", "edge-1"),
        pod("a2", "edge-1"),
        old_pod("b1", "edge-2", deleting=True),
        old_pod("c1", "edge-3", ready=False),
        pod("unscheduled", None),
    ]
    assert snapshot(daemonset(), pods=pods).budget_base() == 3


def test_base_of_no_pod_is_zero() -> None:
    assert snapshot(daemonset()).budget_base() == 0


def test_base_counts_the_nodes_of_deletions_in_flight() -> None:
    pods = [pod("a1", "edge-1")]
    flying = [in_flight("b1", "edge-2"), in_flight("a0", "edge-1"), in_flight("c1", "edge-2")]
    assert snapshot(daemonset(), pods=pods, in_flight=flying).budget_base() == 2


def test_base_is_counted_once_per_snapshot_and_anew_for_a_changed_copy() -> None:
    pods = [pod("a1", "edge-1")]
    counted = snapshot(daemonset(), pods=pods, in_flight=[in_flight("b1", "edge-2")])

    assert (counted.budget_base(), counted.budget_base()) == (2, 2)
    assert dataclasses.replace(counted, in_flight=NO_IN_FLIGHT).budget_base() == 1
    assert counted == snapshot(daemonset(), pods=pods, in_flight=[in_flight("b1", "edge-2")])


def test_base_counts_the_nodes_the_native_controller_wants_a_pod_on_but_that_hold_none() -> None:
    pods = [pod("a1", "edge-1"), pod("b1", "edge-2")]
    # Between an old pod's removal and the new one's creation, 1,000 nodes hold 996 pods.
    assert snapshot(daemonset(desired_nodes=3), pods=pods).budget_base() == 3
    # Nodes the native controller leaves out (unreachable) still count while they hold a pod.
    assert snapshot(daemonset(desired_nodes=1), pods=pods).budget_base() == 2
    assert snapshot(daemonset(desired_nodes=None), pods=pods).budget_base() == 2


@settings(max_examples=500, deadline=None)
@given(
    st.one_of(
        st.text(),
        st.from_regex(r"\s*[0-9]{1,25}%?\s*", fullmatch=True),
        st.from_regex(r"[-+]?[0-9.%ex ]{0,8}", fullmatch=True),
    ),
    st.integers(0, 100_000),
)
def test_any_text_gives_a_budget_within_the_base_or_an_invalid_value(raw: str, base: int) -> None:
    result = max_unavailable(raw, base=base)
    if isinstance(result, InvalidMaxUnavailable):
        assert result.raw == raw
        assert result.notice.reason == "InvalidMaxUnavailable"
        assert f'"{printable(raw)}"' in result.notice.message
    else:
        assert result.base == base
        assert (1 if base >= 1 else 0) <= result.value <= base


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 1000), st.integers(0, 5000), st.booleans())
def test_budget_is_the_rounded_up_share_of_the_base(number: int, base: int, percent: bool) -> None:
    raw = f"{number}%" if percent else str(number)
    expected = math.ceil(Fraction(base * number, 100)) if percent else number
    assert max_unavailable(raw, base=base) == MaxUnavailable(
        value=min(expected, base), base=base, written=raw
    )
