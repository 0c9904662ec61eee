"""Whether a pod is available: Ready, and Ready for longer than minReadySeconds.

This mirrors Kubernetes' `podutil.IsPodAvailable`: with `minReadySeconds` 0 a Ready pod is
available at once; otherwise it must have turned Ready strictly more than `minReadySeconds` before
`now`, and a Ready pod whose transition time is unknown is not yet available.
"""

from datetime import datetime, timedelta

from edgerollout.domain.model import PodView
from edgerollout.domain.timestamps import to_utc


def is_available(pod: PodView, *, min_ready_seconds: int, now: datetime) -> bool:
    """Whether `pod` counts as available at `now`."""
    if not pod.ready:
        return False
    if min_ready_seconds <= 0:
        return True
    if pod.ready_since is None:
        return False
    return to_utc(pod.ready_since) + timedelta(seconds=min_ready_seconds) < to_utc(now)
