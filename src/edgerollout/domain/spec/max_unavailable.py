"""How many Ready nodes an AdvancedRollingUpdate may have unavailable at once.

`apps.openyurt.io/max-unavailable` takes the forms of the native `maxUnavailable` (design §2.3):

- an integer of decimal digits, `3`;
- a percentage, `30%`, of the *base*: the number of nodes that currently hold a pod of the
  DaemonSet (OpenYurt counts the same way; `Snapshot.budget_base` counts them, the one count the
  controller, `status` and `plan` use). A percentage rounds up, as
  `GetScaledValueFromIntOrPercent(..., roundUp=true)` does, so 10% of 3 nodes is 1.
- unset, `0` and `0%` (and `00`, `0000%`: zero however written) mean the default `10%`;
- anything above the base, or above `100%`, is the base.

From these rules, for a base of at least 1 the result is never below 1 (a non-zero integer stays
non-zero after clamping; a non-zero percentage rounds up to at least 1), and for a base of 0 it
is 0: there is nothing to upgrade.

Anything else is an error a user must fix (`abc`, `-1`, `+3`, `1.5`, `%`, `30 %`, `1e3`, `0x10`,
the empty string): the form is `count.read_count`'s, shared with the partition and the failure
budget. User input never raises: the result is a value or an `InvalidMaxUnavailable` carrying
the Warning to emit. The annotation is read once per reconcile (`read_max_unavailable`, into the
DaemonSet's `RolloutSpec`), then resolved against that reconcile's base (`MaxUnavailable.of`).
"""

from dataclasses import dataclass
from typing import Self

from edgerollout.domain.events import EventType, Notice
from edgerollout.domain.spec.count import Count, Rounding, read_count
from edgerollout.domain.vocabulary import (
    DEFAULT_MAX_UNAVAILABLE,
    INVALID_MAX_UNAVAILABLE,
    MAX_UNAVAILABLE_ANNOTATION,
)


@dataclass(frozen=True, slots=True, kw_only=True)
class MaxUnavailable:
    """A resolved budget: at most `value` Ready nodes unavailable, out of `base`."""

    value: int
    base: int
    written: str
    """The form the value came from, after defaulting: `"30%"`, `"3"`, or `"10%"` when unset."""

    @classmethod
    def of(cls, count: Count, *, base: int) -> Self:
        """The budget `count` allows over `base` nodes: rounded up, at most the base."""
        base = max(base, 0)
        return cls(
            value=min(count.of(base, rounding=Rounding.UP), base), base=base, written=count.written
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class InvalidMaxUnavailable:
    """The annotation could not be read: no pod may be deleted, and the user is told why."""

    raw: str

    @property
    def notice(self) -> Notice:
        """The Warning `InvalidMaxUnavailable` naming the value seen and the forms expected."""
        return Notice(
            type=EventType.WARNING,
            reason=INVALID_MAX_UNAVAILABLE,
            message=(
                f'{MAX_UNAVAILABLE_ANNOTATION} is "{self.raw}", which is neither an integer '
                'such as "3" nor a percentage such as "30%": no pod is deleted until it is fixed'
            ),
            subject=self.raw,
        )


def _default() -> Count:
    count = read_count(DEFAULT_MAX_UNAVAILABLE)
    if count is None or count.zero:  # a constant of this module: fails at import, never later
        raise ValueError(f"the default max-unavailable {DEFAULT_MAX_UNAVAILABLE!r} is no budget")
    return count


_DEFAULT = _default()


def read_max_unavailable(raw: str | None) -> Count | InvalidMaxUnavailable:
    """The budget written as `raw` (None: the annotation is unset), before it meets a base:
    unset and zero are the default 10%."""
    if raw is None:
        return _DEFAULT
    count = read_count(raw)
    if count is None:
        return InvalidMaxUnavailable(raw=raw)
    return _DEFAULT if count.zero else count
