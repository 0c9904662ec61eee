"""The words edgerollout shares with Kubernetes, OpenYurt and ACK Edge.

Every annotation key, label, condition type, reason and event reason lives here once. They are
a public contract: a user switching from OpenYurt's daemonPodUpdater or ACK Edge keeps the same
manifests and the same scripts (`kubectl get events --field-selector reason=...`,
`jq '.status.conditions[] | select(.type == "PodNeedUpgrade")'`), so none of these strings may be
spelled anywhere else.
"""

from typing import Final

# DaemonSet annotations that opt a DaemonSet in (design §2).
UPDATE_STRATEGY_ANNOTATION: Final = "apps.openyurt.io/update-strategy"
MAX_UNAVAILABLE_ANNOTATION: Final = "apps.openyurt.io/max-unavailable"

# Values of the update-strategy annotation, matched case-insensitively.
ADVANCED_ROLLING_UPDATE: Final = "AdvancedRollingUpdate"
OTA: Final = "OTA"
# OpenYurt v1.1 to v1.6 called AdvancedRollingUpdate "auto"; still accepted, with a Normal event.
LEGACY_AUTO: Final = "auto"

# max-unavailable when the annotation is unset, "0" or "0%" (OpenYurt's default).
DEFAULT_MAX_UNAVAILABLE: Final = "10%"

# The only `spec.updateStrategy.type` under which the native controller leaves upgrades to us.
ON_DELETE: Final = "OnDelete"

# The kind of the objects this product rolls out, as owner references and events name it.
DAEMONSET_KIND: Final = "DaemonSet"

# Labels the native DaemonSet controller puts on every pod and ControllerRevision it creates.
CONTROLLER_REVISION_HASH_LABEL: Final = "controller-revision-hash"
POD_TEMPLATE_GENERATION_LABEL: Final = "pod-template-generation"
# The DaemonSet annotation that `pod-template-generation` is compared with.
TEMPLATE_GENERATION_ANNOTATION: Final = "deprecated.daemonset.template.generation"

# The condition type the kubelet sets on a pod and a Node; edgerollout reads it, never writes it.
READY_CONDITION: Final = "Ready"

# Pod condition types this product writes (design §5, §6).
POD_NEED_UPGRADE: Final = "PodNeedUpgrade"
POD_IMAGE_READY: Final = "PodImageReady"

# Reasons carried by the PodImageReady condition.
WAIT_PULL_IMAGE: Final = "WaitPullImage"
PULL_IMAGE_SUCCESS: Final = "PullImageSuccess"
PULL_IMAGE_FAIL: Final = "PullImageFail"

# A pre-pull Job's label names the pod it pulls for; its annotation, the revision (design §6).
PREPULL_LABEL: Final = "edgerollout.io/prepull-for"
REVISION_ANNOTATION: Final = "edgerollout.io/prepull-revision"
# Pre-pull before delete (design §13.5): an AdvancedRollingUpdate deletes a pod once its node has
# the new images; Warnings for a value that cannot be read, and for a deletion without its image.
PREPULL_ANNOTATION: Final = "edgerollout.io/prepull"
INVALID_PREPULL: Final = "InvalidPrepull"
PREPULL_FAILED: Final = "PrepullFailed"
# When and how many nodes pre-pull (design §13.5): a download window apart from the maintenance
# window, and the most nodes pulling at once.
PREPULL_WINDOW_ANNOTATION: Final = "edgerollout.io/prepull-window"
INVALID_PREPULL_WINDOW: Final = "InvalidPrepullWindow"
MAX_PULLING_ANNOTATION: Final = "edgerollout.io/max-pulling"
INVALID_MAX_PULLING: Final = "InvalidMaxPulling"
DEFAULT_MAX_PULLING: Final = "10%"

# Condition messages name the revision they speak of: "controllerrevision: <hash>" (OpenYurt v1.7).
REVISION_MESSAGE_PREFIX: Final = "controllerrevision: "

# Event reasons on the DaemonSet.
DEPRECATED_UPDATE_STRATEGY: Final = "DeprecatedUpdateStrategy"
UNKNOWN_UPDATE_STRATEGY: Final = "UnknownUpdateStrategy"
UPDATE_STRATEGY_NOT_ON_DELETE: Final = "UpdateStrategyNotOnDelete"
INVALID_MAX_UNAVAILABLE: Final = "InvalidMaxUnavailable"
# A deletion reuses the reason Kubernetes' own controllers and OpenYurt's daemonPodUpdater give
# it, so existing filters on `reason=SuccessfulDelete` / `reason=FailedDelete` keep working; the
# reporting component tells edgerollout's events apart from the native controller's.
SUCCESSFUL_DELETE: Final = "SuccessfulDelete"
# A deletion of an OTA pod marked PodNeedUpgrade for longer than its DaemonSet's OTA deadline.
OTA_DEADLINE_UPGRADE: Final = "OTADeadlineUpgrade"
FAILED_DELETE: Final = "FailedDelete"

# The agent (design §8.3). Its mutating routes answer 503 with this reason, and it reports a
# Warning Event with it, while it cannot prove that the API server confines it to its node.
NODE_SCOPING_NOT_ENFORCED: Final = "NodeScopingNotEnforced"
# A second upgrade of a pod while the first is still being carried out: 409.
UPGRADE_IN_PROGRESS: Final = "UpgradeInProgress"
# The admission policy that confines the agent to its node and its status patch to PodImageReady
# and UpgradeHeld.
AGENT_OWN_NODE_POLICY: Final = "edgerollout-agent-own-node"
# The label a dry-run status patch tries to add to prove that policy is in force; never written.
SCOPING_PROBE_LABEL: Final = "edgerollout.io/scoping-probe"

# The taints the node lifecycle controller puts on a node whose Ready condition is False or
# Unknown (with effect NoSchedule, and NoExecute for eviction).
NOT_READY_TAINT: Final = "node.kubernetes.io/not-ready"
UNREACHABLE_TAINT: Final = "node.kubernetes.io/unreachable"

# The condition the controller keeps on each opted-in DaemonSet: where its rollout stands, its
# reason the rollout's phase (design §9.2).
ROLLOUT_CONDITION: Final = "edgerollout.io/Progressing"

# Staged rollouts (design §12): DaemonSet annotations that hold nodes back.
PAUSED_ANNOTATION: Final = "edgerollout.io/paused"
PARTITION_ANNOTATION: Final = "edgerollout.io/partition"
NODE_SELECTOR_ANNOTATION: Final = "edgerollout.io/node-selector"
WAVES_ANNOTATION: Final = "edgerollout.io/waves"
# Slow start (design §12.8): cumulative batches over the rollout's order, and the soak after each.
BATCHES_ANNOTATION: Final = "edgerollout.io/batches"
BATCH_SOAK_ANNOTATION: Final = "edgerollout.io/batch-soak"
WAVE_LABEL_ANNOTATION: Final = "edgerollout.io/wave-label"
# The node label waves group nodes by unless `edgerollout.io/wave-label` names another: OpenYurt's
# NodePool label.
NODEPOOL_LABEL: Final = "apps.openyurt.io/nodepool"
# In `edgerollout.io/waves`, the wave of every node no other wave names.
EVERY_OTHER_WAVE: Final = "*"

# Event reasons of staged rollouts.
ROLLOUT_PAUSED: Final = "RolloutPaused"
ROLLOUT_RESUMED: Final = "RolloutResumed"
WAVE_STARTED: Final = "WaveStarted"
BATCH_STARTED: Final = "BatchStarted"
INVALID_PAUSED: Final = "InvalidPaused"
INVALID_PARTITION: Final = "InvalidPartition"
INVALID_NODE_SELECTOR: Final = "InvalidNodeSelector"
INVALID_WAVES: Final = "InvalidWaves"
INVALID_BATCHES: Final = "InvalidBatches"
# A rollout annotation's value longer than edgerollout reads (design §12.7).
ANNOTATION_TOO_LONG: Final = "AnnotationTooLong"
# Reasons of `PodNeedUpgrade=False` on an OTA pod that is outdated but held back (design §12).
HELD_BY_PAUSE: Final = "RolloutPaused"
HELD_BY_INVALID_SETTING: Final = "HeldByInvalidSetting"
HELD_BY_NODE_SELECTOR: Final = "HeldByNodeSelector"
HELD_BY_PARTITION: Final = "HeldByPartition"
HELD_BY_WAVE: Final = "HeldByWave"
HELD_BY_BATCH: Final = "HeldByBatch"
NOT_IN_WAVES: Final = "NotInWaves"
HELD_BY_WINDOW: Final = "MaintenanceWindowClosed"

# Edge safety (design §13): when the controller may delete (maintenance windows), when it upgrades an
# OTA pod itself (OTA deadlines), when a node's new pod counts as broken (progress deadlines).
MAINTENANCE_WINDOW_ANNOTATION: Final = "edgerollout.io/maintenance-window"
OTA_DEADLINE_ANNOTATION: Final = "edgerollout.io/ota-deadline"
PROGRESS_DEADLINE_ANNOTATION: Final = "edgerollout.io/progress-deadline-seconds"
# A Deployment's `progressDeadlineSeconds` defaults to 600 too, and the kubelet forgets a
# container's crashes (resets its back-off) after 10 minutes of running.
DEFAULT_PROGRESS_DEADLINE_SECONDS: Final = 600
# Event reasons of values that cannot be read.
INVALID_MAINTENANCE_WINDOW: Final = "InvalidMaintenanceWindow"
INVALID_OTA_DEADLINE: Final = "InvalidOTADeadline"
INVALID_PROGRESS_DEADLINE: Final = "InvalidProgressDeadline"

# Broken or offline (`health`): a Ready node whose pod of the newest revision fails is broken;
# a node that is not Ready is offline, never broken.
# Reasons of a broken node: a pod not available within the deadline (Deployment's own word for it),
# or one that restarted after its start-up; otherwise one of the waiting reasons below.
PROGRESS_DEADLINE_EXCEEDED: Final = "ProgressDeadlineExceeded"
RESTARTED: Final = "Restarted"
# The reasons a kubelet gives a waiting container (or init container) that will not start without
# a change to the pod or the image: the new revision is failing. Others (ContainerCreating,
# PodInitializing) are the normal steps of a start.
FAILING_WAITING_REASONS: Final = frozenset(
    {
        "CrashLoopBackOff",
        "ImagePullBackOff",
        "ErrImagePull",
        "CreateContainerConfigError",
        "CreateContainerError",
    }
)
# Pod conditions the kubelet sets and the health rule reads. Unlike `Ready`, which the node
# lifecycle controller turns False on every pod of a node it loses, `ContainersReady` is the
# kubelet's word alone; `PodReadyToStartContainers` turns True again when a node's reboot made the
# kubelet build the pod's sandbox anew (Kubernetes 1.29+; KEP-3085).
CONTAINERS_READY_CONDITION: Final = "ContainersReady"
POD_READY_TO_START_CONTAINERS: Final = "PodReadyToStartContainers"

# The failure budget (design §13.4): how many broken nodes a rollout tolerates; past it, the
# controller pauses the rollout and says so.
MAX_FAILED_ANNOTATION: Final = "edgerollout.io/max-failed"
ROLLOUT_FAILED: Final = "RolloutFailed"
INVALID_MAX_FAILED: Final = "InvalidMaxFailed"
# The failure budget judged on a sample (design §13.4): a percentage only once this many nodes
# tried the newest revision; before, a count of its own.
MIN_SAMPLE_ANNOTATION: Final = "edgerollout.io/min-sample"
MAX_FAILED_BEFORE_SAMPLE_ANNOTATION: Final = "edgerollout.io/max-failed-before-sample"
INVALID_MIN_SAMPLE: Final = "InvalidMinSample"
# Roll back on failure (design §13.4.1): past the failure budget, an opted-in DaemonSet's template
# goes back to the previous revision's instead of the rollout pausing; the controller records the
# rollback on the DaemonSet, and says it with a Warning.
ON_FAILURE_ANNOTATION: Final = "edgerollout.io/on-failure"
ON_FAILURE_PAUSE: Final = "pause"
ON_FAILURE_ROLLBACK: Final = "rollback"
ROLLED_BACK_ANNOTATION: Final = "edgerollout.io/rolled-back"
ROLLOUT_ROLLED_BACK: Final = "RolloutRolledBack"
# Warnings of a rollback asked for and not made: the namespace is not switched on at install
# (or the API server refused it), or there is nothing to roll back to; the rollout pauses instead.
ROLLBACK_NOT_ALLOWED: Final = "RollbackNotAllowed"
ROLLBACK_NOT_POSSIBLE: Final = "RollbackNotPossible"
INVALID_ON_FAILURE: Final = "InvalidOnFailure"
INVALID_ROLLED_BACK: Final = "InvalidRolledBack"
# The install's switch, one RoleBinding of this name in each namespace where it lets the controller
# roll back (the chart's controller.rollback.namespaces): what `status` and `plan` read to plan as
# the controller would.
ROLLBACK_ROLE_BINDING: Final = "edgerollout-controller-rollback"

# A node's hold on its upgrade (design §8.4, §13.6): its agent writes this pod condition, True
# while the node asks the controller not to replace the pod (reason NodeAsked, the message saying
# until when, since when and why), False once lifted (reason HoldLifted). The DaemonSet bounds
# every hold with `edgerollout.io/max-hold` (default 24h) from the moment it was asked.
UPGRADE_HELD: Final = "edgerollout.io/UpgradeHeld"
NODE_ASKED: Final = "NodeAsked"
HOLD_LIFTED: Final = "HoldLifted"
MAX_HOLD_ANNOTATION: Final = "edgerollout.io/max-hold"
DEFAULT_MAX_HOLD_HOURS: Final = 24
INVALID_MAX_HOLD: Final = "InvalidMaxHold"
# A Warning on the DaemonSet when a hold outlasts max-hold and is ignored from then on.
UPGRADE_HOLD_IGNORED: Final = "UpgradeHoldIgnored"
# The agent's refusals of a hold (design §8.4).
MALFORMED_HOLD: Final = "InvalidHold"
HOLD_TOO_LONG: Final = "HoldTooLong"
NOT_OPTED_IN: Final = "NotOptedIn"
HOLD_NOT_ADMITTED: Final = "HoldNotAdmitted"
