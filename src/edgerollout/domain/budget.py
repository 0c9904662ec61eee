"""How many Ready nodes an AdvancedRollingUpdate may have unavailable at once.

`apps.openyurt.io/max-unavailable` takes the forms of the native `maxUnavailable` (design §2.3):

- an integer of decimal digits, `3`;
- a percentage, `30%`, of the *base*: the number of nodes that currently hold a pod of the
  DaemonSet (OpenYurt counts the same way). A percentage rounds up, as
  `GetScaledValueFromIntOrPercent(..., roundUp=true)` does, so 10% of 3 nodes is 1.
- unset, `0` and `0%` (and `00`, `0000%`: zero however written) mean the default `10%`;
- anything above the base, or above `100%`, is the base.

From these rules, for a base of at least 1 the result is never below 1 (a non-zero integer stays
non-zero after clamping; a non-zero percentage rounds up to at least 1), and for a base of 0 it
is 0: there is nothing to upgrade.

Anything else is an error a user must fix (`abc`, `-1`, `+3`, `1.5`, `%`, `30 %`, `1e3`, `0x10`,
the empty string). Only ASCII digits count: `٣` is not 3. Surrounding whitespace is ignored, as for
the strategy annotation. User input never raises: the result is a value or an
`InvalidMaxUnavailable` carrying the Warning to emit.
"""

import re
from collections.abc import Iterable
from dataclasses import dataclass

from edgerollout.domain.events import EventType, Notice
from edgerollout.domain.model import InFlightDeletion, PodView
from edgerollout.domain.vocabulary import (
    DEFAULT_MAX_UNAVAILABLE,
    INVALID_MAX_UNAVAILABLE,
    MAX_UNAVAILABLE_ANNOTATION,
)

_FORM = re.compile(r"(?P<number>[0-9]+)(?P<percent>%?)")
_MANY_DIGITS = 15


@dataclass(frozen=True, slots=True, kw_only=True)
class MaxUnavailable:
    """A resolved budget: at most `value` Ready nodes unavailable, out of `base`."""

    value: int
    base: int
    written: str
    """The form the value came from, after defaulting: `"30%"`, `"3"`, or `"10%"` when unset."""


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


def parse_max_unavailable(raw: str | None, *, base: int) -> MaxUnavailable | InvalidMaxUnavailable:
    """The budget written as `raw` (None: annotation unset) for `base` nodes holding a pod."""
    if raw is None:
        return parse_max_unavailable(DEFAULT_MAX_UNAVAILABLE, base=base)
    written = raw.strip()
    form = _FORM.fullmatch(written)
    if form is None:
        return InvalidMaxUnavailable(raw=raw)
    digits = form["number"].lstrip("0")
    if not digits:
        return parse_max_unavailable(DEFAULT_MAX_UNAVAILABLE, base=base)
    base = max(base, 0)
    if len(digits) > _MANY_DIGITS:
        # Far above any node count, as an integer or as a percentage: clamps to the base.
        # (Also keeps int() away from its limit on very long digit strings.)
        return MaxUnavailable(value=base, base=base, written=written)
    number = int(digits)
    # A percentage rounds up: ceil(base * number / 100), in integers.
    value = -(-base * number // 100) if form["percent"] else number
    return MaxUnavailable(value=min(value, base), base=base, written=written)


def budget_base(
    pods: Iterable[PodView],
    *,
    in_flight: Iterable[InFlightDeletion] = (),
    desired_nodes: int | None = None,
) -> int:
    """The number of distinct nodes holding at least one pod (terminating pods included).

    A node whose pod is being replaced still counts between the old pod's removal and the new
    one's creation: the node of a deletion still in flight, and every node the native controller
    counts in `desired_nodes` (`status.desiredNumberScheduled`) beyond those holding a pod. They
    are the nodes the planner counts as unavailable for having no pod; leaving them out of the
    base would shrink the budget by as many nodes as are between two pods at that moment — from
    100 to 96 of 1,000 nodes at 10 % during a rollout."""
    nodes = {pod.node_name for pod in pods if pod.node_name is not None}
    nodes.update(deletion.node_name for deletion in in_flight)
    return base_of(len(nodes), desired_nodes=desired_nodes)


def base_of(nodes_held: int, *, desired_nodes: int | None = None) -> int:
    """The base from the number of distinct nodes holding a pod or an in-flight deletion (see
    `budget_base`, which counts them; a `RolloutBook` keeps the count)."""
    return max(nodes_held, desired_nodes or 0)
