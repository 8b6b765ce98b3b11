{{/* Name of every object: the release name, cut to 52 characters so that
suffixes and Job pod names stay within Kubernetes' 63-character limit. */}}
{{- define "llm.fullname" -}}
{{- .Release.Name | trunc 52 | trimSuffix "-" -}}
{{- end -}}

{{- define "llm.labels" -}}
app.kubernetes.io/name: llm
app.kubernetes.io/instance: {{ .Release.Name | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service | quote }}
llmrender.dev/model: {{ .Values.model.name | quote }}
llmrender.dev/accelerator: {{ .Values.accelerator.profile | quote }}
{{- end -}}

{{/* The selected catalog entries, as YAML (use with fromYaml). A selection
that is not in the catalog stops the render with the names that are. */}}
{{- define "llm.model" -}}
{{- $m := get .Values.catalog.models .Values.model.name -}}
{{- if not $m -}}
{{- fail (printf "model.name %q is not in catalog.models (known: %s)" .Values.model.name (keys .Values.catalog.models | sortAlpha | join ", ")) -}}
{{- end -}}
{{- toYaml $m -}}
{{- end -}}

{{- define "llm.accelerator" -}}
{{- $a := get .Values.catalog.accelerators .Values.accelerator.profile -}}
{{- if not $a -}}
{{- fail (printf "accelerator.profile %q is not in catalog.accelerators (known: %s)" .Values.accelerator.profile (keys .Values.catalog.accelerators | sortAlpha | join ", ")) -}}
{{- end -}}
{{- toYaml $a -}}
{{- end -}}

{{/* Devices one pod requests. */}}
{{- define "llm.devices" -}}
{{- $a := include "llm.accelerator" . | fromYaml -}}
{{- if gt (int .Values.accelerator.devices) 0 -}}{{ int .Values.accelerator.devices }}{{- else -}}{{ int $a.devicesPerNode }}{{- end -}}
{{- end -}}

{{- define "llm.claimName" -}}
{{- .Values.storage.claimName | default (printf "%s-data" (include "llm.fullname" .)) -}}
{{- end -}}

{{/* Storage size: the checkpoint size x 1.5 (room for a second format or
outputs), rounded up to whole GiB, at least 10Gi. */}}
{{- define "llm.storageSize" -}}
{{- if .Values.storage.size -}}
{{- .Values.storage.size -}}
{{- else -}}
{{- $m := include "llm.model" . | fromYaml -}}
{{- $gib := 1073741824 -}}
{{- $size := div (add (mul (int64 $m.checkpointBytes) 3) (sub (mul 2 $gib) 1)) (mul 2 $gib) -}}
{{- max $size 10 -}}Gi
{{- end -}}
{{- end -}}

{{- define "llm.modelDir" -}}
{{- printf "%s/models/%s" .Values.storage.mountPath .Values.model.name -}}
{{- end -}}
