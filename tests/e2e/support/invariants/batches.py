"""The batches of a slow start, restated for the judge from the annotations' specification (design
§12.8), not taken from the controller's code.

- `edgerollout.io/batches`: cumulative targets over the nodes the partition leaves in, in name
  order (the chaos runs use no waves and no node selector): `"1, 25%, 100%"` upgrades the first
  node, then up to 25 % of them (rounded up), then every node; a last batch of 100 % is implied.
  A target is `N` or `P%` (P at most 100), none zero, at most `MOST_BATCHES` of them, separated by
  commas, each with surrounding whitespace ignored. A target below an earlier one adds nothing.
- `edgerollout.io/batch-soak`: a Go duration; a batch starts only once every node of the earlier
  ones has been done (Ready, running the newest template, available) that long.
- Any other value, or a soak without batches, is unreadable and holds every node.

A batch starts when every Ready node of the earlier batches is done, and the soak since the last
of them has passed. A node that is not Ready, or holds its own upgrade (`holds.hold_ends`), holds
no batch back.
"""

from __future__ import annotations

import math
import re

from tests.e2e.support.invariants.holds import duration_seconds

MOST_BATCHES = 64
_TARGET = re.compile(r"([0-9]+)(%?)")


def batch_ends(raw: str | None, count: int) -> list[int] | None:
    """Where each batch of `edgerollout.io/batches` (None: not set) ends among `count` nodes:
    the batch of the node at place p (from 0) is the first whose end is above p. [count] when
    the annotation is not set; None when it cannot be read."""
    if raw is None:
        return [count]
    parts = [part.strip() for part in raw.split(",")]
    if len(parts) > MOST_BATCHES:
        return None
    ends: list[int] = []
    for part in parts:
        form = _TARGET.fullmatch(part)
        if form is None:
            return None
        number, percent = int(form.group(1)), bool(form.group(2))
        if number == 0 or (percent and number > 100):
            return None
        wanted = math.ceil(count * number / 100) if percent else number
        ends.append(min(max(wanted, ends[-1] if ends else 0), count))
    if ends[-1] < count:
        ends.append(count)
    return ends


def soak_seconds(raw_soak: str | None, raw_batches: str | None) -> float | None:
    """How long a batch soaks, in seconds (0 when not set); None when unreadable, or set without
    batches."""
    if raw_soak is None:
        return 0.0
    if raw_batches is None:
        return None
    return duration_seconds(raw_soak.strip())
