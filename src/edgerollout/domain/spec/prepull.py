"""Whether an AdvancedRollingUpdate pre-pulls before it deletes: `edgerollout.io/prepull`.

`"true"` or `"false"`, compared without regard to case or surrounding whitespace, as
`edgerollout.io/paused`; anything else is a Warning and holds the rollout (design §13.5).
"""

from edgerollout.domain.events import EventType, Notice
from edgerollout.domain.vocabulary import (
    INVALID_PREPULL,
    PREPULL_ANNOTATION,
)


# The holds under which a node's images are still asked for (see the module docstring).
def read_prepull(raw: str | None) -> bool | Notice:
    """Whether `edgerollout.io/prepull` asks for pre-pull before delete; a Warning when the
    value is neither "true" nor "false" (compared without regard to case or surrounding
    whitespace, as `edgerollout.io/paused`)."""
    if raw is None:
        return False
    value = raw.strip().lower()
    if value in ("true", "false"):
        return value == "true"
    return Notice(
        type=EventType.WARNING,
        reason=INVALID_PREPULL,
        message=(
            f'{PREPULL_ANNOTATION} is "{raw}", which is neither "true" nor "false"; '
            "no node is upgraded until it is fixed"
        ),
        subject=raw,
    )
