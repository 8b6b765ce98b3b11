{{- define "tr.greeting" -}}hello{{- end -}}
