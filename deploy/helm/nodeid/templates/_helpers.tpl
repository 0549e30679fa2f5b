{{/* The name of the release's objects. */}}
{{- define "nodeid.fullname" -}}
{{- if contains "nodeid" .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-nodeid" .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* The labels of every object. */}}
{{- define "nodeid.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
app.kubernetes.io/name: nodeid
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{/* The labels that select the serve pods. */}}
{{- define "nodeid.selectorLabels" -}}
app.kubernetes.io/name: nodeid
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: serve
{{- end -}}

{{- define "nodeid.image" -}}
{{ required "image.repository: the nodeid image, built with the Dockerfile at the repository's root" .Values.image.repository }}:{{ required "image.tag: the nodeid image's tag" .Values.image.tag }}
{{- end -}}

{{/* Not root, no API token, nothing but the binary: the pods of serve and init. */}}
{{- define "nodeid.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: 65532
runAsGroup: 65532
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{- define "nodeid.containerSecurityContext" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
capabilities:
  drop:
    - ALL
{{- end -}}
