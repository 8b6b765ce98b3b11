{{/*
llm.container.main: the container that runs the model, with the profile's
devices. Inputs (dict): root, ctx, name, command (YAML list; none keeps the
image's entrypoint), extraEnv (YAML list, optional), extra (more container
fields as YAML, optional).
*/}}
{{- define "llm.container.main" -}}
{{- $v := .root.Values -}}
- name: {{ .name }}
  image: {{ $v.workload.image | quote }}
  imagePullPolicy: {{ $v.workload.imagePullPolicy }}
  {{- with get . "command" }}
  command:
    {{- . | nindent 4 }}
  {{- end }}
  {{- with $v.workload.workingDir }}
  workingDir: {{ . | quote }}
  {{- end }}
  env:
    {{- include "llm.env" . | nindent 4 }}
    {{- with get . "extraEnv" }}
    {{- . | nindent 4 }}
    {{- end }}
  resources:
    {{- include "llm.resources" . | nindent 4 }}
  securityContext:
    {{- include "llm.securityContext" . | nindent 4 }}
  volumeMounts:
    - name: data
      mountPath: {{ $v.storage.mountPath | quote }}
    - name: dshm
      mountPath: /dev/shm
    {{- with $v.workload.extraVolumeMounts }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  {{- with get . "extra" }}
  {{- . | nindent 2 }}
  {{- end }}
{{- end -}}

{{/*
llm.container.before: the init containers of a run pod: every step, in
order, when the steps run in this pod; otherwise one that waits for the
last step's marker. Empty without steps. Inputs (dict): root, ctx.
*/}}
{{- define "llm.container.before" -}}
{{- $root := .root -}}
{{- $c := .ctx -}}
{{- if $c.stepsInPod -}}
{{- range $c.steps }}
{{ include "llm.container.step" (dict "root" $root "ctx" $c "step" .) }}
{{- end -}}
{{- else if $c.steps -}}
{{ include "llm.container.wait" (dict "root" $root "ctx" $c "step" (last $c.steps)) }}
{{- end -}}
{{- end -}}

{{/*
llm.container.wait: waits until a step's marker exists; it requests almost
nothing. Inputs (dict): root, ctx, step (an entry of ctx.steps).
*/}}
{{- define "llm.container.wait" -}}
{{- $v := .root.Values -}}
- name: wait-for-{{ .step.name }}
  image: {{ $v.shell.image | quote }}
  command:
    - sh
    - -c
    - {{ include "llm.sh.waitFor" .step | quote }}
  resources:
    requests:
      cpu: 10m
      memory: 16Mi
  securityContext:
    allowPrivilegeEscalation: false
  volumeMounts:
    - name: data
      mountPath: {{ $v.storage.mountPath | quote }}
{{- end -}}

{{/*
llm.container.step: a container that runs one step (download, preprocess)
exactly once for its inputs: it does nothing when the step's marker exists,
waits for the marker of the step before it when that step runs elsewhere,
does the work, and leaves the marker last, so an interrupted step runs
again. Inputs (dict): root, ctx, step (an entry of ctx.steps).
*/}}
{{- define "llm.container.step" -}}
{{- $root := .root -}}
{{- $v := $root.Values -}}
{{- $c := .ctx -}}
{{- $work := include "llm.step.work" . | fromYaml -}}
{{- $wait := dict -}}
{{- if not $c.stepsInPod -}}
{{- range $i, $s := $c.steps }}{{ if and (gt $i 0) (eq $s.name $.step.name) }}{{ $wait = index $c.steps (sub $i 1) }}{{ end }}{{ end -}}
{{- end -}}
- name: {{ .step.name }}
  image: {{ $work.image | quote }}
  imagePullPolicy: {{ $v.workload.imagePullPolicy }}
  command:
    - sh
    - -c
    - {{ include "llm.sh.step" (dict "step" .step "wait" $wait "work" $work.script "markerDir" $c.markerDir) | quote }}
  workingDir: {{ $work.workingDir | quote }}
  {{- with $work.env }}
  env:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  resources:
    {{- range $part := list "requests" "limits" }}
    {{- with get $work.resources $part }}
    {{ $part }}:
      {{- toYaml . | nindent 6 }}
    {{- end }}
    {{- end }}
  securityContext:
    allowPrivilegeEscalation: false
  volumeMounts:
    - name: data
      mountPath: {{ $v.storage.mountPath | quote }}
{{- end -}}

{{/* llm.resources: requests and limits of an accelerator pod. Inputs (dict): ctx. */}}
{{- define "llm.resources" -}}
{{- $c := .ctx -}}
{{- $devices := dict -}}
{{- if $c.acc.resource }}{{ $_ := set $devices $c.acc.resource (int $c.devices) }}{{ end -}}
{{- range $k, $n := get $c.acc "extraResources" | default dict }}{{ $_ := set $devices $k (int $n) }}{{ end -}}
requests:
  cpu: {{ $c.cpu | quote }}
  memory: {{ $c.memory | quote }}
  {{- range $k, $n := $devices }}
  {{ $k }}: {{ $n }}
  {{- end }}
limits:
  memory: {{ $c.memory | quote }}
  {{- range $k, $n := $devices }}
  {{ $k }}: {{ $n }}
  {{- end }}
{{- end -}}

{{/* llm.securityContext: baseline, plus the capabilities the profile needs. Inputs (dict): ctx. */}}
{{- define "llm.securityContext" -}}
allowPrivilegeEscalation: false
{{- with get .ctx.acc "capabilities" }}
capabilities:
  add:
    {{- toYaml . | nindent 4 }}
{{- end }}
{{- end -}}

{{/* llm.env: the environment of the containers that run the model. Inputs (dict): root, ctx. */}}
{{- define "llm.env" -}}
{{- $v := .root.Values -}}
{{- $c := .ctx -}}
- name: MODEL_ID
  value: {{ get $c.model "hfRepo" | default $v.model.name | quote }}
- name: MODEL_DIR
  value: {{ $c.modelDir | quote }}
{{- with get $c.model "dataset" }}
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
{{- include "llm.env.token" . }}
{{- if $c.neuron }}
- name: NEURON_COMPILE_CACHE_URL
  value: {{ printf "%s/neuron_cache" $v.storage.mountPath | quote }}
{{- end }}
{{- with get $c.acc "env" }}
{{ toYaml . }}
{{- end }}
{{- with $v.workload.env }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* llm.env.token: HF_TOKEN from the token Secret, when one is named. Inputs (dict): root. */}}
{{- define "llm.env.token" -}}
{{- with .root.Values.download.tokenSecret }}
{{- if .name }}
- name: HF_TOKEN
  valueFrom:
    secretKeyRef:
      name: {{ .name | quote }}
      key: {{ .key | quote }}
{{- end }}
{{- end }}
{{- end -}}

{{/*
llm.container.launcher: a container that only coordinates (an MPI launcher):
the workload's image and environment, a bash script, little CPU.
Inputs (dict): root, ctx, script.
*/}}
{{- define "llm.container.launcher" -}}
{{- $v := .root.Values -}}
- name: launcher
  image: {{ $v.workload.image | quote }}
  imagePullPolicy: {{ $v.workload.imagePullPolicy }}
  command:
    - /bin/bash
    - -c
    - {{ .script | quote }}
  {{- with $v.workload.workingDir }}
  workingDir: {{ . | quote }}
  {{- end }}
  env:
    {{- include "llm.env" . | nindent 4 }}
  resources:
    requests:
      cpu: "1"
      memory: 2Gi
    limits:
      memory: 2Gi
  securityContext:
    allowPrivilegeEscalation: false
  volumeMounts:
    - name: data
      mountPath: {{ $v.storage.mountPath | quote }}
{{- end -}}

{{/* llm.container.shell: a shell that sleeps, with the volume and the token. Inputs (dict): root. */}}
{{- define "llm.container.shell" -}}
{{- $v := .root.Values -}}
- name: shell
  image: {{ $v.shell.image | quote }}
  command: ["sleep", "infinity"]
  {{- with include "llm.env.token" . }}
  env:
    {{- . | nindent 4 }}
  {{- end }}
  resources:
    requests:
      cpu: 100m
      memory: 128Mi
    limits:
      memory: 512Mi
  securityContext:
    allowPrivilegeEscalation: false
  volumeMounts:
    - name: data
      mountPath: {{ $v.storage.mountPath | quote }}
{{- end -}}

{{/* llm.container.tensorboard: TensorBoard on the log directory, read-only. Inputs (dict): root. */}}
{{- define "llm.container.tensorboard" -}}
{{- $v := .root.Values -}}
- name: tensorboard
  image: {{ $v.tensorboard.image | quote }}
  command:
    - tensorboard
    - {{ printf "--logdir=%s/%s" $v.storage.mountPath $v.tensorboard.logDir | quote }}
    - --bind_all
    - {{ printf "--port=%d" (int $v.tensorboard.port) | quote }}
  ports:
    - name: http
      containerPort: {{ int $v.tensorboard.port }}
  resources:
    requests:
      cpu: "1"
      memory: 2Gi
    limits:
      memory: 4Gi
  securityContext:
    allowPrivilegeEscalation: false
  volumeMounts:
    - name: data
      mountPath: {{ $v.storage.mountPath | quote }}
      readOnly: true
{{- end -}}
