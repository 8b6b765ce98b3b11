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

{{/*
llm.sh.waitFor: a shell line that waits for a step's marker (input: an
entry of ctx.steps). A shell that is PID 1 ignores TERM and INT unless it
traps them, and runs a trap only when its foreground command has ended:
the sleep runs in the background and the shell waits for it, so the wait
ends at once on either, with the status of a process they stopped.
*/}}
{{- define "llm.sh.waitFor" -}}
trap 'exit 143' TERM; trap 'exit 130' INT; until [ -f {{ include "llm.sh.quote" .marker }} ]; do echo {{ include "llm.sh.quote" (printf "waiting for %s (%s)" .name .marker) }}; sleep 10 & wait $!; done; trap - TERM INT
{{- end -}}

{{/*
llm.sh.run: the shell function llm_run, for scripts with lines left after
a program (a step's marker, the fabric guard's verdict), which therefore
cannot exec it. A shell that is PID 1 of its container ignores TERM and
INT unless it traps them, so the kubelet's TERM (preemption, eviction, a
rollout, kubectl delete) would never reach the program, which would be
killed after the grace period without a checkpoint or a drain.

llm_run starts the program in the background, in a process group of its
own (setsid, where the image has it: util-linux and busybox do), with the
script's standard
input (a background program's is /dev/null otherwise) and INT and QUIT
back to their defaults (sh leaves them ignored in a background program,
as POSIX has it; bash lets the program have them back); passes TERM and
INT on to its whole group (a program that is itself a shell running a
compound command, bash -c 'a && b', would die of TERM and leave its child
to be killed later without one), also a signal that came before it
started; and waits for it. A
trapped signal interrupts wait with a status above 128 while the program
runs on, so llm_run waits again after a signal; a status at or below 128
is the program's own, reported once. After TERM or INT it waits until
the program's whole group has ended (a container ends when its PID 1
does, and the kernel kills what is left without a signal), then leaves
the script with the program's status: nothing after the program (a
marker saying the step is done) runs. Otherwise it returns the program's
status. POSIX sh. Input: none.
*/}}
{{- define "llm.sh.run" -}}
# llm_run: runs a program, passing TERM and INT on to it, and returns its status
llm_run() {
  llm_pid= llm_sig= llm_woke=
  trap 'llm_sig=TERM; llm_pass TERM' TERM
  trap 'llm_sig=INT; llm_pass INT' INT
  { (trap - INT QUIT; if command -v setsid >/dev/null 2>&1; then exec setsid "$@" <&9 9<&-; fi; exec "$@" <&9 9<&-) & } 9<&0
  llm_pid=$!
  [ -z "$llm_sig" ] || llm_pass "$llm_sig"
  while :; do
    llm_woke=
    wait "$llm_pid" && llm_status=0 || llm_status=$?
    [ -n "$llm_woke" ] && [ "$llm_status" -gt 128 ] || break
  done
  while [ -n "$llm_sig" ] && kill -0 "-$llm_pid" 2>/dev/null; do sleep 1 || break; done
  trap - TERM INT
  [ -z "$llm_sig" ] || exit "$llm_status"
  return "$llm_status"
}
llm_pass() {
  llm_woke=1
  [ -z "$llm_pid" ] || kill "-$1" "-$llm_pid" 2>/dev/null || kill "-$1" "$llm_pid" 2>/dev/null || :
}
{{- end -}}

{{/*
llm.sh.step: the script of a step that runs exactly once for its inputs.
The work runs its program with llm_run (llm.sh.run): the marker is written
only when the program ended by itself, with 0.
Inputs (dict): step (an entry of ctx.steps), wait (the step before it when
that one runs elsewhere, or an empty dict), work (shell lines), markerDir,
nested (optional: true for the body of a shell function in a script that
runs more, which defines llm_run itself; the step returns instead of
exiting when it is already done).
*/}}
{{- define "llm.sh.step" -}}
{{- $nested := get . "nested" | default false -}}
set -eu
{{- if not $nested }}
{{ include "llm.sh.run" . }}
{{- end }}
marker={{ include "llm.sh.quote" .step.marker }}
if [ -f "$marker" ]; then echo {{ include "llm.sh.quote" (printf "%s: already done for these inputs" .step.name) }}; {{ ternary "return" "exit" $nested }} 0; fi
{{- with get .wait "marker" }}
{{ include "llm.sh.waitFor" $.wait }}
{{- end }}
{{ .work }}
mkdir -p {{ include "llm.sh.quote" .markerDir }}
{{- /* Every rank of a step writes the marker, on a claim they share: each
through a file of its own, renamed into place at once. */}}
llm_tmp=$(mktemp "$marker.XXXXXX")
printf '%s\n' {{ include "llm.sh.quote" (toJson .step.inputs) }} > "$llm_tmp"
mv "$llm_tmp" "$marker"
{{- end -}}

{{/*
llm.step.work: what a step container runs, as YAML {image, script,
workingDir, env, resources}. Inputs (dict): root, ctx, step.
*/}}
{{- define "llm.step.work" -}}
{{- $v := .root.Values -}}
{{- $c := .ctx -}}
{{- if eq .step.name "download" -}}
image: {{ include "llm.image" (dict "root" .root "ref" $c.downloadImage) | quote }}
workingDir: {{ $v.storage.mountPath | quote }}
resources: {{ toJson $v.download.resources }}
{{- if eq $v.download.source "meta" }}
{{- /* Meta's download.sh asks for the signed URL and the model list on
its standard input. */}}
script: {{ "llm_run bash /llama/download.sh <<EOF\n$URL_FROM_EMAIL\n$MODELS_TO_DOWNLOAD\nEOF" | quote }}
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
{{- /* Hugging Face's CLI is hf from huggingface_hub 0.34; 1.0 removed
huggingface-cli, which older images have alone. */}}
{{- /* The weights and what comes down beside them (adapters, a draft)
have markers of their own, named by what each fetches: a changed adapter
runs the step again (its marker names every input), and only what changed
comes down again. */}}
{{- $parts := list
    (dict
    "args" (concat (list .step.inputs.repo "--revision" .step.inputs.revision "--local-dir" .step.inputs.dir) $filter)) }}
{{- range get .step.inputs "beside" | default list }}
{{- $parts = append $parts
    (dict
    "args" (concat (list .repo "--revision" .revision "--local-dir" .dir)
    (ternary (list "--exclude" (get . "exclude")) list (hasKey . "exclude")))) }}
{{- end }}
{{- $lines := list "llm_hf=$(command -v hf || echo huggingface-cli)" }}
{{- range $parts }}
{{- $part := printf "%s/fetched-%s.done" $c.markerDir (toJson .args | sha256sum | trunc 12) }}
{{- $lines = append $lines
    (printf "if [ ! -f %s ]; then llm_run \"$llm_hf\" download %s; mkdir -p %s; : > %s; fi"
    (include "llm.sh.quote" $part) (include "llm.sh.args" .args) (include "llm.sh.quote" $c.markerDir)
    (include "llm.sh.quote" $part)) }}
{{- end }}
script: {{ join "\n" $lines | quote }}
env:
  - name: HF_HUB_ENABLE_HF_TRANSFER
    value: "0"
  {{- include "llm.env.hub" . | nindent 2 }}
{{- end }}
{{- else if eq .step.name "preprocess" -}}
{{- $p := $v.steps.preprocess }}
image: {{ include "llm.image" (dict "root" .root "ref" ($p.image | default $c.image)) | quote }}
workingDir: {{ $p.workingDir | default $v.storage.mountPath | quote }}
resources: {{ toJson $p.resources }}
script: {{ printf "llm_run %s" (include "llm.sh.args" $p.command) | quote }}
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
{{- else if $c.tpu -}}
{{- /* A TPU slice: one process a host, which finds the others itself
(JAX's jax.distributed.initialize(), PyTorch/XLA's PJRT) from the
TPU_WORKER_* variables. */}}
- python3
- {{ $v.workload.script | quote }}
{{- with $v.workload.args }}
{{ toYaml . }}
{{- end }}
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
