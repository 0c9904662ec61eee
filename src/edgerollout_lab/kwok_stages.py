"""How KWOK plays the lab's kubelets: its configuration and the Stages that move nodes and pods along.

KWOK manages only nodes carrying the link label (`LINK_LABEL=up`). Cutting a node's link sets the
label to `down`: KWOK sees the node leave its watch and stops renewing its Lease and answering for its
pods, exactly as a kubelet behind a dead link — the node lifecycle controller then marks it Unknown,
its pods `Ready=False`, and a deleted pod stays Terminating because nobody confirms it. Restoring the
link puts `up` back and KWOK takes the node over again.

A `down` node is also one whose status KWOK must disregard (`disregardStatusWithLabelSelector`):
KWOK has a path that reads a node again by its name alone, without the label selector (after taking
over a node's Lease, when the node is missing from its cache), which would take a cut node over
again. That alone did not keep cut nodes quiet at 1,000 nodes, so the lab also refuses, at the API
server, every write KWOK makes for a cut node (`api.cut_links_policy`).

The Stages are the lab's own. Besides the usual node start-up, heartbeat, pod start, Job completion
and deletion, `pod-ready-again` brings a Running pod whose `Ready` condition the node lifecycle
controller set to False back to `Ready=True` once its node is managed again — what a kubelet does
after reconnecting, and what KWOK's stock stages leave out.

Three Stages fail the pods of the lab's marked images as a kubelet would, for tests of a broken
revision:
- `UNPULLABLE_IMAGE`: `pod-job-image-pull-fail` fails a Job pod of it (as a pull of a missing image
  does, once the Job gives up); `pod-image-pull-back-off` leaves any other pod of it Pending, its
  container waiting in `ImagePullBackOff` (`Back-off pulling image "..."`).
- `CRASHLOOP_IMAGE`: `pod-crash-loop` makes a pod of it that is not a Job's Running but never
  Ready: its container exited with 1 once (`restartCount: 1`, `lastState.terminated`) and waits in
  `CrashLoopBackOff` with the kubelet's message (`back-off 10s restarting failed container=...
  pod=...`), the pod `Ready` and `ContainersReady` False (`ContainersNotReady`). A Job's pod of it
  completes: a pre-pull Job only runs `true` in the image, which pulls fine.

A pod's other containers run as usual. The failure is written once and then stays: KWOK could
replay a restart every back-off, but a steady state keeps tests exact and a 1,000-node lab quiet.
On a real node neither image can be pulled at all (`.invalid` names no registry).

KWOK plays one of the Stages that match an object, at random when several do, so the pod Stages'
selectors never match the same pod (`tests/unit/lab/test_kwok_stages.py` checks which Stage takes
which pod).
"""

from __future__ import annotations

LINK_LABEL = "lab.edgerollout.io/link"
# An image the lab's nodes can never pull: a pre-pull Job of it fails; any other pod of it stays
# Pending in ImagePullBackOff.
UNPULLABLE_IMAGE = "lab.invalid/unpullable:1.0"
# An image whose container exits with 1 whenever it starts: a pod of it (not a Job's) is Running
# but never Ready, in CrashLoopBackOff. It pulls fine, so a pre-pull Job of it completes.
CRASHLOOP_IMAGE = "lab.invalid/crashloop:1.0"
# The nodes' Lease duration; KWOK renews each Lease every quarter of it, as the kubelet does.
NODE_LEASE_SECONDS = 8
# KWOK renews a Lease every quarter of its duration, in whole seconds.
MIN_NODE_LEASE_SECONDS = 4
# What a kubelet uses in a production cluster (and kube-controller-manager's grace period then).
PRODUCTION_NODE_LEASE_SECONDS = 40
# A fleet lab's (`lab up --fleet`): 10,000 nodes renewing 40 s Leases make 1,000 writes a second,
# more than this kind of machine serves beside a rollout; an hour's make 11. A cut node is then
# marked by the lab itself, as the node lifecycle controller would mark it (design §11.10).
FLEET_NODE_LEASE_SECONDS = 3600

# KWOK plays pod stages (start, delete, ...) with this many workers. With 16, KWOK was the
# slowest part of a 1,000-node rollout (a replacement's start and deletion each waited about
# 0.7-1.1 s for a worker, the more so the more pods were in flight); with 64 they take 0.3-0.6 s
# and the DaemonSet controller creating the replacements is the slowest step.
POD_PLAY_STAGE_PARALLELISM = 64

_KWOK_CONFIGURATION = """\
apiVersion: config.kwok.x-k8s.io/v1alpha1
kind: KwokConfiguration
options:
  manageAllNodes: false
  manageNodesWithLabelSelector: {link_label}=up
  disregardStatusWithLabelSelector: {link_label}=down
  nodeLeaseDurationSeconds: {lease_seconds}
  nodeLeaseParallelism: 16
  podPlayStageParallelism: {pod_parallelism}
  nodePlayStageParallelism: 16
  cidr: 10.0.0.1/16
"""


def node_monitor_grace_seconds(lease_seconds: int) -> int:
    """kube-controller-manager's grace period for nodes renewing Leases of this duration: five
    renewals (10 s for the lab's 8 s Leases, 50 s — the production default — for 40 s ones)."""
    return lease_seconds * 5 // 4


_NODE_STATUS = """\
      {{ $now := Now }}
      {{ $since := or .metadata.creationTimestamp $now }}
      conditions:
      {{ range NodeConditions }}
      - lastHeartbeatTime: {{ $now | Quote }}
        lastTransitionTime: {{ $since | Quote }}
        message: {{ .message | Quote }}
        reason: {{ .reason | Quote }}
        status: {{ .status | Quote }}
        type: {{ .type | Quote }}
      {{ end }}
      addresses:
      {{ with NodeIP }}
      - address: {{ . | Quote }}
        type: InternalIP
      {{ end }}
      {{ with NodeName }}
      - address: {{ . | Quote }}
        type: Hostname
      {{ end }}
"""

# A container of a pod that started, as a kubelet reports it (`.` is the container).
_RUNNING_CONTAINER = """\
      - image: {{ .image | Quote }}
        imageID: {{ printf "kwok://%s" .image | Quote }}
        name: {{ .name | Quote }}
        ready: true
        started: true
        restartCount: 0
        state:
          running:
            startedAt: {{ $now | Quote }}
"""

# Where a started pod lives: its node's IP and an IP of its own.
_POD_ADDRESSES = """\
      hostIP: {{ NodeIPWith .spec.nodeName | Quote }}
      podIP: {{ PodIPWith .spec.nodeName ( or .spec.hostNetwork false ) ( or .metadata.uid "" ) ( or .metadata.name "" ) ( or .metadata.namespace "" ) | Quote }}
"""

# The conditions of a pod whose sandbox is up but whose containers using the image `$failing`
# never get ready, worded as the kubelet words them.
_NOT_READY_CONDITIONS = """\
      {{ $now := Now }}
      {{ $unready := list }}
      {{ range .spec.containers }}{{ if eq .image $failing }}{{ $unready = append $unready .name }}{{ end }}{{ end }}
      {{ $notReady := printf "containers with unready status: %v" $unready }}
      conditions:
      - {type: PodReadyToStartContainers, status: "True", lastTransitionTime: {{ $now | Quote }}}
      - {type: Initialized, status: "True", lastTransitionTime: {{ $now | Quote }}}
      - {type: ContainersReady, status: "False", reason: ContainersNotReady, message: {{ $notReady | Quote }}, lastTransitionTime: {{ $now | Quote }}}
      - {type: Ready, status: "False", reason: ContainersNotReady, message: {{ $notReady | Quote }}, lastTransitionTime: {{ $now | Quote }}}
"""

# The images of a pod unless a Job owns it (none for a Job's pod): a Stage keyed on this with
# `In` and one keyed on it with `NotIn` never pick the same pod.
_NON_JOB_POD_IMAGES = 'select( any( .metadata.ownerReferences.[]?; .kind == "Job" ) | not ) | .spec.containers.[].image'

STAGES = f"""\
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: node-start
spec:
  resourceRef: {{apiGroup: v1, kind: Node}}
  selector:
    matchExpressions:
    - key: '.status.conditions.[] | select( .type == "Ready" ) | .status'
      operator: NotIn
      values: ['True']
  next:
    statusTemplate: |
{_NODE_STATUS}
      phase: Running
      nodeInfo:
        architecture: amd64
        operatingSystem: linux
        kubeletVersion: kwok
        containerRuntimeVersion: kwok
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: node-status-refresh
spec:
  resourceRef: {{apiGroup: v1, kind: Node}}
  selector:
    matchExpressions:
    - key: '.status.conditions.[] | select( .type == "Ready" ) | .status'
      operator: In
      values: ['True']
  delay:
    durationMilliseconds: 300000
    jitterDurationMilliseconds: 330000
  next:
    statusTemplate: |
{_NODE_STATUS}
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: pod-start
spec:
  resourceRef: {{apiGroup: v1, kind: Pod}}
  selector:
    matchExpressions:
    - key: .metadata.deletionTimestamp
      operator: DoesNotExist
    - key: .status.phase
      operator: In
      values: [Pending]
    - key: '.spec.containers.[].image'
      operator: NotIn
      values: ['{UNPULLABLE_IMAGE}']
    - key: '{_NON_JOB_POD_IMAGES}'
      operator: NotIn
      values: ['{CRASHLOOP_IMAGE}']
  next:
    statusTemplate: |
      {{{{ $now := Now }}}}
      conditions:
      - {{type: PodScheduled, status: "True", lastTransitionTime: {{{{ $now | Quote }}}}}}
      - {{type: Initialized, status: "True", lastTransitionTime: {{{{ $now | Quote }}}}}}
      - {{type: ContainersReady, status: "True", lastTransitionTime: {{{{ $now | Quote }}}}}}
      - {{type: Ready, status: "True", lastTransitionTime: {{{{ $now | Quote }}}}}}
      containerStatuses:
      {{{{ range .spec.containers }}}}
{_RUNNING_CONTAINER}      {{{{ end }}}}
{_POD_ADDRESSES}      phase: Running
      startTime: {{{{ $now | Quote }}}}
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: pod-ready-again
spec:
  resourceRef: {{apiGroup: v1, kind: Pod}}
  selector:
    matchExpressions:
    - key: .metadata.deletionTimestamp
      operator: DoesNotExist
    - key: .status.phase
      operator: In
      values: [Running]
    - key: '.status.conditions.[] | select( .type == "Ready" ) | .status'
      operator: NotIn
      values: ['True']
    - key: '.metadata.ownerReferences.[].kind'
      operator: NotIn
      values: [Job]
    - key: '.spec.containers.[].image'
      operator: NotIn
      values: ['{CRASHLOOP_IMAGE}']
  next:
    statusTemplate: |
      {{{{ $now := Now }}}}
      conditions:
      - {{type: ContainersReady, status: "True", lastTransitionTime: {{{{ $now | Quote }}}}}}
      - {{type: Ready, status: "True", lastTransitionTime: {{{{ $now | Quote }}}}}}
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: pod-job-complete
spec:
  resourceRef: {{apiGroup: v1, kind: Pod}}
  selector:
    matchExpressions:
    - key: .metadata.deletionTimestamp
      operator: DoesNotExist
    - key: .status.phase
      operator: In
      values: [Running]
    - key: '.metadata.ownerReferences.[].kind'
      operator: In
      values: [Job]
  next:
    statusTemplate: |
      {{{{ $now := Now }}}}
      conditions:
      - {{type: ContainersReady, status: "False", reason: PodCompleted, lastTransitionTime: {{{{ $now | Quote }}}}}}
      - {{type: Ready, status: "False", reason: PodCompleted, lastTransitionTime: {{{{ $now | Quote }}}}}}
      containerStatuses:
      {{{{ range .spec.containers }}}}
      - image: {{{{ .image | Quote }}}}
        imageID: {{{{ printf "kwok://%s" .image | Quote }}}}
        name: {{{{ .name | Quote }}}}
        ready: false
        started: false
        restartCount: 0
        state:
          terminated:
            exitCode: 0
            reason: Completed
            startedAt: {{{{ $now | Quote }}}}
            finishedAt: {{{{ $now | Quote }}}}
      {{{{ end }}}}
      phase: Succeeded
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: pod-job-image-pull-fail
spec:
  resourceRef: {{apiGroup: v1, kind: Pod}}
  selector:
    matchExpressions:
    - key: .metadata.deletionTimestamp
      operator: DoesNotExist
    - key: .status.phase
      operator: In
      values: [Pending]
    - key: '.spec.containers.[].image'
      operator: In
      values: ['{UNPULLABLE_IMAGE}']
    - key: '.metadata.ownerReferences.[].kind'
      operator: In
      values: [Job]
  next:
    statusTemplate: |
      {{{{ $now := Now }}}}
      conditions:
      - {{type: Ready, status: "False", reason: PodFailed, lastTransitionTime: {{{{ $now | Quote }}}}}}
      containerStatuses:
      {{{{ range .spec.containers }}}}
      - image: {{{{ .image | Quote }}}}
        name: {{{{ .name | Quote }}}}
        ready: false
        restartCount: 0
        state:
          waiting:
            reason: ErrImagePull
            message: {{{{ printf "the lab cannot pull %s" .image | Quote }}}}
      {{{{ end }}}}
      phase: Failed
      reason: ErrImagePull
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: pod-image-pull-back-off
spec:
  resourceRef: {{apiGroup: v1, kind: Pod}}
  selector:
    matchExpressions:
    - key: .metadata.deletionTimestamp
      operator: DoesNotExist
    - key: .status.phase
      operator: In
      values: [Pending]
    - key: '{_NON_JOB_POD_IMAGES}'
      operator: In
      values: ['{UNPULLABLE_IMAGE}']
    - key: .status.containerStatuses
      operator: DoesNotExist
  next:
    statusTemplate: |
      {{{{ $failing := "{UNPULLABLE_IMAGE}" }}}}
{_NOT_READY_CONDITIONS}      containerStatuses:
      {{{{ range .spec.containers }}}}
      {{{{ if eq .image $failing }}}}
      - image: {{{{ .image | Quote }}}}
        imageID: ""
        name: {{{{ .name | Quote }}}}
        ready: false
        started: false
        restartCount: 0
        state:
          waiting:
            reason: ImagePullBackOff
            message: {{{{ printf "Back-off pulling image %q" .image | Quote }}}}
      {{{{ else }}}}
{_RUNNING_CONTAINER}      {{{{ end }}}}
      {{{{ end }}}}
{_POD_ADDRESSES}      phase: Pending
      startTime: {{{{ $now | Quote }}}}
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: pod-crash-loop
spec:
  resourceRef: {{apiGroup: v1, kind: Pod}}
  selector:
    matchExpressions:
    - key: .metadata.deletionTimestamp
      operator: DoesNotExist
    - key: .status.phase
      operator: In
      values: [Pending]
    - key: '{_NON_JOB_POD_IMAGES}'
      operator: In
      values: ['{CRASHLOOP_IMAGE}']
    - key: '.spec.containers.[].image'
      operator: NotIn
      values: ['{UNPULLABLE_IMAGE}']
  next:
    statusTemplate: |
      {{{{ $failing := "{CRASHLOOP_IMAGE}" }}}}
{_NOT_READY_CONDITIONS}      {{{{ $pod := printf "%s_%s(%s)" .metadata.name .metadata.namespace .metadata.uid }}}}
      containerStatuses:
      {{{{ range .spec.containers }}}}
      {{{{ if eq .image $failing }}}}
      - image: {{{{ .image | Quote }}}}
        imageID: {{{{ printf "kwok://%s" .image | Quote }}}}
        name: {{{{ .name | Quote }}}}
        ready: false
        started: false
        restartCount: 1
        lastState:
          terminated:
            exitCode: 1
            reason: Error
            startedAt: {{{{ $now | Quote }}}}
            finishedAt: {{{{ $now | Quote }}}}
        state:
          waiting:
            reason: CrashLoopBackOff
            message: {{{{ printf "back-off 10s restarting failed container=%s pod=%s" .name $pod | Quote }}}}
      {{{{ else }}}}
{_RUNNING_CONTAINER}      {{{{ end }}}}
      {{{{ end }}}}
{_POD_ADDRESSES}      phase: Running
      startTime: {{{{ $now | Quote }}}}
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: pod-delete
spec:
  resourceRef: {{apiGroup: v1, kind: Pod}}
  selector:
    matchExpressions:
    - key: .metadata.deletionTimestamp
      operator: Exists
  next:
    finalizers:
      empty: true
    delete: true
"""


def kwok_config(lease_seconds: int = NODE_LEASE_SECONDS) -> str:
    """The whole `--config` file KWOK is started with."""
    options = _KWOK_CONFIGURATION.format(
        link_label=LINK_LABEL,
        lease_seconds=lease_seconds,
        pod_parallelism=POD_PLAY_STAGE_PARALLELISM,
    )
    return options + "---\n" + STAGES
