{{/*
Everything the templates derive from the three selections, computed once per
template as a dict ("llm.ctx" | fromYaml). Numbers come back as floats, so
templates print them through int.
*/}}
{{- define "llm.ctx" -}}
{{- $v := .Values -}}
{{- $m := get $v.catalog.models $v.model.name -}}
{{- if not $m -}}
{{- fail (printf "model.name %q is not in catalog.models (known: %s)" $v.model.name (keys $v.catalog.models | sortAlpha | join ", ")) -}}
{{- end -}}
{{- $a := get $v.catalog.accelerators $v.accelerator.profile -}}
{{- if not $a -}}
{{- fail (printf "accelerator.profile %q is not in catalog.accelerators (known: %s)" $v.accelerator.profile (keys $v.catalog.accelerators | sortAlpha | join ", ")) -}}
{{- end -}}
{{- $devices := int $a.devicesPerNode -}}
{{- if gt (int $v.accelerator.devices) 0 -}}{{- $devices = int $v.accelerator.devices -}}{{- end -}}
{{- $nodes := int $v.workload.nodes -}}
{{- $name := .Release.Name | trunc 40 | trimSuffix "-" -}}
{{- $access := $v.storage.accessMode | default (ternary "ReadWriteOnce" "ReadWriteMany" (eq $nodes 1)) -}}
{{- $gib := 1073741824 -}}
{{- $fifty := mul 50 $gib -}}
{{- $sizeGi := mul 50 (div (add (mul (int64 $m.checkpointBytes) 2) (sub $fifty 1)) $fifty) -}}
{{- $cores := int ($a.coresPerDevice | default 1) -}}
model: {{ toJson $m }}
acc: {{ toJson $a }}
name: {{ $name | quote }}
devices: {{ $devices }}
nodes: {{ $nodes }}
worldSize: {{ mul $devices $nodes }}
neuronCores: {{ mul $devices $cores }}
neuron: {{ hasPrefix "aws.amazon.com/neuron" $a.resource }}
claimName: {{ $v.storage.claimName | default (printf "%s-data" $name) | quote }}
accessMode: {{ $access }}
storageSize: {{ $v.storage.size | default (printf "%dGi" $sizeGi) | quote }}
modelDir: {{ ternary (printf "%s/%s" $v.storage.mountPath ($m.metaName | default $v.model.name)) (printf "%s/models/%s" $v.storage.mountPath $v.model.name) (eq $v.model.format "meta") | quote }}
markerDir: {{ printf "%s/.llmrender" $v.storage.mountPath | quote }}
serviceAccount: {{ $v.serviceAccount.name | default (ternary (printf "%s-sa" $name) "" $v.serviceAccount.create) | quote }}
cpu: {{ $v.workload.cpu | default (printf "%d" (max 1 (div (mul (int $a.cpuPerNode) $devices) (int $a.devicesPerNode)))) | quote }}
memory: {{ $v.workload.memory | default (printf "%dGi" (max 1 (div (mul (int $a.memoryPerNodeGi) $devices) (int $a.devicesPerNode)))) | quote }}
{{- $dl := and $v.download.enabled (or (ne $v.download.source "huggingface") (ne ($m.hfRepo | default "") "")) -}}
{{- $pre := ternary "weights" "" $dl -}}
{{- $compileWaits := ternary "preprocess" $pre $v.steps.preprocess.enabled -}}
{{- $hasCompile := and $v.steps.precompile.enabled (has $v.orchestration.mode (list "rayjob" "mpijob")) }}
preprocessWaits: {{ $pre | quote }}
precompileWaits: {{ $compileWaits | quote }}
precompile: {{ $hasCompile }}
runWaits: {{ ternary "precompile" $compileWaits $hasCompile | quote }}
download: {{ and $v.download.enabled (or (ne $v.download.source "huggingface") (ne ($m.hfRepo | default "") "")) }}
{{- end -}}

{{- define "llm.labels" -}}
app.kubernetes.io/name: llm
app.kubernetes.io/instance: {{ .Release.Name | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service | quote }}
llmrender.dev/model: {{ .Values.model.name | quote }}
llmrender.dev/accelerator: {{ .Values.accelerator.profile | quote }}
llmrender.dev/mode: {{ .Values.orchestration.mode | quote }}
{{- with .Values.workload.labels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* Metadata of every object: name, labels, and annotations including the
ordering hints (dict: root, name, component, wave, dependsOn list,
extraLabels, annotations). */}}
{{- define "llm.metadata" -}}
{{- $root := .root -}}
name: {{ .name }}
labels:
  {{- include "llm.labels" $root | nindent 2 }}
  app.kubernetes.io/component: {{ .component | quote }}
  {{- with .extraLabels }}
  {{- toYaml . | nindent 2 }}
  {{- end }}
{{- $ann := dict -}}
{{- range $k, $val := $root.Values.workload.annotations }}{{ $_ := set $ann $k $val }}{{ end -}}
{{- range $k, $val := .annotations }}{{ $_ := set $ann $k $val }}{{ end -}}
{{- if hasKey . "wave" }}{{ $_ := set $ann "argocd.argoproj.io/sync-wave" (printf "%d" (int .wave)) }}{{ end -}}
{{- with .dependsOn }}{{ $_ := set $ann "config.kubernetes.io/depends-on" (join "," .) }}{{ end -}}
{{- with $root.Values.rules.waive }}{{ $_ := set $ann "llmrender.dev/waived-rules" (join "," .) }}{{ end -}}
{{- with $ann }}
annotations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{/* The depends-on entries of a step, as a JSON list: the claim it mounts
when the chart creates it (claim: true), and the object that writes the
marker it waits for (dict: root, ctx, waits, claim). */}}
{{- define "llm.stepDeps" -}}
{{- $root := .root -}}
{{- $c := .ctx -}}
{{- $mode := $root.Values.orchestration.mode -}}
{{- $deps := list -}}
{{- if and .claim $root.Values.storage.create }}
{{- $deps = append $deps (include "llm.ref" (dict "root" $root "kind" "PersistentVolumeClaim" "name" $c.claimName)) }}
{{- end }}
{{- $writer := dict "root" $root "group" "batch" "kind" "Job" "name" (printf "%s-%s" $c.name .waits) }}
{{- if eq .waits "weights" }}
{{- $_ := set $writer "name" (printf "%s-download" $c.name) }}
{{- if eq $mode "pod" }}{{ $_ := set $writer "group" "" }}{{ $_ := set $writer "kind" "Pod" }}{{ end }}
{{- else if eq $mode "rayjob" }}
{{- $_ := set $writer "group" "ray.io" }}{{ $_ := set $writer "kind" "RayJob" }}
{{- else if eq .waits "precompile" }}
{{- $_ := set $writer "group" "kubeflow.org" }}{{ $_ := set $writer "kind" "MPIJob" }}
{{- end }}
{{- if .waits }}{{ $deps = append $deps (include "llm.ref" $writer) }}{{ end }}
{{- toJson $deps }}
{{- end -}}

{{/* A depends-on reference (kustomize/kpt format) to an object of this release. */}}
{{- define "llm.ref" -}}
{{- $ns := .root.Release.Namespace -}}
{{- if .group -}}
{{ .group }}/namespaces/{{ $ns }}/{{ .kind }}/{{ .name }}
{{- else -}}
/namespaces/{{ $ns }}/{{ .kind }}/{{ .name }}
{{- end -}}
{{- end -}}

{{/* Who a pod runs as and pulls with; every pod of the release (dict: root, ctx). */}}
{{- define "llm.podIdentity" -}}
{{- with .ctx.serviceAccount }}
serviceAccountName: {{ . }}
{{- end }}
{{- with .root.Values.workload.imagePullSecrets }}
imagePullSecrets:
  {{- range . }}
  - name: {{ . | quote }}
  {{- end }}
{{- end }}
{{- end -}}

{{/* Pod-level settings shared by every accelerator pod (dict: root, ctx). */}}
{{- define "llm.podCommon" -}}
{{- $c := .ctx -}}
{{- include "llm.podIdentity" . }}
{{- with $c.acc.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $c.acc.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{/* Resources of an accelerator pod (dict: ctx). */}}
{{- define "llm.resources" -}}
{{- $c := .ctx -}}
requests:
  cpu: {{ $c.cpu | quote }}
  memory: {{ $c.memory | quote }}
  {{- if $c.acc.resource }}
  {{ $c.acc.resource }}: {{ int $c.devices }}
  {{- end }}
  {{- range $k, $n := $c.acc.extraResources }}
  {{ $k }}: {{ int $n }}
  {{- end }}
limits:
  memory: {{ $c.memory | quote }}
  {{- if $c.acc.resource }}
  {{ $c.acc.resource }}: {{ int $c.devices }}
  {{- end }}
  {{- range $k, $n := $c.acc.extraResources }}
  {{ $k }}: {{ int $n }}
  {{- end }}
{{- end -}}

{{/* Security context: baseline, plus the capabilities the profile needs. */}}
{{- define "llm.securityContext" -}}
allowPrivilegeEscalation: false
{{- with .ctx.acc.capabilities }}
capabilities:
  add:
    {{- toYaml . | nindent 4 }}
{{- end }}
{{- end -}}

{{/* Environment of workload containers (dict: root, ctx). */}}
{{- define "llm.env" -}}
{{- $v := .root.Values -}}
{{- $c := .ctx -}}
- name: MODEL_ID
  value: {{ $c.model.hfRepo | default $v.model.name | quote }}
- name: MODEL_DIR
  value: {{ $c.modelDir | quote }}
{{- with $c.model.dataset }}
- name: DATASET
  value: {{ . | quote }}
{{- end }}
{{- if and (eq $v.workload.type "inference") (not (or $v.workload.command $v.workload.script)) }}
- name: PROMPT
  value: {{ $v.workload.prompt | quote }}
- name: MAX_NEW_TOKENS
  value: {{ int $v.workload.maxNewTokens | quote }}
{{- end }}
{{- with $v.output.uri }}
- name: OUTPUT_URI
  value: {{ . | quote }}
{{- end }}
{{- if $v.download.tokenSecret.name }}
- name: HF_TOKEN
  valueFrom:
    secretKeyRef:
      name: {{ $v.download.tokenSecret.name | quote }}
      key: {{ $v.download.tokenSecret.key | quote }}
{{- end }}
{{- if $c.neuron }}
- name: NEURON_COMPILE_CACHE_URL
  value: {{ printf "%s/neuron_cache" $v.storage.mountPath | quote }}
{{- end }}
{{- with $c.acc.env }}
{{ toYaml . }}
{{- end }}
{{- with $v.workload.env }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* Volume mounts and volumes of workload pods (dict: root, ctx). */}}
{{- define "llm.volumeMounts" -}}
- name: data
  mountPath: {{ .root.Values.storage.mountPath | quote }}
- name: dshm
  mountPath: /dev/shm
{{- with .root.Values.workload.extraVolumeMounts }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{- define "llm.volumes" -}}
- name: data
  persistentVolumeClaim:
    claimName: {{ .ctx.claimName }}
- name: dshm
  emptyDir:
    medium: Memory
    sizeLimit: {{ .ctx.acc.shmSize }}
{{- with .root.Values.workload.extraVolumes }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* An init container that waits for a step's marker file, so a step never
starts before the one it depends on has finished (dict: root, ctx, marker). */}}
{{- define "llm.waitFor" -}}
- name: wait-for-{{ .marker }}
  image: {{ .root.Values.shell.image | quote }}
  command:
    - sh
    - -c
    - {{ printf "until [ -f %s/%s.done ]; do echo waiting for %s; sleep 10; done" .ctx.markerDir .marker .marker | quote }}
  resources:
    requests:
      cpu: 10m
      memory: 16Mi
  securityContext:
    allowPrivilegeEscalation: false
  volumeMounts:
    - name: data
      mountPath: {{ .root.Values.storage.mountPath | quote }}
{{- end -}}

{{/* The main command as a YAML list: the user's command, or torchrun around
the script (dict: root, ctx, rank and master for multi-node; pet: use the
PET_* variables the PyTorchJob operator injects). */}}
{{- define "llm.command" -}}
{{- $v := .root.Values -}}
{{- $c := .ctx -}}
{{- if $v.workload.command -}}
{{ toYaml $v.workload.command }}
{{- else if not $v.workload.script -}}
{{- /* No script: a small text-generation program, enough for inference. */ -}}
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
{{- /* One process per GPU, or per NeuronCore on Trainium. */ -}}
{{- $nproc := ternary (int $c.neuronCores) (int $c.devices) $c.neuron }}
{{- if eq (toString .pet) "elastic" }}
- --nnodes=$(PET_NNODES)
- --nproc_per_node={{ $nproc }}
- --rdzv_id=$(PET_RDZV_ID)
- --rdzv_backend=$(PET_RDZV_BACKEND)
- --rdzv_endpoint=$(PET_RDZV_ENDPOINT)
{{- else }}
- --nnodes={{ int $c.nodes }}
- --nproc_per_node={{ $nproc }}
{{- if gt (int $c.nodes) 1 }}
- --node_rank={{ .rank }}
- --master_addr={{ .master }}
- --master_port={{ .port | default "29500" }}
{{- end }}
{{- end }}
- {{ $v.workload.script | quote }}
{{- with $v.workload.args }}
{{ toYaml . }}
{{- end }}
{{- end -}}
{{- end -}}

{{/* The main container of a workload pod (dict: root, ctx, name, command
(YAML list), extraEnv (YAML list)). */}}
{{- define "llm.mainContainer" -}}
{{- $v := .root.Values -}}
- name: {{ .name }}
  image: {{ $v.workload.image | quote }}
  imagePullPolicy: {{ $v.workload.imagePullPolicy }}
  command:
    {{- .command | nindent 4 }}
  {{- with $v.workload.workingDir }}
  workingDir: {{ . | quote }}
  {{- end }}
  env:
    {{- include "llm.env" . | nindent 4 }}
    {{- with .extraEnv }}
    {{- . | nindent 4 }}
    {{- end }}
  resources:
    {{- include "llm.resources" . | nindent 4 }}
  securityContext:
    {{- include "llm.securityContext" . | nindent 4 }}
  volumeMounts:
    {{- include "llm.volumeMounts" . | nindent 4 }}
{{- end -}}

{{/* The pod spec of the download step: skip when the marker exists, fetch,
then write the marker (dict: root, ctx, fetch, marker). */}}
{{- define "llm.downloadPodSpec" -}}
{{- $v := .root.Values -}}
{{- $c := .ctx -}}
restartPolicy: {{ ternary "OnFailure" "Never" (ne $v.orchestration.mode "pod") }}
{{- include "llm.podIdentity" . }}
containers:
  - name: download
    image: {{ $v.download.image | quote }}
    command:
      - sh
      - -c
      - {{ printf "set -e; if [ -f %s ]; then echo weights already downloaded; exit 0; fi; mkdir -p %s; %s; touch %s" .marker $c.markerDir .fetch .marker | quote }}
    workingDir: {{ $v.storage.mountPath | quote }}
    env:
      {{- if eq $v.download.source "meta" }}
      - name: URL_FROM_EMAIL
        valueFrom:
          secretKeyRef:
            name: {{ $v.download.urlSecret.name | quote }}
            key: {{ $v.download.urlSecret.key | quote }}
      - name: MODELS_TO_DOWNLOAD
        value: {{ $c.model.metaDownload | default $v.model.name | quote }}
      {{- else }}
      - name: HF_HUB_ENABLE_HF_TRANSFER
        value: "0"
      {{- end }}
      {{- if $v.download.tokenSecret.name }}
      - name: HF_TOKEN
        valueFrom:
          secretKeyRef:
            name: {{ $v.download.tokenSecret.name | quote }}
            key: {{ $v.download.tokenSecret.key | quote }}
      {{- end }}
    resources:
      requests:
        cpu: "4"
        memory: 1Gi
      limits:
        memory: 4Gi
    securityContext:
      allowPrivilegeEscalation: false
    volumeMounts:
      - name: data
        mountPath: {{ $v.storage.mountPath | quote }}
volumes:
  - name: data
    persistentVolumeClaim:
      claimName: {{ $c.claimName }}
{{- end -}}

{{/* The pod spec of a run pod: wait for the previous step, then the main
container (dict: root, ctx, command, restartPolicy, subdomain, containerName). */}}
{{- define "llm.runPodSpec" -}}
{{- $c := .ctx -}}
restartPolicy: {{ .restartPolicy }}
{{- with .subdomain }}
subdomain: {{ . }}
{{- end }}
{{- include "llm.podCommon" . }}
{{- with $c.runWaits }}
initContainers:
  {{- include "llm.waitFor" (dict "root" $.root "ctx" $c "marker" .) | nindent 2 }}
{{- end }}
containers:
  {{- include "llm.mainContainer" (dict "root" .root "ctx" $c "name" (.containerName | default "main") "command" .command "extraEnv" .extraEnv) | nindent 2 }}
volumes:
  {{- include "llm.volumes" . | nindent 2 }}
{{- end -}}
