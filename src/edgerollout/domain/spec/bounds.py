"""How long a rollout annotation's value may be before it is read at all (design §12.7).

A DaemonSet's annotations are anyone's input who may edit it, and they are read on every
reconcile of the controller that serves the whole cluster. A value longer than any real one
(`LONGEST`) is not parsed: it holds the rollout, as an unreadable value does (§12.5), with one
Warning `AnnotationTooLong` that names the annotation and both lengths but does not repeat the
value. Its Event is keyed on the value's length and digest, so that the recorder remembers a few
bytes, not the value, and a new value is told again.
"""

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from edgerollout.domain.events import EventType, Notice
from edgerollout.domain.vocabulary import (
    ANNOTATION_TOO_LONG,
    BATCH_SOAK_ANNOTATION,
    BATCHES_ANNOTATION,
    MAINTENANCE_WINDOW_ANNOTATION,
    MAX_FAILED_ANNOTATION,
    MAX_FAILED_BEFORE_SAMPLE_ANNOTATION,
    MAX_HOLD_ANNOTATION,
    MAX_PULLING_ANNOTATION,
    MAX_UNAVAILABLE_ANNOTATION,
    MIN_SAMPLE_ANNOTATION,
    NODE_SELECTOR_ANNOTATION,
    ON_FAILURE_ANNOTATION,
    OTA_DEADLINE_ANNOTATION,
    PARTITION_ANNOTATION,
    PAUSED_ANNOTATION,
    PREPULL_ANNOTATION,
    PREPULL_WINDOW_ANNOTATION,
    PROGRESS_DEADLINE_ANNOTATION,
    ROLLED_BACK_ANNOTATION,
    UPDATE_STRATEGY_ANNOTATION,
    WAVE_LABEL_ANNOTATION,
    WAVES_ANNOTATION,
)

SHORT: Final = 256
"""A count, a duration, a boolean, a name or a label key: 256 characters is ten times the longest
real one (a label key is at most 253)."""

LONGEST: Final[Mapping[str, int]] = {
    UPDATE_STRATEGY_ANNOTATION: SHORT,
    MAX_UNAVAILABLE_ANNOTATION: SHORT,
    MAX_FAILED_ANNOTATION: SHORT,
    MIN_SAMPLE_ANNOTATION: SHORT,
    MAX_FAILED_BEFORE_SAMPLE_ANNOTATION: SHORT,
    PARTITION_ANNOTATION: SHORT,
    PAUSED_ANNOTATION: SHORT,
    PREPULL_ANNOTATION: SHORT,
    MAX_PULLING_ANNOTATION: SHORT,
    PROGRESS_DEADLINE_ANNOTATION: SHORT,
    OTA_DEADLINE_ANNOTATION: SHORT,
    MAX_HOLD_ANNOTATION: SHORT,
    WAVE_LABEL_ANNOTATION: SHORT,
    BATCH_SOAK_ANNOTATION: SHORT,
    ON_FAILURE_ANNOTATION: SHORT,
    ROLLED_BACK_ANNOTATION: SHORT,
    # Some dozens of batches such as "1, 5%, 25%".
    BATCHES_ANNOTATION: 1_024,
    # A selector of a few dozen requirements, or `in` sets of some hundreds of values.
    NODE_SELECTOR_ANNOTATION: 16_384,
    # Some 250 node pools of 63 characters each, in as many waves.
    WAVES_ANNOTATION: 16_384,
    # A few dozen windows such as "Mon-Fri 01:00-05:00".
    MAINTENANCE_WINDOW_ANNOTATION: 1_024,
    PREPULL_WINDOW_ANNOTATION: 1_024,
}
"""The longest value read, in characters, of each annotation that shapes a rollout."""


@dataclass(frozen=True, slots=True)
class Bounded:
    """A DaemonSet's annotations with every value too long to read taken out, and the Warning of
    each one taken out."""

    annotations: Mapping[str, str]
    notices: tuple[Notice, ...] = ()


def bounded(annotations: Mapping[str, str]) -> Bounded:
    """The annotations a reader may parse; the too-long ones are named in `notices`."""
    too_long = [
        (key, value)
        for key, value in annotations.items()
        if key in LONGEST and len(value) > LONGEST[key]
    ]
    if not too_long:
        return Bounded(annotations)
    dropped = {key for key, _ in too_long}
    kept = {key: value for key, value in annotations.items() if key not in dropped}
    return Bounded(kept, tuple(too_long_notice(key, value) for key, value in too_long))


def too_long_notice(annotation: str, value: str) -> Notice:
    """The Warning of a value longer than `LONGEST` allows; the value itself is not repeated."""
    digest = hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return Notice(
        type=EventType.WARNING,
        reason=ANNOTATION_TOO_LONG,
        message=(
            f"{annotation} is {len(value)} characters long, more than the {LONGEST[annotation]} "
            "read: it is not read, and no node is upgraded until it is shortened"
        ),
        subject=f"{annotation} {len(value)} sha256:{digest}",
    )
