"""The structured fields of edgerollout's log lines: every name, spelled once, with what it holds.

A log line is a short constant message plus fields, as klog's structured logging writes them: the
message says what happened, the fields say to what. Pass the fields with the standard library's
`extra`, built as a `LogFields` so that mypy checks every name and type::

    log.debug(
        "deleted pod",
        extra=LogFields(daemonset="default/agent", node="edge-7", pod="default/agent-x2x9k",
                        revision="6d5f8b7c4d", reason="outdated_within_budget"),
    )

`edgerollout controller` and `edgerollout agent` (`cli/logging_setup.py`) write each field as a key
of the JSON line (`--log-format=json`), or as `key=value` after the message in text, the value
JSON-encoded (strings quoted): `deleted pod daemonset="default/agent" node="edge-7" ...`.

Levels: a decision about one object (a pod deleted, a node skipped, a condition written, a pull
Job started) is DEBUG. Each reconcile logs one summary line (what it deleted, wrote and skipped,
when it looks again): at INFO when it had something to do (pods to delete, pull Jobs to start,
report or remove, conditions written), at DEBUG when nothing changed, since most reconciles follow
a watch event that changes nothing. Something that went wrong and is retried is WARNING;
something that needs a person is ERROR.

| field           | holds                                                               | e.g.                  |
|-----------------|---------------------------------------------------------------------|-----------------------|
| `daemonset`     | the DaemonSet, `namespace/name` (also the work queue's key)         | `default/agent`       |
| `node`          | a node's name                                                       | `edge-7`              |
| `pod`           | a pod, `namespace/name`                                             | `default/agent-x2x9k` |
| `uid`           | the pod's UID (the precondition of its deletion)                    |                       |
| `revision`      | a ControllerRevision hash (the revision a pod is moved to)          | `6d5f8b7c4d`          |
| `reason`        | why: an Event's or a refusal's reason; for a deletion, the `reason` | `Unauthorized`        |
|                 | label of `edgerollout_pods_deleted_total`; for a skipped node, its  | `outdated_unavailable` |
|                 | readiness                                                           | `NotReady`            |
| `strategy`      | the DaemonSet's update strategy                                     | `OTA`                 |
| `condition`     | a pod condition's type                                              | `PodNeedUpgrade`      |
| `status`        | a pod condition's status                                            | `True`                |
| `unavailable`   | nodes unavailable (counted against the budget) after a decision     | `3`                   |
| `budget`        | the DaemonSet's maxUnavailable, as a number of nodes                | `10`                  |
| `deleted`       | pods one reconcile deleted                                          | `10`                  |
| `written`       | pod conditions one reconcile wrote                                  | `4`                   |
| `skipped`       | not-Ready nodes one reconcile left alone                            | `2`                   |
| `held`          | nodes a staged rollout holds back (design §12)                      | `4`                   |
| `wave`          | the wave a staged rollout is at                                     | `pool-b`              |
| `requeue_after` | seconds until the DaemonSet is looked at again without an event     | `5.0`                 |
| `count`         | how many objects a line is about                                    | `12`                  |
| `resource`      | the kind a cache holds, plural                                      | `pods`                |
| `lease`         | the leader-election Lease, `namespace/name`                         |                       |
| `identity`      | this replica's name on the Lease                                    | `host-1_4711`         |
| `address`       | where a server listens                                              | `127.0.0.1:10267`     |
| `method`        | an HTTP request's method                                            | `POST`                |
| `path`          | an HTTP request's path, or a file's                                 | `/pods`               |
| `code`          | an HTTP status code                                                 | `409`                 |
| `error`         | what went wrong, as the error says it                               |                       |
| `retry_after`   | seconds until a failed step is tried again                          | `0.04`                |

A traceback (`log.exception`) is the JSON key `exception`, or the lines after the text line.
"""

from __future__ import annotations

from typing import TypedDict


class LogFields(TypedDict, total=False):
    """The structured fields of one log line (see the table above); pass it as `extra=`."""

    daemonset: str
    node: str
    pod: str
    uid: str
    revision: str
    reason: str
    strategy: str
    condition: str
    status: str
    unavailable: int
    budget: int
    deleted: int
    written: int
    skipped: int
    held: int
    wave: str
    requeue_after: float
    count: int
    resource: str
    lease: str
    identity: str
    address: str
    method: str
    path: str
    code: int
    error: str
    retry_after: float
