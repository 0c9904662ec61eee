"""Reading `apps.openyurt.io/update-strategy` (design §2.1)."""

import pytest

from edgerollout.domain.events import EventType, Notice
from edgerollout.domain.spec.strategy import StrategyChoice, UpdateStrategy, choose_strategy
from edgerollout.domain.vocabulary import UPDATE_STRATEGY_ANNOTATION

from .builders import warning


def choose(value: str | None, update_strategy_type: str = "OnDelete") -> StrategyChoice:
    annotations = {} if value is None else {UPDATE_STRATEGY_ANNOTATION: value}
    return choose_strategy(annotations=annotations, update_strategy_type=update_strategy_type)


@pytest.mark.parametrize(
    ("value", "strategy"),
    [
        pytest.param("AdvancedRollingUpdate", UpdateStrategy.ADVANCED_ROLLING_UPDATE, id="aru"),
        pytest.param(
            "advancedrollingupdate", UpdateStrategy.ADVANCED_ROLLING_UPDATE, id="aru-lower"
        ),
        pytest.param(
            "ADVANCEDROLLINGUPDATE", UpdateStrategy.ADVANCED_ROLLING_UPDATE, id="aru-upper"
        ),
        pytest.param(
            "advancedRollingUpdate", UpdateStrategy.ADVANCED_ROLLING_UPDATE, id="aru-camel"
        ),
        pytest.param("OTA", UpdateStrategy.OTA, id="ota"),
        pytest.param("ota", UpdateStrategy.OTA, id="ota-lower"),
        pytest.param("Ota", UpdateStrategy.OTA, id="ota-mixed"),
        pytest.param(" OTA\t", UpdateStrategy.OTA, id="surrounding-whitespace-ignored"),
    ],
)
def test_strategy_names_match_case_insensitively_without_notice(
    value: str, strategy: UpdateStrategy
) -> None:
    assert choose(value) == StrategyChoice(strategy=strategy, notices=())


def auto_deprecated(value: str) -> Notice:
    """The Normal event that `value`, a spelling of "auto", runs AdvancedRollingUpdate."""
    return Notice(
        type=EventType.NORMAL,
        reason="DeprecatedUpdateStrategy",
        message=(
            f'apps.openyurt.io/update-strategy is "{value}", the deprecated alias of '
            '"AdvancedRollingUpdate": running AdvancedRollingUpdate; '
            "set the annotation to AdvancedRollingUpdate to silence this event"
        ),
        subject=value,
    )


@pytest.mark.parametrize("value", ["auto", "Auto", "AUTO", " auto "])
def test_legacy_auto_runs_advanced_rolling_update_with_a_deprecation_notice(value: str) -> None:
    assert choose(value) == StrategyChoice(
        strategy=UpdateStrategy.ADVANCED_ROLLING_UPDATE,
        notices=(auto_deprecated(value),),
    )


@pytest.mark.parametrize(
    "value",
    [
        pytest.param("RollingUpdate", id="native-name"),
        pytest.param("ota2", id="near-miss"),
        pytest.param("Advanced Rolling Update", id="inner-spaces"),
        pytest.param("", id="empty"),
        pytest.param("true", id="boolean"),
    ],
)
def test_unknown_strategy_is_a_warning_and_nothing_else(value: str) -> None:
    assert choose(value) == StrategyChoice(
        strategy=None,
        notices=(
            warning(
                "UnknownUpdateStrategy",
                (
                    f'apps.openyurt.io/update-strategy is "{value}", which is not an update '
                    'strategy: expected "AdvancedRollingUpdate" or "OTA" (any case); this '
                    "DaemonSet is left alone until it is fixed"
                ),
                value,
            ),
        ),
    )


def test_absent_annotation_means_not_opted_in_silently() -> None:
    assert choose(None) == StrategyChoice(strategy=None, notices=())


def test_other_annotations_do_not_opt_in() -> None:
    choice = choose_strategy(
        annotations={"apps.openyurt.io/max-unavailable": "30%"}, update_strategy_type="OnDelete"
    )
    assert choice == StrategyChoice(strategy=None, notices=())


@pytest.mark.parametrize(
    ("value", "update_strategy_type", "subject"),
    [
        pytest.param("OTA", "RollingUpdate", "ota/RollingUpdate", id="ota-rolling"),
        pytest.param(
            "AdvancedRollingUpdate",
            "RollingUpdate",
            "advancedrollingupdate/RollingUpdate",
            id="aru-rolling",
        ),
        pytest.param("auto", "RollingUpdate", "auto/RollingUpdate", id="auto-only-warns-once"),
        pytest.param("OTA", "", "ota/", id="type-empty"),
        pytest.param("OTA", "ondelete", "ota/ondelete", id="type-is-case-sensitive"),
    ],
)
def test_opted_in_without_on_delete_is_a_warning_and_nothing_else(
    value: str, update_strategy_type: str, subject: str
) -> None:
    assert choose(value, update_strategy_type) == StrategyChoice(
        strategy=None,
        notices=(
            warning(
                "UpdateStrategyNotOnDelete",
                (
                    f"apps.openyurt.io/update-strategy: {value} needs spec.updateStrategy.type "
                    f'"OnDelete", found "{update_strategy_type}": the native controller keeps '
                    "rolling this DaemonSet and edgerollout does nothing until the type is "
                    "OnDelete"
                ),
                subject,
            ),
        ),
    )


def test_unknown_value_is_reported_before_the_update_strategy_type() -> None:
    choice = choose("rolling", "RollingUpdate")
    assert choice.strategy is None
    assert [notice.reason for notice in choice.notices] == ["UnknownUpdateStrategy"]


def test_notice_key_is_reason_and_offending_value() -> None:
    (first,) = choose("rollin").notices
    (again,) = choose("rollin").notices
    (fixed_typo,) = choose("rolling").notices
    assert first.key == again.key == ("UnknownUpdateStrategy", "rollin")
    assert fixed_typo.key == ("UnknownUpdateStrategy", "rolling")
