"""When a rollout stops for its broken nodes: the Warning `RolloutFailed` (design §13.4).

`edgerollout.io/max-failed` (read by `spec.max_failed`) tolerates a number of broken nodes, or a
percentage of the rollout's nodes rounded down; one more stops the rollout: it deletes nothing
more and is paused the way a user would pause it, with a Warning naming each broken node and why.
With a sample (`edgerollout.io/min-sample`, `MinSample`), the percentage is of the nodes that
tried the newest revision, and is judged only once the sample has tried it; before, the sample's
own count of broken nodes is tolerated (the arithmetic is in `spec.max_failed`'s docstring).
"""

from collections.abc import Mapping
from dataclasses import dataclass

from edgerollout.domain.events import EventType, Notice
from edgerollout.domain.model import NodeName
from edgerollout.domain.planning.health import Broken
from edgerollout.domain.spec.count import Count, Rounding
from edgerollout.domain.spec.max_failed import MinSample
from edgerollout.domain.timestamps import format_rfc3339
from edgerollout.domain.vocabulary import (
    MAX_FAILED_ANNOTATION,
    MAX_FAILED_BEFORE_SAMPLE_ANNOTATION,
    MIN_SAMPLE_ANNOTATION,
    PAUSED_ANNOTATION,
    ROLLOUT_FAILED,
)

# An Event's message is meant for a person; past this many nodes it says how many more.
NAMED_NODES = 10


@dataclass(frozen=True, slots=True, kw_only=True)
class FailureAccount:
    """Why a rollout stops: `broken` says how many nodes are broken on `revision` and which (ten
    at most by name, with their reason and since when), `budget` the limit that tolerates
    `tolerated` of them; `subject` keys its Event (the revision and the pause changes seen)."""

    revision: str
    broken: str
    named: str
    budget: str
    tolerated: int
    subject: str

    def told(self, *, reason: str, then: str) -> Notice:
        """The Warning `reason` of this stop, saying what is done about it (`then`)."""
        return Notice(
            type=EventType.WARNING,
            reason=reason,
            message=(
                f"{self.broken} broken on revision {self.revision}, more than "
                f"{self.budget} tolerates ({self.tolerated}): {self.named}. {then}"
            ),
            subject=self.subject,
        )


PAUSED_THEN = (
    f'The rollout is paused ({PAUSED_ANNOTATION}: "true") and deletes nothing more; '
    "fix the revision, then resume it (edgerollout resume)"
)


def failure_stop(
    broken: Mapping[NodeName, Broken],
    *,
    limit: Count | None,
    nodes: int,
    revision: str | None,
    pause_changes: int,
    paused: bool = False,
    sample: MinSample | None = None,
    tried: int = 0,
) -> Notice | None:
    """The Warning `RolloutFailed` when more nodes are `broken` than `limit` tolerates out of
    `nodes` — or, with a `sample`, than it tolerates of the `tried` nodes once they are as many
    as the sample, and than the sample tolerates before (None: within the budget, or no budget,
    or nothing to stop: the rollout is `paused` already or has no newest `revision`).

    The Event is told once per stop: its subject is the revision and how many changes of the
    pause were seen before it, so a resume that is stopped again is told again."""
    account = failure_account(
        broken,
        limit=limit,
        nodes=nodes,
        revision=revision,
        pause_changes=pause_changes,
        paused=paused,
        sample=sample,
        tried=tried,
    )
    return None if account is None else account.told(reason=ROLLOUT_FAILED, then=PAUSED_THEN)


def failure_account(
    broken: Mapping[NodeName, Broken],
    *,
    limit: Count | None,
    nodes: int,
    revision: str | None,
    pause_changes: int,
    paused: bool = False,
    sample: MinSample | None = None,
    tried: int = 0,
) -> FailureAccount | None:
    """Why the rollout stops, as `failure_stop` judges it (None: it does not)."""
    if limit is None or paused or revision is None:
        return None
    tolerated, budget = _tolerated(limit, nodes=nodes, sample=sample, tried=tried)
    if len(broken) <= tolerated:
        return None
    names = sorted(broken)
    named = "; ".join(
        f"{name}: {broken[name].reason} since {format_rfc3339(broken[name].since)}"
        for name in names[:NAMED_NODES]
    )
    more = len(names) - NAMED_NODES
    if more > 0:
        named += f"; and {more} more"
    return FailureAccount(
        revision=revision,
        broken=_nodes(len(names)),
        named=named,
        budget=budget,
        tolerated=tolerated,
        subject=f"{revision}/{pause_changes}",
    )


def _tolerated(
    limit: Count, *, nodes: int, sample: MinSample | None, tried: int
) -> tuple[int, str]:
    """How many broken nodes are tolerated (rounded down: stop sooner, never later), and the
    budget that says so, as the Warning names it."""
    if sample is None:
        return limit.of(nodes, rounding=Rounding.DOWN), f'{MAX_FAILED_ANNOTATION} "{limit.written}"'
    if tried < sample.size:
        return sample.before, (
            f'{MAX_FAILED_BEFORE_SAMPLE_ANNOTATION} "{sample.before}" before '
            f"{MIN_SAMPLE_ANNOTATION} {sample.size} nodes tried it ({tried} so far)"
        )
    return limit.of(tried, rounding=Rounding.DOWN), (
        f'{MAX_FAILED_ANNOTATION} "{limit.written}" of the {tried} nodes that tried it'
    )


def _nodes(count: int) -> str:
    return "1 node is" if count == 1 else f"{count} nodes are"
