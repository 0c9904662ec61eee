"""Rollout annotations too long to read (design §12.7): left unread, the rollout held, one Warning
that gives the lengths and not the value, keyed on a digest."""

import hashlib

import pytest

from edgerollout.domain.events import EventType, Notice
from edgerollout.domain.spec.bounds import LONGEST, SHORT, bounded
from edgerollout.domain.spec.count import read_count
from edgerollout.domain.spec.rollout_spec import read_rollout_spec
from edgerollout.domain.spec.staging import MOST_SELECTOR_REQUIREMENTS, read_staging
from edgerollout.domain.spec.strategy import StrategyChoice, choose_strategy
from edgerollout.domain.vocabulary import (
    ANNOTATION_TOO_LONG,
    INVALID_NODE_SELECTOR,
    MAINTENANCE_WINDOW_ANNOTATION,
    MAX_UNAVAILABLE_ANNOTATION,
    NODE_SELECTOR_ANNOTATION,
    ON_DELETE,
    OTA_DEADLINE_ANNOTATION,
    PARTITION_ANNOTATION,
    UPDATE_STRATEGY_ANNOTATION,
    WAVES_ANNOTATION,
)


def too_long(annotation: str, value: str) -> Notice:
    digest = hashlib.sha256(value.encode()).hexdigest()[:16]
    return Notice(
        type=EventType.WARNING,
        reason=ANNOTATION_TOO_LONG,
        message=f"{annotation} is {len(value)} characters long, more than the "
        f"{LONGEST[annotation]} read: it is not read, and no node is upgraded until it is shortened",
        subject=f"{annotation} {len(value)} sha256:{digest}",
    )


def waves_of(length: int) -> str:
    """Distinct wave names ("w0000,w0001,...") written in exactly `length` characters."""
    names = ",".join(f"w{i:04d}" for i in range(length // 6 + 2))[:length]
    return names[:-1] + "x" if names.endswith(",") else names


def test_the_limits_of_each_kind_of_value() -> None:
    assert SHORT == 256
    assert LONGEST[NODE_SELECTOR_ANNOTATION] == LONGEST[WAVES_ANNOTATION] == 16_384
    assert LONGEST[MAINTENANCE_WINDOW_ANNOTATION] == 1_024
    assert LONGEST[OTA_DEADLINE_ANNOTATION] == LONGEST[PARTITION_ANNOTATION] == SHORT


@pytest.mark.parametrize(
    ("annotation", "fill"),
    [
        (WAVES_ANNOTATION, "a" * 63 + ","),
        (NODE_SELECTOR_ANNOTATION, "k in (" + "v," * 40),
        (MAINTENANCE_WINDOW_ANNOTATION, "Mon 01:00-02:00, "),
        (OTA_DEADLINE_ANNOTATION, "1ns"),
        (MAX_UNAVAILABLE_ANNOTATION, "9"),
    ],
)
def test_one_character_over_the_limit_is_not_read_and_holds_the_rollout(
    annotation: str, fill: str
) -> None:
    value = (fill * (LONGEST[annotation] // len(fill) + 1))[: LONGEST[annotation] + 1]
    spec = read_rollout_spec({annotation: value, PARTITION_ANNOTATION: "2"})

    assert spec.staging.invalid
    assert spec.staging.notices == (too_long(annotation, value),)
    assert value not in spec.staging.notices[0].message
    # The other annotations are still read.
    assert spec.staging.partition == read_count("2")


def test_a_value_at_the_limit_is_read() -> None:
    waves = waves_of(LONGEST[WAVES_ANNOTATION])
    assert len(waves) == LONGEST[WAVES_ANNOTATION]

    spec = read_rollout_spec({WAVES_ANNOTATION: waves})

    assert (spec.staging.invalid, spec.staging.notices) == (False, ())
    assert spec.staging.waves is not None
    assert spec.staging.waves.names == tuple(waves.split(","))


def test_two_values_of_one_length_are_two_warnings_and_the_same_value_one() -> None:
    first, second = "1" * 300, "2" * 300

    notices = [bounded({OTA_DEADLINE_ANNOTATION: raw}).notices[0] for raw in (first, second, first)]

    assert len({notice.key for notice in notices}) == 2
    assert notices[0].key == notices[2].key
    assert all(len(notice.subject) < 80 for notice in notices)


def test_short_enough_annotations_pass_as_they_are_and_others_are_not_looked_at() -> None:
    given = {WAVES_ANNOTATION: "a, b", "example.com/notes": "x" * 100_000}

    assert bounded(given).annotations is given
    assert bounded(given).notices == ()


def test_every_too_long_value_has_its_warning_and_the_rest_is_kept() -> None:
    waves, deadline = "a," * 9000, "1s" * 200

    read = bounded({WAVES_ANNOTATION: waves, OTA_DEADLINE_ANNOTATION: deadline, "x": "y"})

    assert read.annotations == {"x": "y"}
    assert read.notices == (
        too_long(WAVES_ANNOTATION, waves),
        too_long(OTA_DEADLINE_ANNOTATION, deadline),
    )


def test_a_too_long_update_strategy_leaves_the_daemonset_alone_without_repeating_it() -> None:
    raw = "OTA" + " " * 300

    choice = choose_strategy(
        annotations={UPDATE_STRATEGY_ANNOTATION: raw}, update_strategy_type=ON_DELETE
    )

    assert choice == StrategyChoice(
        strategy=None, notices=(too_long(UPDATE_STRATEGY_ANNOTATION, raw),)
    )


def test_a_selector_of_more_requirements_than_a_node_is_matched_against_is_invalid() -> None:
    most = ",".join(f"k{i}=v" for i in range(MOST_SELECTOR_REQUIREMENTS))

    assert read_staging({NODE_SELECTOR_ANNOTATION: most}).notices == ()
    staging = read_staging({NODE_SELECTOR_ANNOTATION: most + ",k=v"})

    assert staging.invalid
    [notice] = staging.notices
    assert notice.reason == INVALID_NODE_SELECTOR
    assert notice.message.startswith(
        f'{NODE_SELECTOR_ANNOTATION} is "{most},k=v": 65 requirements are more than the 64 a '
        "node is matched against; expected a label selector"
    )


def test_a_reading_is_kept_while_the_annotations_stay_the_same() -> None:
    annotations = {WAVES_ANNOTATION: "a, b", "unrelated": "1"}

    first = read_rollout_spec(annotations)

    assert read_rollout_spec({**annotations, "unrelated": "2"}) is first
    assert read_rollout_spec({WAVES_ANNOTATION: "a, c"}) is not first
