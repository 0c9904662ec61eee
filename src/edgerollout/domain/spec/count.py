"""Numbers of nodes written `"N"` or `"P%"`: the one reading of the form three annotations share.

`apps.openyurt.io/max-unavailable`, `edgerollout.io/partition` and `edgerollout.io/max-failed`
take the form of Kubernetes' `IntOrString` fields (`maxUnavailable: 3`, `maxUnavailable: 30%`):

- ASCII decimal digits (`٣` is not 3), leading zeros allowed (`007` is 7);
- optionally followed by `%` with nothing between (`30 %` is not a percentage);
- surrounding whitespace ignored, as for every annotation;
- nothing else: `-1`, `+3`, `1.5`, `1e3`, `0x10`, `%` and the empty string are not counts.

What a count *means* differs by use, and each use says so where it resolves one
(`Count.of(nodes, rounding=...)`, then its own limits; design §2.3):

| annotation       | a percentage rounds | limits                                          |
|------------------|---------------------|-------------------------------------------------|
| max-unavailable  | up (as upstream)    | 0 means the default 10%; at most the base       |
| partition        | up (more held)      | 0 holds nothing; at most the nodes covered      |
| max-failed       | down (stop sooner)  | at most 100% or 2147483647 nodes, else invalid  |

A number of more than 15 digits is far above any node count; it is kept as `SATURATED`
(10^15), which each use clamps or refuses as above, and which keeps `int()` away from its limit
on very long digit strings.
"""

import re
from dataclasses import dataclass
from enum import Enum

_FORM = re.compile(r"(?P<number>[0-9]+)(?P<percent>%?)", re.ASCII)
_MANY_DIGITS = 15
SATURATED = 10**_MANY_DIGITS
"""What a count of more digits than any fleet needs is read as."""


class Rounding(Enum):
    """How a percentage of a number of nodes becomes whole nodes."""

    UP = "up"
    DOWN = "down"


@dataclass(frozen=True, slots=True, kw_only=True)
class Count:
    """A number of nodes as written: `number` nodes, or `number` percent of some nodes."""

    written: str
    """The value as written, without surrounding whitespace."""
    number: int
    percent: bool

    @property
    def zero(self) -> bool:
        """Whether it is zero, however written (`0`, `000`, `0%`)."""
        return self.number == 0

    def of(self, nodes: int, *, rounding: Rounding) -> int:
        """The whole nodes it stands for out of `nodes` (a negative `nodes` counts as none):
        the number itself, or the percentage of `nodes` rounded as asked. Not clamped: a use
        that caps it at `nodes` says so."""
        if not self.percent:
            return self.number
        share = max(nodes, 0) * self.number
        return -(-share // 100) if rounding is Rounding.UP else share // 100


def read_count(raw: str) -> Count | None:
    """The count `raw` is written as; None when it is not of the form."""
    written = raw.strip()
    form = _FORM.fullmatch(written)
    if form is None:
        return None
    digits = form["number"].lstrip("0") or "0"
    number = int(digits) if len(digits) <= _MANY_DIGITS else SATURATED
    return Count(written=written, number=number, percent=bool(form["percent"]))
