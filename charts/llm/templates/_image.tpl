{{/*
llm.image: an image reference as the chart writes it into a container:
with global.imageRegistry set, the registry is replaced by that one and
the repository path kept (Docker Hub's images, docker.io/ written or not,
get their library/ prefix when they have no namespace, as a mirror holds
them), so a registry mirror serves every image the chart renders. An
image whose registry host global.imageRegistryKeep lists (docker.io for
Docker Hub's, index.docker.io being the same), or that is already in
global.imageRegistry, stays as it is. `llmrender images --mirror` pairs
each image with what this writes. Inputs (dict): root, ref.
*/}}
{{- define "llm.image" -}}
{{- $global := .root.Values.global | default dict -}}
{{- $registry := trimSuffix "/" ($global.imageRegistry | default "") -}}
{{- $ref := .ref | default "" -}}
{{- if and $registry $ref (not (hasPrefix (printf "%s/" $registry) $ref)) -}}
{{- $parts := splitn "/" 2 $ref -}}
{{- $host := "docker.io" -}}
{{- $path := $ref -}}
{{- if and (index $parts "_1") (or (contains "." $parts._0) (contains ":" $parts._0) (eq $parts._0 "localhost")) -}}
{{- $host = $parts._0 -}}
{{- $path = index $parts "_1" -}}
{{- end -}}
{{- if eq $host "index.docker.io" -}}
{{- $host = "docker.io" -}}
{{- end -}}
{{- if and (eq $host "docker.io") (not (contains "/" $path)) -}}
{{- $path = printf "library/%s" $path -}}
{{- end -}}
{{- $keep := false -}}
{{- range $global.imageRegistryKeep | default list -}}
{{- if or (eq . $host) (and (eq . "index.docker.io") (eq $host "docker.io")) -}}
{{- $keep = true -}}
{{- end -}}
{{- end -}}
{{- if not $keep -}}
{{- $ref = printf "%s/%s" $registry $path -}}
{{- end -}}
{{- end -}}
{{- $ref -}}
{{- end -}}
