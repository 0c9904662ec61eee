{{/*
The labels Helm charts carry by convention, on every object's metadata. Selectors and pod
templates carry only app.kubernetes.io/name, as in deploy/base, so that both install methods
select the same pods.
*/}}
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
image: {{ printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) }}
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
