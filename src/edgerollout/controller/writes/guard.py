"""The leader check every write makes right before its request."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


class NotLeader(RuntimeError):
    """A write was about to happen while this replica does not hold the Lease."""


@dataclass(frozen=True, slots=True)
class WriteGuard:
    # Whether this replica may write now (it holds the Lease, or runs without leader election).
    may_write: Callable[[], bool]

    def check(self) -> None:
        """Raise NotLeader unless this replica may write now."""
        if not self.may_write():
            raise NotLeader("not the leader: refusing to write")
