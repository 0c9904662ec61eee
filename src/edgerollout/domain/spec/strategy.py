"""Which update model a DaemonSet asked for, read from `apps.openyurt.io/update-strategy`.

The rules (design §2.1), in the order they are checked:

1. No annotation: the DaemonSet is not ours; nothing is said.
2. A value that is none of `AdvancedRollingUpdate`, `OTA` or the legacy `auto` (compared without
   regard to case, surrounding whitespace ignored): a Warning `UnknownUpdateStrategy`, nothing
   is done. The value is the first thing to fix, so it is the only thing reported.
3. A known value but `spec.updateStrategy.type` is not `OnDelete`: a Warning
   `UpdateStrategyNotOnDelete` and nothing else; the native controller is still rolling the
   DaemonSet itself, and two controllers deleting pods would break both budgets. Once the type is
   fixed, rule 4 may follow.
4. `auto`: AdvancedRollingUpdate, with a Normal `DeprecatedUpdateStrategy` naming the new value.

Surrounding whitespace is ignored because YAML quoting slips (`"OTA "`) should not silently stop
an upgrade; the same choice is made for max-unavailable.
"""

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

from edgerollout.domain.events import EventType, Notice
from edgerollout.domain.spec.bounds import LONGEST, too_long_notice
from edgerollout.domain.vocabulary import (
    ADVANCED_ROLLING_UPDATE,
    DEPRECATED_UPDATE_STRATEGY,
    LEGACY_AUTO,
    ON_DELETE,
    OTA,
    UNKNOWN_UPDATE_STRATEGY,
    UPDATE_STRATEGY_ANNOTATION,
    UPDATE_STRATEGY_NOT_ON_DELETE,
)


class UpdateStrategy(StrEnum):
    """The two update models edgerollout runs."""

    ADVANCED_ROLLING_UPDATE = ADVANCED_ROLLING_UPDATE
    OTA = OTA


@dataclass(frozen=True, slots=True, kw_only=True)
class StrategyChoice:
    """The model to run (None: do nothing) and what to tell the user about the annotation."""

    strategy: UpdateStrategy | None
    notices: tuple[Notice, ...] = ()


_BY_LOWERCASE_NAME: Mapping[str, UpdateStrategy] = {
    ADVANCED_ROLLING_UPDATE.lower(): UpdateStrategy.ADVANCED_ROLLING_UPDATE,
    OTA.lower(): UpdateStrategy.OTA,
    LEGACY_AUTO.lower(): UpdateStrategy.ADVANCED_ROLLING_UPDATE,
}

_EXPECTED = f'"{ADVANCED_ROLLING_UPDATE}" or "{OTA}" (any case)'


def choose_strategy(*, annotations: Mapping[str, str], update_strategy_type: str) -> StrategyChoice:
    """Read the update-strategy annotation of a DaemonSet, following the rules above."""
    raw = annotations.get(UPDATE_STRATEGY_ANNOTATION)
    if raw is None:
        return StrategyChoice(strategy=None)
    if len(raw) > LONGEST[UPDATE_STRATEGY_ANNOTATION]:
        notice = too_long_notice(UPDATE_STRATEGY_ANNOTATION, raw)
        return StrategyChoice(strategy=None, notices=(notice,))
    value = raw.strip()
    strategy = _BY_LOWERCASE_NAME.get(value.lower())
    if strategy is None:
        return StrategyChoice(strategy=None, notices=(_unknown_strategy(raw),))
    if update_strategy_type != ON_DELETE:
        return StrategyChoice(strategy=None, notices=(_not_on_delete(value, update_strategy_type),))
    if value.lower() == LEGACY_AUTO:
        return StrategyChoice(strategy=strategy, notices=(_deprecated_auto(raw),))
    return StrategyChoice(strategy=strategy)


def _unknown_strategy(raw: str) -> Notice:
    return Notice(
        type=EventType.WARNING,
        reason=UNKNOWN_UPDATE_STRATEGY,
        message=(
            f'{UPDATE_STRATEGY_ANNOTATION} is "{raw}", which is not an update strategy: '
            f"expected {_EXPECTED}; this DaemonSet is left alone until it is fixed"
        ),
        subject=raw,
    )


def _not_on_delete(value: str, update_strategy_type: str) -> Notice:
    return Notice(
        type=EventType.WARNING,
        reason=UPDATE_STRATEGY_NOT_ON_DELETE,
        message=(
            f'{UPDATE_STRATEGY_ANNOTATION}: {value} needs spec.updateStrategy.type "{ON_DELETE}", '
            f'found "{update_strategy_type}": the native controller keeps rolling this DaemonSet '
            "and edgerollout does nothing until the type is OnDelete"
        ),
        subject=f"{value.lower()}/{update_strategy_type}",
    )


def _deprecated_auto(raw: str) -> Notice:
    return Notice(
        type=EventType.NORMAL,
        reason=DEPRECATED_UPDATE_STRATEGY,
        message=(
            f'{UPDATE_STRATEGY_ANNOTATION} is "{raw}", the deprecated alias of '
            f'"{ADVANCED_ROLLING_UPDATE}": running AdvancedRollingUpdate; '
            f"set the annotation to {ADVANCED_ROLLING_UPDATE} to silence this event"
        ),
        subject=raw,
    )
