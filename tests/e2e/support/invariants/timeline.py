"""Values over time, as the invariant watcher records them, and how its reports write a moment."""

from __future__ import annotations

import bisect
import datetime
from collections.abc import Callable
from typing import Any


def clock(at: float) -> str:
    return datetime.datetime.fromtimestamp(at, datetime.UTC).strftime("%H:%M:%S.%f")[:-3]


class Timeline:
    """A value over time: the changes, each from its moment on."""

    def __init__(self) -> None:
        self.times: list[float] = []
        self.values: list[Any] = []

    def set(self, at: float, value: Any) -> None:
        if self.values and self.values[-1] == value:
            return
        # A correction to an earlier moment (an interrupted watch) never reorders the past.
        at = max(at, self.times[-1]) if self.times else at
        self.times.append(at)
        self.values.append(value)

    def at(self, moment: float, default: Any = None) -> Any:
        index = bisect.bisect_right(self.times, moment) - 1
        return self.values[index] if index >= 0 else default

    def since(self, moment: float) -> float:
        """When the value in force at `moment` was set (`moment` itself if nothing was)."""
        index = bisect.bisect_right(self.times, moment) - 1
        return self.times[index] if index >= 0 else moment

    def throughout(self, start: float, end: float, check: Callable[[Any], bool]) -> bool:
        """Whether `check` holds for the value at every moment of [start, end]."""
        if not check(self.at(start)):
            return False
        first = bisect.bisect_right(self.times, start)
        last = bisect.bisect_right(self.times, end)
        return all(check(value) for value in self.values[first:last])

    def changes_between(self, start: float, end: float) -> list[float]:
        first = bisect.bisect_right(self.times, start)
        last = bisect.bisect_right(self.times, end)
        return self.times[first:last]
