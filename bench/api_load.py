"""What a phase cost the API server: requests by verb and client.

Three independent sources: the API server's own `apiserver_request_total` (every client, by verb
and resource), edgerollout's `rest_client_requests_total` (its own requests, by method), and the API
server's audit log, which names the user behind every pod deletion.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

from bench import metrics
from bench.metrics import Samples


def apiserver_requests(delta: Samples) -> dict[str, Any]:
    """Requests the API server served in a phase: pods by verb, everything by verb."""
    pods = metrics.by_label(delta, "apiserver_request_total", "verb", resource="pods")
    everything = metrics.by_label(delta, "apiserver_request_total", "verb")
    return {
        "pods_by_verb": {verb: int(n) for verb, n in sorted(pods.items()) if n},
        "all_by_verb": {verb: int(n) for verb, n in sorted(everything.items()) if n},
        "flowcontrol_rejected": int(
            metrics.total(delta, "apiserver_flowcontrol_rejected_requests_total")
        ),
        # Seconds requests spent queued by priority and fairness, summed over requests.
        "flowcontrol_wait_seconds": round(
            metrics.total(delta, "apiserver_flowcontrol_request_wait_duration_seconds_sum"), 3
        ),
        # Pod watches the API server closed because their client read too slowly; that client
        # lists every pod again. On a saturated lab it is KWOK's watch of every bound pod
        # (docs/scale.md): its relists then slow every pod's stages.
        "pod_watches_closed": int(
            metrics.total(delta, "apiserver_terminated_watchers_total", resource="pods")
        ),
    }


def controller_requests(delta: Samples) -> dict[str, Any]:
    by_method = metrics.by_label(delta, "rest_client_requests_total", "method")
    return {
        "by_method": {method: int(n) for method, n in sorted(by_method.items()) if n},
        "pods_deleted": int(metrics.total(delta, "edgerollout_pods_deleted_total")),
        "conditions_written": int(metrics.total(delta, "edgerollout_pod_conditions_written_total")),
        # The rollout's own condition on its DaemonSet (a new phase at once, new counts at most
        # every 10 s): writes too, counted with the others.
        "daemonset_conditions_written": int(
            metrics.total(delta, "edgerollout_daemonset_conditions_written_total")
        ),
        "reconciles": int(metrics.total(delta, "reconcile_total")),
        "plan_seconds": _quantiles(delta, "edgerollout_plan_seconds"),
        "plan_cpu_seconds": _quantiles(delta, "edgerollout_plan_cpu_seconds"),
    }


def _quantiles(delta: Samples, histogram: str) -> dict[str, float | None]:
    """A histogram's median and 99th percentile over the interval `delta` covers."""
    return {
        f"p{round(share * 100)}": _rounded(metrics.histogram_quantile(delta, histogram, share))
        for share in (0.5, 0.99)
    }


def _rounded(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds, 5)


def daemonset_controller(delta: Samples) -> dict[str, Any]:
    """What kube-controller-manager's DaemonSet controller did in a phase (for every DaemonSet:
    the idle neighbour adds next to nothing). A sync is skipped, and retried with backoff, when
    its cache has not yet seen its own last write (StaleControllerConsistencyDaemonSet)."""
    queue = {"name": "daemonset"}
    syncs = metrics.total(delta, "workqueue_work_duration_seconds_count", **queue)
    seconds = metrics.total(delta, "workqueue_work_duration_seconds_sum", **queue)
    return {
        "syncs": int(syncs),
        "stale_skips": int(metrics.total(delta, "daemonset_controller_stale_sync_skips_total")),
        "retries": int(metrics.total(delta, "workqueue_retries_total", **queue)),
        "sync_seconds": round(seconds, 2),
        "queue_wait_seconds": round(
            metrics.total(delta, "workqueue_queue_duration_seconds_sum", **queue), 2
        ),
    }


def audit_deletes(
    logs: list[Path], namespace: str, since: datetime, *, name: str | None = None
) -> dict[str, int] | None:
    """Pod deletions in `namespace` (of the pod `name` only, if given) recorded by the API
    server's audit log (its files, the rotated ones included) since `since`, by user; None when
    the lab keeps no audit log."""
    if not logs:
        return None
    counts: dict[str, int] = {}
    for log in logs:
        _count_deletes(log, namespace, since, counts, name=name)
    return counts


def _count_deletes(
    log: Path, namespace: str, since: datetime, counts: dict[str, int], *, name: str | None
) -> None:
    with log.open(errors="replace") as lines:
        for line in lines:
            try:
                event = json.loads(line)
            except ValueError:
                continue
            ref = event.get("objectRef") or {}
            if event.get("verb") != "delete" or ref.get("resource") != "pods":
                continue
            if ref.get("namespace") != namespace or event.get("stage") != "ResponseComplete":
                continue
            if name is not None and ref.get("name") != name:
                continue
            stamp = datetime.fromisoformat(str(event.get("stageTimestamp")).replace("Z", "+00:00"))
            if stamp < since:
                continue
            user = str((event.get("user") or {}).get("username", "?"))
            counts[user] = counts.get(user, 0) + 1
