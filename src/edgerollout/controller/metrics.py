"""The controller's Prometheus metrics (design §10.7).

Names follow controller-runtime where it has them (`workqueue_*`, `reconcile_*`,
`rest_client_requests_total`, `leader_election_master_status`) so existing dashboards work. No
label ever carries a node or pod name: cardinality stays fixed however large the cluster.
"""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

CONTROLLER = "daemonset-upgrader"

WORKQUEUE_ADDS = Counter("workqueue_adds_total", "Adds handled by the work queue.", ["name"])
WORKQUEUE_DEPTH = Gauge("workqueue_depth", "Current depth of the work queue.", ["name"])
WORKQUEUE_RETRIES = Counter("workqueue_retries_total", "Retries handled by the queue.", ["name"])
WORKQUEUE_QUEUE_DURATION = Histogram(
    "workqueue_queue_duration_seconds",
    "How long an item stays in the queue before it is processed.",
    ["name"],
)
WORKQUEUE_WORK_DURATION = Histogram(
    "workqueue_work_duration_seconds", "How long processing an item takes.", ["name"]
)

RECONCILE_TOTAL = Counter("reconcile_total", "Reconciliations by result.", ["controller", "result"])
RECONCILE_ERRORS = Counter("reconcile_errors_total", "Reconciliation errors.", ["controller"])
RECONCILE_TIME = Histogram(
    "reconcile_time_seconds", "Length of time per reconciliation.", ["controller"]
)

# The snapshot and plan of one reconcile, writes left out: what the rollout's size costs. Buckets
# fine enough below 10 ms to tell a p99 there.
PLAN_TIME = Histogram(
    "edgerollout_plan_seconds",
    "Time to take a DaemonSet's snapshot and plan it, in one reconcile (writes not included).",
    buckets=(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5),
)

# The same, in the CPU time of the controller's thread: what a plan costs, apart from the time the
# process waited for a core (on a busy node the wall clock of a 1 ms plan reads ten times that).
PLAN_CPU_TIME = Histogram(
    "edgerollout_plan_cpu_seconds",
    "CPU time (of the controller's thread) to take a DaemonSet's snapshot and plan it, in one "
    "reconcile (writes not included).",
    buckets=(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5),
)

REST_CLIENT_REQUESTS = Counter(
    "rest_client_requests_total",
    "Requests to the API server, by status code and method.",
    ["code", "method", "host"],
)

LEADER = Gauge(
    "leader_election_master_status",
    "1 while this replica holds the leader Lease, else 0.",
    ["name"],
)

PODS_DELETED = Counter(
    "edgerollout_pods_deleted_total",
    "Pods deleted by AdvancedRollingUpdate, by why they were chosen.",
    ["reason"],
)
NODES_SKIPPED = Gauge(
    "edgerollout_nodes_skipped_not_ready",
    "Nodes holding a pod of an AdvancedRollingUpdate DaemonSet that are skipped as not Ready.",
)
NODES = Gauge(
    "edgerollout_nodes",
    "Nodes holding a pod of an AdvancedRollingUpdate DaemonSet, by where they stand as of its last"
    " plan (all DaemonSets together): updated, starting, broken (a Ready node whose new pod fails),"
    " offline (not Ready, skipped), held, outdated, replacing.",
    ["state"],
)
ROLLOUT_PHASE = Gauge(
    "edgerollout_rollout_phase",
    "1 for the phase each opted-in DaemonSet's rollout is in as of its last plan, 0 for the"
    " others: the reason of its edgerollout.io/Progressing condition (design §9.1).",
    ["namespace", "daemonset", "phase"],
)
DAEMONSET_NODES = Gauge(
    "edgerollout_daemonset_nodes",
    "Each opted-in DaemonSet's nodes as of its last plan: total, and updated, offline, broken,"
    " held, remaining (design §9.1); absent while an annotation stops it before they are counted.",
    ["namespace", "daemonset", "state"],
)
ROLLOUT_CONDITIONS_WRITTEN = Counter(
    "edgerollout_daemonset_conditions_written_total",
    "Patches of a DaemonSet's edgerollout.io/Progressing condition sent (a removal included).",
)
CACHE_OBJECTS = Gauge(
    "edgerollout_cache_objects",
    "Objects held in the controller's caches, by resource: DaemonSets, the pods and"
    " ControllerRevisions DaemonSets control, Nodes, and pre-pull Jobs (nothing else is kept).",
    ["resource"],
)
CONDITIONS_WRITTEN = Counter(
    "edgerollout_pod_conditions_written_total",
    "Pod condition patches sent, by condition type.",
    ["type"],
)
EVENTS_EMITTED = Counter(
    "edgerollout_events_total", "Kubernetes Events recorded, by reason.", ["reason"]
)
