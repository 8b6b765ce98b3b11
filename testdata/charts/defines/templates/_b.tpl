{{- define "d" -}}from-b{{- end -}}{{- define "onlyb" -}}b{{- end -}}
