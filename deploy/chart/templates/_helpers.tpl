{{- define "joiner.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}{{ .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else -}}{{ printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" }}{{- end -}}
{{- end -}}

{{- define "joiner.serviceAccountName" -}}
{{- default (include "joiner.fullname" .) .Values.serviceAccount.name -}}
{{- end -}}

{{- define "joiner.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "joiner.labels" -}}
{{ include "joiner.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- with .Values.additionalLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* additionalAnnotations as an indented annotations: block (nothing when empty). */}}
{{- define "joiner.annotations" -}}
{{- with .Values.additionalAnnotations }}
  annotations:
    {{- toYaml . | nindent 4 }}
{{- end }}
{{- end -}}

{{/* Karpenter's FEATURE_GATES value from settings.featureGates. */}}
{{- define "joiner.featureGates" -}}
{{- $g := .Values.settings.featureGates -}}
{{- printf "NodeRepair=%v,ReservedCapacity=%v,SpotToSpotConsolidation=%v,NodeOverlay=%v,StaticCapacity=%v,CapacityBuffer=%v" $g.nodeRepair $g.reservedCapacity $g.spotToSpotConsolidation $g.nodeOverlay $g.staticCapacity $g.capacityBuffer -}}
{{- end -}}

{{- define "joiner.leaseNamespace" -}}
{{- default .Release.Namespace .Values.leaderElection.namespace -}}
{{- end -}}
