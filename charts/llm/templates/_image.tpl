{{/*
llm.image: an image reference as the chart writes it into a container:
with global.imageRegistry set, the registry is replaced by that one and
the repository path kept (docker.io's short names get their library/
prefix, as a mirror holds them), so a registry mirror serves every image
the chart renders. Inputs (dict): root, ref.
*/}}
{{- define "llm.image" -}}
{{- $registry := trimSuffix "/" ((.root.Values.global | default dict).imageRegistry | default "") -}}
{{- $ref := .ref | default "" -}}
{{- if and $registry $ref -}}
{{- $parts := splitn "/" 2 $ref -}}
{{- $first := $parts._0 -}}
{{- $rest := index $parts "_1" -}}
{{- if and $rest (or (contains "." $first) (contains ":" $first) (eq $first "localhost")) -}}
{{- $ref = printf "%s/%s" $registry $rest -}}
{{- else if $rest -}}
{{- $ref = printf "%s/%s" $registry $ref -}}
{{- else -}}
{{- $ref = printf "%s/library/%s" $registry $ref -}}
{{- end -}}
{{- end -}}
{{- $ref -}}
{{- end -}}
