{{- define "d" -}}from-sub{{- end -}}{{- define "deep" -}}sub{{- end -}}
