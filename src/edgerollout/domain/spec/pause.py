"""Whether a DaemonSet's rollout is paused: `edgerollout.io/paused` (design §12.1).

`"true"` pauses, `"false"` or no annotation does not (compared without regard to case, surrounding
whitespace ignored, as for the strategy annotation). Any other value is a mistake that must not
let the rollout run on: it counts as paused, with a Warning `InvalidPaused` naming the value and
the two accepted — security and safety fail closed.

While paused, AdvancedRollingUpdate deletes nothing, OTA keeps the conditions it wrote, and the
node agent refuses `upgrade` with 409 `RolloutPaused`.
"""

from collections.abc import Mapping
from dataclasses import dataclass

from edgerollout.domain.events import EventType, Notice
from edgerollout.domain.vocabulary import (
    INVALID_PAUSED,
    PAUSED_ANNOTATION,
    ROLLOUT_PAUSED,
    ROLLOUT_RESUMED,
)


@dataclass(frozen=True, slots=True, kw_only=True)
class PauseSetting:
    """The pause as read: `paused`, and the Warning to emit when the value was not understood."""

    paused: bool
    notice: Notice | None = None


def read_pause(annotations: Mapping[str, str]) -> PauseSetting:
    """The pause a DaemonSet's annotations ask for (see the module docstring)."""
    raw = annotations.get(PAUSED_ANNOTATION)
    if raw is None:
        return PauseSetting(paused=False)
    value = raw.strip().lower()
    if value == "true":
        return PauseSetting(paused=True)
    if value == "false":
        return PauseSetting(paused=False)
    return PauseSetting(
        paused=True,
        notice=Notice(
            type=EventType.WARNING,
            reason=INVALID_PAUSED,
            message=(
                f'{PAUSED_ANNOTATION} is "{raw}", which is neither "true" nor "false": '
                "the rollout stays paused until it is fixed"
            ),
            subject=raw,
        ),
    )


def pause_notice(paused: bool, *, before: bool | None, changes: int) -> Notice | None:
    """The Normal `RolloutPaused` / `RolloutResumed` Event when the pause changed.

    `before` is the pause the previous plan saw (None: no previous plan, as after a restart: a
    paused rollout is then reported once more, a running one is not); `changes` counts the changes
    seen so far, so that each pause and each resume is an Event of its own."""
    if paused == before or (before is None and not paused):
        return None
    if paused:
        return Notice(
            type=EventType.NORMAL,
            reason=ROLLOUT_PAUSED,
            message=(
                f"{PAUSED_ANNOTATION} is set: no pod is deleted and no upgrade is offered "
                "until the rollout is resumed (edgerollout resume)"
            ),
            subject=str(changes + 1),
        )
    return Notice(
        type=EventType.NORMAL,
        reason=ROLLOUT_RESUMED,
        message="the rollout is resumed",
        subject=str(changes + 1),
    )
