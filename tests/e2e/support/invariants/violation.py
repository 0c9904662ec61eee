"""A broken promise, as the judge reports it."""

from __future__ import annotations

from dataclasses import dataclass

from tests.e2e.support.invariants.timeline import clock


@dataclass(frozen=True, slots=True)
class Violation:
    """A broken promise: when, which invariant, what happened, and the objects involved."""

    at: float
    invariant: str
    message: str
    objects: tuple[str, ...]

    def __str__(self) -> str:
        return f"{clock(self.at)} [{self.invariant}] {self.message} ({', '.join(self.objects)})"
