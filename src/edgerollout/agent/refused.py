"""The one way a route of the agent says no: raise `Refused`, and the middleware answers it."""

from __future__ import annotations

from edgerollout.domain.planning.ota_requests import Refusal


class Refused(Exception):
    """A request refused with `refusal` (its code, reason and message) and `headers`."""

    def __init__(self, refusal: Refusal, headers: dict[str, str] | None = None) -> None:
        super().__init__(refusal.message)
        self.refusal = refusal
        self.headers = headers or {}
