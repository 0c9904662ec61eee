"""A DaemonSet's rollout annotations, read once per reconcile into one value.

Every annotation that shapes a rollout is read here and nowhere else in a reconcile, so that the
controller, `edgerollout status` and `edgerollout plan` decide from the same reading (design §12,
§13). Each value is what its reader returns: a value, None when unset (where unset means "no
such limit"), or the Warning `Notice` of a value that cannot be read. What an unreadable value
does is the planner's business (`reconcile`): most hold the rollout (design §12.5).

| field               | annotation                                   | reader                      |
|---------------------|----------------------------------------------|-----------------------------|
| `staging`           | paused, node-selector, partition, waves, ... | `staging.read_staging`        |
| `max_unavailable`   | `apps.openyurt.io/max-unavailable`           | `max_unavailable.read_max_unavailable` |
| `progress_deadline` | `edgerollout.io/progress-deadline-seconds`   | `deadlines.read_progress_deadline` |
| `max_failed`        | `edgerollout.io/max-failed`                  | `max_failed.read_max_failed` |
| `min_sample`        | `edgerollout.io/min-sample`, `.../max-failed-before-sample` | `max_failed.read_min_sample` |
| `ota_deadline`      | `edgerollout.io/ota-deadline`                | `deadlines.read_ota_deadline` |
| `prepull`           | `edgerollout.io/prepull`, `.../prepull-window`, `.../max-pulling` | `prepull.read_prepull` |
| `on_failure`        | `edgerollout.io/on-failure`                  | `on_failure.read_on_failure` |
| `rolled_back`       | `edgerollout.io/rolled-back`                 | `on_failure.read_rolled_back` |

The update strategy itself is chosen before (`strategy.choose_strategy`): a DaemonSet that is not
ours has no rollout spec.
"""

import functools
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import timedelta

from edgerollout.domain.events import Notice
from edgerollout.domain.spec.bounds import LONGEST, bounded
from edgerollout.domain.spec.count import Count
from edgerollout.domain.spec.deadlines import read_ota_deadline, read_progress_deadline
from edgerollout.domain.spec.max_failed import MinSample, read_max_failed, read_min_sample
from edgerollout.domain.spec.max_unavailable import InvalidMaxUnavailable, read_max_unavailable
from edgerollout.domain.spec.on_failure import (
    OnFailure,
    RolledBack,
    read_on_failure,
    read_rolled_back,
)
from edgerollout.domain.spec.prepull import Prepull, read_prepull
from edgerollout.domain.spec.staging import Staging, read_staging
from edgerollout.domain.vocabulary import (
    MAX_FAILED_ANNOTATION,
    MAX_FAILED_BEFORE_SAMPLE_ANNOTATION,
    MAX_PULLING_ANNOTATION,
    MAX_UNAVAILABLE_ANNOTATION,
    MIN_SAMPLE_ANNOTATION,
    ON_FAILURE_ANNOTATION,
    OTA_DEADLINE_ANNOTATION,
    PREPULL_ANNOTATION,
    PREPULL_WINDOW_ANNOTATION,
    PROGRESS_DEADLINE_ANNOTATION,
    ROLLED_BACK_ANNOTATION,
)


@dataclass(frozen=True, slots=True, kw_only=True)
class RolloutSpec:
    """The rollout a DaemonSet's annotations ask for (see the table in the module docstring)."""

    staging: Staging
    max_unavailable: Count | InvalidMaxUnavailable
    progress_deadline: timedelta | Notice
    max_failed: Count | Notice | None
    min_sample: MinSample | Notice | None = None
    ota_deadline: timedelta | Notice | None
    prepull: Prepull | Notice | None
    on_failure: OnFailure | Notice = OnFailure.PAUSE
    rolled_back: RolledBack | Notice | None = None

    def unreadable_failure_settings(self) -> tuple[Notice, ...]:
        """The Warnings of the values that say what a failure does, which cannot be read: the
        progress deadline, the failure budget, its sample, on-failure and the rollback's record.
        Any of them stops the plan of either strategy (nothing deleted or offered)."""
        values = (
            self.progress_deadline,
            self.max_failed,
            self.min_sample,
            self.on_failure,
            self.rolled_back,
        )
        return tuple(value for value in values if isinstance(value, Notice))


def read_rollout_spec(annotations: Mapping[str, str]) -> RolloutSpec:
    """Read the rollout annotations of one DaemonSet (user input never raises). A value too long
    to read (`bounds.LONGEST`) is left unread and holds the rollout, as an unreadable one does.

    Reconciles repeat on every pod's change while the annotations stay as they were: a reading is
    kept for the last `KEPT_READINGS` sets of values, keyed on the values short enough to read
    (at most 34 KB each), never on a too-long one (design §12.7)."""
    readable = bounded(annotations)
    spec = _read(tuple(sorted((k, v) for k, v in readable.annotations.items() if k in LONGEST)))
    if not readable.notices:
        return spec
    staging = spec.staging
    held = replace(staging, invalid=True, notices=staging.notices + readable.notices)
    return replace(spec, staging=held)


KEPT_READINGS = 128


@functools.lru_cache(maxsize=KEPT_READINGS)
def _read(items: tuple[tuple[str, str], ...]) -> RolloutSpec:
    annotations = dict(items)
    deadline = read_progress_deadline(annotations.get(PROGRESS_DEADLINE_ANNOTATION))
    max_failed = read_max_failed(annotations.get(MAX_FAILED_ANNOTATION))
    return RolloutSpec(
        staging=read_staging(annotations),
        max_unavailable=read_max_unavailable(annotations.get(MAX_UNAVAILABLE_ANNOTATION)),
        progress_deadline=deadline if isinstance(deadline, Notice) else timedelta(seconds=deadline),
        max_failed=max_failed,
        min_sample=read_min_sample(
            annotations.get(MIN_SAMPLE_ANNOTATION),
            annotations.get(MAX_FAILED_BEFORE_SAMPLE_ANNOTATION),
            max_failed=max_failed,
        ),
        ota_deadline=read_ota_deadline(annotations.get(OTA_DEADLINE_ANNOTATION)),
        prepull=read_prepull(
            annotations.get(PREPULL_ANNOTATION),
            window=annotations.get(PREPULL_WINDOW_ANNOTATION),
            max_pulling=annotations.get(MAX_PULLING_ANNOTATION),
        ),
        on_failure=read_on_failure(annotations.get(ON_FAILURE_ANNOTATION)),
        rolled_back=read_rolled_back(annotations.get(ROLLED_BACK_ANNOTATION)),
    )
