{{/*
Commands. Every value that reaches a shell line goes through llm.sh.quote
exactly once, so arguments with spaces, quotes, $ or newlines arrive as
written.
*/}}

{{/* llm.sh.quote: one shell word, single-quoted unless it is plain (input: a string). */}}
{{- define "llm.sh.quote" -}}
{{- $s := toString . -}}
{{- if regexMatch "^[A-Za-z0-9_@%+=:,./-]+$" $s -}}
{{ $s }}
{{- else -}}
'{{ replace "'" "'\\''" $s }}'
{{- end -}}
{{- end -}}

{{/* llm.sh.args: a list of words, each quoted, separated by spaces (input: a list). */}}
{{- define "llm.sh.args" -}}
{{- $out := list -}}
{{- range . }}{{ $out = append $out (include "llm.sh.quote" .) }}{{ end -}}
{{- join " " $out -}}
{{- end -}}

{{/* llm.sh.waitFor: a shell line that waits for a step's marker (input: an entry of ctx.steps). */}}
{{- define "llm.sh.waitFor" -}}
until [ -f {{ include "llm.sh.quote" .marker }} ]; do echo {{ include "llm.sh.quote" (printf "waiting for %s (%s)" .name .marker) }}; sleep 10; done
{{- end -}}

{{/*
llm.sh.step: the script of a step that runs exactly once for its inputs.
Inputs (dict): step (an entry of ctx.steps), wait (the step before it when
that one runs elsewhere, or an empty dict), work (shell lines), markerDir.
*/}}
{{- define "llm.sh.step" -}}
set -eu
marker={{ include "llm.sh.quote" .step.marker }}
if [ -f "$marker" ]; then echo {{ include "llm.sh.quote" (printf "%s: already done for these inputs" .step.name) }}; exit 0; fi
{{- with get .wait "marker" }}
{{ include "llm.sh.waitFor" $.wait }}
{{- end }}
{{ .work }}
mkdir -p {{ include "llm.sh.quote" .markerDir }}
printf '%s\n' {{ include "llm.sh.quote" (toJson .step.inputs) }} > "$marker.tmp"
mv "$marker.tmp" "$marker"
{{- end -}}

{{/*
llm.step.work: what a step container runs, as YAML {image, script,
workingDir, env, resources}. Inputs (dict): root, ctx, step.
*/}}
{{- define "llm.step.work" -}}
{{- $v := .root.Values -}}
{{- $c := .ctx -}}
{{- if eq .step.name "download" -}}
image: {{ $v.download.image | default $c.profileImage | quote }}
workingDir: {{ $v.storage.mountPath | quote }}
resources: {{ toJson $v.download.resources }}
{{- if eq $v.download.source "meta" }}
{{- /* Meta's download.sh asks for the signed URL and the model list. */}}
script: {{ printf "printf '%%s\\n%%s\\n' \"$URL_FROM_EMAIL\" \"$MODELS_TO_DOWNLOAD\" | bash /llama/download.sh" | quote }}
env:
  - name: URL_FROM_EMAIL
    valueFrom:
      secretKeyRef:
        name: {{ $v.download.urlSecret.name | quote }}
        key: {{ $v.download.urlSecret.key | quote }}
  - name: MODELS_TO_DOWNLOAD
    value: {{ .step.inputs.models | quote }}
{{- else }}
{{- /* Hugging Face repositories of Llama 3 also hold Meta's original
checkpoint under original/: take only the format the run reads. */}}
{{- $filter := ternary (list "--include" "original/*") (list "--exclude" "original/*") (eq $v.model.format "meta") }}
script: {{ printf "huggingface-cli download %s" (include "llm.sh.args" (concat (list .step.inputs.repo "--revision" .step.inputs.revision "--local-dir" .step.inputs.dir) $filter)) | quote }}
env:
  - name: HF_HUB_ENABLE_HF_TRANSFER
    value: "0"
  {{- include "llm.env.token" . | nindent 2 }}
{{- end }}
{{- else if eq .step.name "preprocess" -}}
{{- $p := $v.steps.preprocess }}
image: {{ $p.image | default $c.image | quote }}
workingDir: {{ $p.workingDir | default $v.storage.mountPath | quote }}
resources: {{ toJson $p.resources }}
script: {{ include "llm.sh.args" $p.command | quote }}
env:
  {{- include "llm.env" . | nindent 2 }}
{{- end -}}
{{- end -}}

{{/*
llm.command: the run's command as a YAML list: the user's command, torchrun
around the script, or, with neither, a small text-generation program.
Inputs (dict): root, ctx, and for several nodes rank, master and port (what
the mode provides), or pet: "elastic" to use the rendezvous variables the
PyTorchJob operator injects, or pet: "env" when the operator sets every
PET_* variable (Kubeflow Trainer).
*/}}
{{- define "llm.command" -}}
{{- $v := .root.Values -}}
{{- $c := .ctx -}}
{{- if $v.workload.command -}}
{{ toYaml $v.workload.command }}
{{- else if not $v.workload.script -}}
- python3
- -c
- |
  import os, torch
  from transformers import pipeline
  pipe = pipeline("text-generation", model=os.environ["MODEL_DIR"], torch_dtype=torch.bfloat16, device_map="auto")
  out = pipe(os.environ["PROMPT"], max_new_tokens=int(os.environ["MAX_NEW_TOKENS"]))
  print(out[0]["generated_text"])
{{- else -}}
- torchrun
{{- /* One process per GPU, or per NeuronCore on Trainium. */}}
{{- if eq (get . "pet") "env" }}
{{- /* Kubeflow Trainer sets PET_NNODES, PET_NPROC_PER_NODE, PET_NODE_RANK,
PET_MASTER_ADDR and PET_MASTER_PORT; torchrun reads them itself. */}}
{{- else if eq (get . "pet") "elastic" }}
- --nnodes=$(PET_NNODES)
- --nproc_per_node={{ int $c.procsPerNode }}
- --rdzv_id=$(PET_RDZV_ID)
- --rdzv_backend=$(PET_RDZV_BACKEND)
- --rdzv_endpoint=$(PET_RDZV_ENDPOINT)
{{- else }}
- --nnodes={{ int $c.nodes }}
- --nproc_per_node={{ int $c.procsPerNode }}
{{- if gt (int $c.nodes) 1 }}
- --node_rank={{ .rank }}
- --master_addr={{ .master }}
- --master_port={{ get . "port" | default "29500" }}
{{- end }}
{{- end }}
- {{ $v.workload.script | quote }}
{{- with $v.workload.args }}
{{ toYaml . }}
{{- end }}
{{- end -}}
{{- end -}}
