{{- define "basics.name" -}}
{{ .Release.Name }}-{{ .Chart.Name | trunc 20 }}
{{- end -}}
{{- define "basics.labels" -}}
app.kubernetes.io/name: {{ include "basics.name" . }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- range $k, $v := .Values.labels }}
{{ $k }}: {{ $v | quote }}
{{- end }}
{{- end -}}
