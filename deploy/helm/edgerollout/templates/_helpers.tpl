{{/*
An object's labels, the whole `labels:` key at the top level's indentation (metadata of a
manifest), or nothing: called with (dict "root" $ "name" NAME) for an object that carries
app.kubernetes.io/name NAME (and part-of edgerollout), (dict "root" $) for one that carries only
Helm's. Selectors and pod templates carry only app.kubernetes.io/name, so that an install with and
one without Helm's labels select the same pods.
*/}}
{{- define "edgerollout.labels" -}}
{{- $helm := .root.Values.helmLabels -}}
{{- if or .name $helm }}
  labels:
  {{- with .name }}
    app.kubernetes.io/name: {{ . }}
    app.kubernetes.io/part-of: edgerollout
  {{- end }}
  {{- if $helm }}
    {{- include "edgerollout.helmLabels" .root | nindent 4 }}
  {{- end }}
{{- end }}
{{- end }}

{{/* The labels Helm charts carry by convention (helmLabels: false leaves them out). */}}
{{- define "edgerollout.helmLabels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{- end }}

{{- define "edgerollout.namespace" -}}
{{ .Values.namespace.name }}
{{- end }}

{{/* The image and its pull policy, for a container spec at any indentation. */}}
{{- define "edgerollout.image" -}}
image: {{ printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) }}{{ with .Values.image.digest }}@{{ . }}{{ end }}
{{- with .Values.image.pullPolicy }}
imagePullPolicy: {{ . }}
{{- end }}
{{- end }}

{{- define "edgerollout.imagePullSecrets" -}}
{{- with .Values.imagePullSecrets }}
imagePullSecrets:
{{- range . }}
  - name: {{ . }}
{{- end }}
{{- end }}
{{- end }}

{{/*
What the controller does in the namespaces it watches: a ClusterRole's rules without
controller.watchNamespace, a Role's in that namespace with it.
*/}}
{{- define "edgerollout.controllerNamespacedRules" -}}
# The DaemonSet cache (list, then watch): which DaemonSets opted in, their template generation
# and the native controller's desiredNumberScheduled.
- apiGroups: ["apps"]
  resources: ["daemonsets"]
  verbs: ["list", "watch"]
# Auto-pause on failure (design §13.4): a merge patch of edgerollout.io/paused: "true" when more
# nodes are broken than edgerollout.io/max-failed allows. RBAC cannot say which field: the
# admission policy in controller-policy.yaml admits that one change and no other.
- apiGroups: ["apps"]
  resources: ["daemonsets"]
  verbs: ["patch"]
# The rollout condition (design §9.2): a strategic merge patch of one entry of an opted-in
# DaemonSet's status.conditions, edgerollout.io/Progressing. The admission policy in
# controller-policy.yaml admits that condition's change and no other.
- apiGroups: ["apps"]
  resources: ["daemonsets/status"]
  verbs: ["patch"]
# The ControllerRevision cache: the newest revision's hash decides which pods are current.
- apiGroups: ["apps"]
  resources: ["controllerrevisions"]
  verbs: ["list", "watch"]
# The Pod cache: each daemon pod's node, revision, readiness and conditions.
- apiGroups: [""]
  resources: ["pods"]
  verbs: ["list", "watch"]
# AdvancedRollingUpdate deletes outdated pods (with a UID precondition); the native DaemonSet
# controller recreates them.
- apiGroups: [""]
  resources: ["pods"]
  verbs: ["delete"]
# OTA and image pre-pull: a strategic merge patch of one pod condition (PodNeedUpgrade,
# PodImageReady); never a full status update.
- apiGroups: [""]
  resources: ["pods/status"]
  verbs: ["patch"]
# Image pre-pull: watch the pull Jobs, create one per requested pod, delete it once reported.
# RBAC cannot say which Jobs: the admission policy in controller-policy.yaml admits only pull
# Jobs of the exact shape the controller renders.
- apiGroups: ["batch"]
  resources: ["jobs"]
  verbs: ["list", "watch", "create", "delete"]
# Events on the DaemonSet for every deletion and every refusal to act.
- apiGroups: [""]
  resources: ["events"]
  verbs: ["create"]
{{- end }}

{{/*
Where the pods reach the API server when not through the `kubernetes` Service (apiServer.host):
in-cluster clients read these two variables. HOST_IP comes first so that "$(HOST_IP)" expands.
*/}}
{{- define "edgerollout.apiServerEnv" -}}
{{- with .Values.apiServer.host }}
- name: HOST_IP
  valueFrom:
    fieldRef:
      fieldPath: status.hostIP
- name: KUBERNETES_SERVICE_HOST
  value: {{ . | quote }}
- name: KUBERNETES_SERVICE_PORT
  value: {{ $.Values.apiServer.port | quote }}
{{- end }}
{{- end }}

{{/*
Fixed facts the templates share, each spelled once: no value sets them. The commands' defaults in
src/edgerollout/settings.py say the same, which tests/unit/deploy holds them to.
*/}}

{{/* The image's non-root user, and its group (USER in deploy/Dockerfile). */}}
{{- define "edgerollout.uid" -}}
65532
{{- end }}

{{/*
The agent's bearer token on each node (design §8.3): the folder, a hostPath of its own, and the
file in it that the install writes and node-side callers read (the agent's --token-file).
*/}}
{{- define "edgerollout.agentTokenDir" -}}
/var/lib/edgerollout
{{- end }}

{{- define "edgerollout.agentTokenFile" -}}
{{ include "edgerollout.agentTokenDir" . }}/agent-token
{{- end }}

{{/* Where the agent serves the OTA API: every node's loopback, on OpenYurt's port. */}}
{{- define "edgerollout.agentHost" -}}
127.0.0.1
{{- end }}

{{- define "edgerollout.agentPort" -}}
10267
{{- end }}

{{/* The controller's ports: metrics (Prometheus, the Service) and health (the kubelet's probes). */}}
{{- define "edgerollout.metricsPort" -}}
8080
{{- end }}

{{- define "edgerollout.healthPort" -}}
8081
{{- end }}

{{/*
A container's securityContext as the image's user: non-root, no escalation, no capability, a
read-only root filesystem (the agent's containers but the chown).
*/}}
{{- define "edgerollout.nonRootContainer" -}}
runAsNonRoot: true
runAsUser: {{ include "edgerollout.uid" . }}
runAsGroup: {{ include "edgerollout.uid" . }}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
capabilities:
  drop: ["ALL"]
{{- end }}

{{/*
The matchCondition of each of the controller's admission policies: the ServiceAccount
edgerollout-controller of any namespace.
*/}}
{{- define "edgerollout.isTheController" -}}
- name: is-the-controller
  expression: >-
    request.userInfo.username.matches('^system:serviceaccount:[a-z0-9.-]+:edgerollout-controller$')
{{- end }}

{{/*
The part of a pod a pods/status update by the controller or an agent must leave as it was: every
metadata field a status update could change, and every PodStatus field but `conditions` (those of
Kubernetes 1.36; tests/e2e/test_deploy.py compares the list with the API server's own schema, so
a field a newer API server adds fails that test until it is listed here). An allow-list: the
update may change the conditions its rule names and nothing else.
*/}}
{{- define "edgerollout.onlyConditionsChange" -}}
{{- include "edgerollout.metadataUnchanged" . }}
{{- range list "observedGeneration" "phase" "message" "reason" "nominatedNodeName" "hostIP" "hostIPs" "podIP" "podIPs" "startTime" "initContainerStatuses" "containerStatuses" "qosClass" "ephemeralContainerStatuses" "resize" "resourceClaimStatuses" "extendedResourceClaimStatus" "allocatedResources" "resources" "nodeAllocatableResourceClaimStatuses" }} &&
oldObject.status.?{{ . }} == object.status.?{{ . }}
{{- end }}
{{- end }}

{{/*
The part of a DaemonSet the controller's daemonsets/status update must leave as it was: every
metadata field a status update could change, and every DaemonSetStatus field but `conditions`
(those of Kubernetes 1.36; tests/e2e/test_deploy.py compares the list with the API server's own
schema, as for the pods'). An allow-list, as `edgerollout.onlyConditionsChange` is for a pod.
*/}}
{{- define "edgerollout.onlyDaemonSetConditionsChange" -}}
{{- include "edgerollout.metadataUnchanged" . }}
{{- range list "collisionCount" "currentNumberScheduled" "desiredNumberScheduled" "numberAvailable" "numberMisscheduled" "numberReady" "numberUnavailable" "observedGeneration" "updatedNumberScheduled" }} &&
oldObject.status.?{{ . }} == object.status.?{{ . }}
{{- end }}
{{- end }}

{{/*
Every metadata field a status update could change, as it was (files/allow-lists.yaml's
ObjectMeta `compared`).
*/}}
{{- define "edgerollout.metadataUnchanged" -}}
oldObject.metadata.?labels.orValue({}) == object.metadata.?labels.orValue({}) &&
oldObject.metadata.?annotations.orValue({}) == object.metadata.?annotations.orValue({}) &&
oldObject.metadata.?finalizers.orValue([]) == object.metadata.?finalizers.orValue([]) &&
oldObject.metadata.?ownerReferences.orValue([]) == object.metadata.?ownerReferences.orValue([]) &&
oldObject.metadata.?generateName.orValue('') == object.metadata.?generateName.orValue('')
{{- end }}

{{/*
Every DaemonSetSpec field but the template, as it was (files/allow-lists.yaml's DaemonSetSpec
`compared`): the rollback policy's allow-list.
*/}}
{{- define "edgerollout.onlyTheTemplateChanges" -}}
{{- $fields := index (.Files.Get "files/allow-lists.yaml" | fromYaml) "DaemonSetSpec" -}}
{{- range $index, $field := $fields.compared }}
{{ if $index }}&& {{ end }}oldObject.spec.?{{ $field }} == object.spec.?{{ $field }}
{{- end }}
{{- end }}

{{/*
None of the fields `files/allow-lists.yaml` lists as absent for one API type, on the object
`of` (a CEL expression ending in an optional selection, e.g. `c.?securityContext`): the allow-list
of the pull-Job policy. Takes (dict "root" $ "type" "PodSpec" "of" "variables.pod").
*/}}
{{- define "edgerollout.noOtherFields" -}}
{{- $fields := index (.root.Files.Get "files/allow-lists.yaml" | fromYaml) .type -}}
{{- $of := .of -}}
{{- range $index, $field := $fields.absent }}
{{ if $index }}&& {{ end }}!{{ $of }}.?{{ $field }}.hasValue()
{{- end }}
{{- end }}

{{/*
The toolbox image of pull Jobs: the one the controller is told (--prepull-toolbox-image) and the
only one the pull-Job policy admits.
*/}}
{{- define "edgerollout.toolboxImage" -}}
{{- required "controller.prepull.toolboxImage must name an image" .Values.controller.prepull.toolboxImage -}}
{{- end }}

{{/*
controller.rollback.namespaces as a CEL list of strings (each a DNS label, by the schema).
*/}}
{{- define "edgerollout.rollbackNamespaces" -}}
{{- $quoted := list -}}
{{- range .Values.controller.rollback.namespaces -}}
{{- $quoted = append $quoted (printf "'%s'" .) -}}
{{- end -}}
[{{ join ", " $quoted }}]
{{- end }}
