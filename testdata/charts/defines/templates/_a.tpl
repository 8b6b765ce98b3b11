{{- define "d" -}}from-a{{- end -}}
