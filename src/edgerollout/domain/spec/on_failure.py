"""What a rollout does past its failure budget, and the record of a rollback (design §13.4.1).

`edgerollout.io/on-failure` says what the failure budget (`max_failed`) does once it is spent:
`pause` (the default, and what an unset annotation means) pauses the rollout the way a user
would; `rollback` puts the DaemonSet's template back to the previous revision's, as `kubectl
rollout undo` does, and lets that roll out under the same budgets. Either is compared without
regard to case or surrounding whitespace, as `edgerollout.io/paused`. Any other value is a
Warning `InvalidOnFailure` and the rollout deletes nothing until it is fixed (design §12.5): a
user who asked for a gentler failure must not get a harsher one from a typo.

`edgerollout.io/rolled-back` is the controller's record of the rollback it made, written in the
same update as the template: `from <hash> (revision <n>) to <hash>`. It names the revision that
failed with the number it had then, so that the rollback's echo (the native controller makes the
old revision the newest again) is told from a user putting the failed template back later (the
revision is renumbered then); the plan reads it to put the broken nodes first, to roll a
rollback never back again, and `status` and `plan` show it. A value that does not read so (edited
by hand) is a Warning `InvalidRolledBack`, and nothing is deleted until it is fixed or removed.
"""

import enum
import re
from dataclasses import dataclass

from edgerollout.domain.events import EventType, Notice
from edgerollout.domain.vocabulary import (
    INVALID_ON_FAILURE,
    INVALID_ROLLED_BACK,
    ON_FAILURE_ANNOTATION,
    ON_FAILURE_PAUSE,
    ON_FAILURE_ROLLBACK,
    ROLLED_BACK_ANNOTATION,
)


class OnFailure(enum.Enum):
    PAUSE = ON_FAILURE_PAUSE
    ROLLBACK = ON_FAILURE_ROLLBACK


class RollbackSwitch(enum.Enum):
    """Whether the install lets the controller roll back in a DaemonSet's namespace, as `status`,
    `plan`, `list` and the dashboard read it (design §13.4.1): `ON` where the install's RoleBinding
    `edgerollout-controller-rollback` is, `OFF` where it is not, `UNKNOWN` where the reader may not
    look (its plan is then the one of a namespace not switched on, and says so). The controller
    itself goes by its `--rollback-namespace` flags, which the chart writes from the same list."""

    ON = "on"
    OFF = "off"
    UNKNOWN = "unknown"


def read_on_failure(raw: str | None) -> OnFailure | Notice:
    """What `edgerollout.io/on-failure` asks for (unset: pause), or the Warning of a value that
    is neither."""
    if raw is None:
        return OnFailure.PAUSE
    value = raw.strip().lower()
    for choice in OnFailure:
        if value == choice.value:
            return choice
    return Notice(
        type=EventType.WARNING,
        reason=INVALID_ON_FAILURE,
        message=(
            f'{ON_FAILURE_ANNOTATION} is "{raw}": expected "{ON_FAILURE_PAUSE}" or '
            f'"{ON_FAILURE_ROLLBACK}"; no node is upgraded until it is fixed'
        ),
        subject=raw,
    )


# A revision hash is a label value (the native controller writes digits and lower-case letters);
# a revision number an int64.
_HASH = r"([0-9A-Za-z][-0-9A-Za-z_.]{0,62})"
_ROLLED_BACK = re.compile(rf"from {_HASH} \(revision ([0-9]{{1,18}})\) to {_HASH}")


@dataclass(frozen=True, slots=True, kw_only=True)
class RolledBack:
    """A rollback the controller made: from the revision `failed` (numbered `failed_number` when
    it failed) to the revision `restored`."""

    failed: str
    failed_number: int
    restored: str

    def annotation(self) -> str:
        """The value of `edgerollout.io/rolled-back` that records it."""
        return f"from {self.failed} (revision {self.failed_number}) to {self.restored}"


def read_rolled_back(raw: str | None) -> RolledBack | Notice | None:
    """The rollback `edgerollout.io/rolled-back` records (None: unset, none made)."""
    if raw is None:
        return None
    found = _ROLLED_BACK.fullmatch(raw.strip())
    if found is not None:
        failed, number, restored = found.groups()
        return RolledBack(failed=failed, failed_number=int(number), restored=restored)
    return Notice(
        type=EventType.WARNING,
        reason=INVALID_ROLLED_BACK,
        message=(
            f'{ROLLED_BACK_ANNOTATION} is "{raw}": expected "from HASH (revision N) to HASH" as '
            "the controller writes it; no node is upgraded until it is fixed or removed"
        ),
        subject=raw,
    )
