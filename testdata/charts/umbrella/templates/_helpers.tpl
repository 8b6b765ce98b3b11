{{- define "umbrella.fullname" -}}
{{ .Release.Name }}-{{ .Chart.Name }}
{{- end }}
