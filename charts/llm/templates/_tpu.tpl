{{/*
llm.tpu.env: what each host's process of a Cloud TPU slice reads to find
the others, as GKE's TPU webhook sets it for the pods of an Indexed Job
(and xpk across slices), as a YAML list (empty on one host):
  TPU_WORKER_ID          the pod's completion index in its slice's Job
  TPU_WORKER_HOSTNAMES   the DNS names JobSet gives the slice's pods
                         (<jobset>-<job>-<slice>-<host>.<jobset>), in index
                         order; JAX's GKE cluster detection and PyTorch/XLA
                         read both
and across slices (multislice over the data center network), the variables
JAX and libtpu read to join the slices:
  MEGASCALE_NUM_SLICES           the slices
  MEGASCALE_SLICE_ID             the slice's Job index in the replicated job
  MEGASCALE_COORDINATOR_ADDRESS  the first host of the first slice
Inputs (dict): ctx, job (the replicated job's name).
*/}}
{{- define "llm.tpu.env" -}}
{{- $c := .ctx -}}
{{- $hosts := int (get $c.tpu "hosts" | default 0) -}}
{{- $slices := int (get $c.tpu "slices" | default 1) -}}
{{- if or (gt $hosts 1) (gt $slices 1) -}}
{{- $slice := ternary "$(MEGASCALE_SLICE_ID)" "0" (gt $slices 1) -}}
{{- $names := list -}}
{{- range $i := until $hosts }}{{ $names = append $names (printf "%s-%s-%s-%d.%s" $c.name $.job $slice $i $c.name) }}{{ end -}}
{{- if gt $slices 1 }}
- name: MEGASCALE_NUM_SLICES
  value: {{ $slices | quote }}
- name: MEGASCALE_SLICE_ID
  valueFrom:
    fieldRef:
      fieldPath: metadata.annotations['jobset.sigs.k8s.io/job-index']
- name: MEGASCALE_COORDINATOR_ADDRESS
  value: {{ printf "%s-%s-0-0.%s" $c.name .job $c.name | quote }}
{{- end }}
- name: TPU_WORKER_ID
  valueFrom:
    fieldRef:
      fieldPath: metadata.annotations['batch.kubernetes.io/job-completion-index']
- name: TPU_WORKER_HOSTNAMES
  value: {{ join "," $names | quote }}
{{- end -}}
{{- end -}}
