{{/*
llm.container.main: the container that runs the model, with the profile's
devices. Inputs (dict): root, ctx, name, command (YAML list, run through
the fabric's wrapper; none keeps the image's entrypoint) or script (a bash
script that does its own wrapping), image (optional, instead of
ctx.image), extraEnv (YAML list, optional), mounts (more volume mounts,
a YAML list, optional), extra (more container fields as YAML, optional).
*/}}
{{- define "llm.container.main" -}}
{{- $v := .root.Values -}}
- name: {{ .name }}
  image: {{ include "llm.image" (dict "root" .root "ref" (get . "image" | default .ctx.image)) | quote }}
  imagePullPolicy: {{ $v.workload.imagePullPolicy }}
  {{- if get . "script" }}
  command:
    - /bin/bash
    - -c
    - {{ .script | quote }}
  {{- else if get . "command" }}
  command:
    {{- include "llm.fabric.wrap" (dict "fabric" .ctx.fabric "command" (fromYamlArray .command)) | nindent 4 }}
  {{- end }}
  {{- with $v.workload.workingDir }}
  workingDir: {{ . | quote }}
  {{- end }}
  env:
    {{- include "llm.env" (dict "root" .root "ctx" .ctx "fabric" true "extraEnv" (get . "extraEnv")) | nindent 4 }}
  resources:
    {{- include "llm.resources" . | nindent 4 }}
  securityContext:
    {{- include "llm.securityContext" . | nindent 4 }}
  volumeMounts:
    - name: data
      mountPath: {{ $v.storage.mountPath | quote }}
    - name: dshm
      mountPath: /dev/shm
    {{- with .ctx.fabric.mounts }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
    {{- with $v.workload.extraVolumeMounts }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
    {{- with get . "mounts" | fromYamlArray }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  {{- with get . "extra" }}
  {{- . | nindent 2 }}
  {{- end }}
{{- end -}}

{{/*
llm.container.before: the init containers of a run pod: every step, in
order, when the steps run in this pod; otherwise the fabric test when
there is one (it waits for the step before it), or one container that
waits for the last step's marker. Empty without steps.
Inputs (dict): root, ctx.
*/}}
{{- define "llm.container.before" -}}
{{- $root := .root -}}
{{- $c := .ctx -}}
{{- $test := dict -}}
{{- range $c.steps }}{{ if eq .name "fabric-test" }}{{ $test = . }}{{ end }}{{ end -}}
{{- if $c.stepsInPod -}}
{{- range $c.steps }}
{{ include "llm.container.step" (dict "root" $root "ctx" $c "step" .) }}
{{- end -}}
{{- else if $test -}}
{{ include "llm.container.fabricTest" (dict "root" $root "ctx" $c "step" $test) }}
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
  image: {{ include "llm.image" (dict "root" .root "ref" $v.shell.image) | quote }}
  command:
    - sh
    - -c
    - {{ include "llm.sh.waitFor" .step | quote }}
  resources:
    requests:
      cpu: 10m
      memory: 16Mi
  securityContext:
    {{- include "llm.helper.securityContext" . | nindent 4 }}
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
  image: {{ include "llm.image" (dict "root" .root "ref" $work.image) | quote }}
  imagePullPolicy: {{ $v.workload.imagePullPolicy }}
  command:
    - sh
    - -c
    - {{ include "llm.sh.step" (dict "step" .step "wait" $wait "work" $work.script "markerDir" $c.markerDir) | quote }}
  workingDir: {{ $work.workingDir | quote }}
  {{- $env := $work.env | default list }}
  {{- if get . "helper" }}{{ $env = append $env (dict "name" "HOME" "value" "/tmp") }}{{ end }}
  {{- with $env }}
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
    {{- if get . "helper" }}
    {{- include "llm.helper.securityContext" (dict "root" .root "ctx" .ctx "writes" true) | nindent 4 }}
    {{- else }}
    allowPrivilegeEscalation: false
    {{- end }}
  volumeMounts:
    - name: data
      mountPath: {{ $v.storage.mountPath | quote }}
    {{- if get . "helper" }}
    {{- include "llm.helper.tmp" . | nindent 4 }}
    {{- end }}
{{- end -}}

{{/*
llm.helper.securityContext: of a helper container (a download, a wait, the
shell, TensorBoard): the PodSecurity "restricted" profile as
security.helperUser, with a read-only root file system. One that writes
(writes: true) to a claim only root may write (ctx.rootOwned) runs as root,
still without capabilities. Inputs (dict): root, ctx, writes (optional).
*/}}
{{- define "llm.helper.securityContext" -}}
{{- $s := .root.Values.security -}}
{{- if and (get . "writes") .ctx.rootOwned }}
runAsUser: 0
{{- else }}
runAsNonRoot: true
runAsUser: {{ int64 $s.helperUser }}
runAsGroup: {{ int64 $s.helperGroup }}
{{- end }}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
capabilities:
  drop: [ALL]
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{/* llm.helper.tmp: the writable /tmp of a helper pod's container (its
root file system is read-only), as a volume mount. */}}
{{- define "llm.helper.tmp" -}}
- name: tmp
  mountPath: /tmp
{{- end -}}

{{/* llm.resources: requests and limits of an accelerator pod. Inputs (dict): ctx. */}}
{{- define "llm.resources" -}}
{{- $c := .ctx -}}
{{- $devices := dict -}}
{{- if $c.acc.resource }}{{ $_ := set $devices $c.acc.resource (int $c.devices) }}{{ end -}}
{{- range $k, $n := get $c.acc "extraResources" | default dict }}{{ $_ := set $devices $k (int $n) }}{{ end -}}
{{- range $k, $n := $c.fabric.resources }}{{ $_ := set $devices $k $n }}{{ end -}}
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
{{- with $c.fabric.claims }}
claims:
  {{- range . }}
  - name: {{ .name }}
  {{- end }}
{{- end }}
{{- end -}}

{{/*
llm.securityContext: of the containers that run the model: no privilege
escalation, plus the capabilities the profile and its fabric need; the
fabric's host-network form runs privileged, as its recipes do.
Inputs (dict): ctx.
*/}}
{{- define "llm.securityContext" -}}
{{- $caps := concat (get .ctx.acc "capabilities" | default list) .ctx.fabric.capabilities | uniq -}}
{{- if .ctx.fabric.privileged }}
privileged: true
{{- else }}
allowPrivilegeEscalation: false
{{- with $caps }}
capabilities:
  add:
    {{- toYaml . | nindent 4 }}
{{- end }}
{{- end }}
{{- end -}}

{{/*
llm.env: the environment of the containers that run the model: what the
chart sets, the profile's, the fabric's (with fabric: true), then the
user's workload.env. A later entry replaces an earlier one of the same name
in its place, so a user can override any variable and none is listed twice.
Inputs (dict): root, ctx, fabric (optional), extraEnv (optional, a YAML list
added before the user's).
*/}}
{{- define "llm.env" -}}
{{- $v := .root.Values -}}
{{- $c := .ctx -}}
{{- $env := list (dict "name" "MODEL_ID" "value" (get $c.model "hfRepo" | default $v.model.name))
    (dict "name" "MODEL_DIR" "value" $c.modelDir) -}}
{{- with get $c.model "dataset" }}{{ $env = append $env (dict "name" "DATASET" "value" .) }}{{ end -}}
{{- if and (eq $v.workload.type "inference") (not (or $v.workload.command $v.workload.script)) (ne $c.mode "serve") -}}
{{- $env = concat $env
    (list (dict "name" "PROMPT" "value" $v.workload.prompt)
    (dict "name" "MAX_NEW_TOKENS" "value" (printf "%d" (int $v.workload.maxNewTokens)))) -}}
{{- end -}}
{{- with $v.output.uri }}{{ $env = append $env (dict "name" "OUTPUT_URI" "value" .) }}{{ end -}}
{{- $env = concat $env (include "llm.env.hub" . | fromYamlArray) -}}
{{- if $c.neuron -}}
{{- $env = append $env (dict "name" "NEURON_COMPILE_CACHE_URL" "value" (printf "%s/neuron_cache" $v.storage.mountPath)) -}}
{{- if get $c.acc "lncChoices" }}{{ $env = append $env (dict "name" "NEURON_LOGICAL_NC_CONFIG" "value" (printf "%d" (int $c.lnc))) }}{{ end -}}
{{- end -}}
{{- $env = concat $env (get $c.acc "env" | default list) -}}
{{- if get . "fabric" }}{{ $env = concat $env $c.fabric.env }}{{ end -}}
{{- with get . "extraEnv" }}{{ $env = concat $env (fromYamlArray .) }}{{ end -}}
{{- $env = concat $env $v.workload.env -}}
{{- $byName := dict -}}
{{- $names := list -}}
{{- range $env -}}
{{- if not (hasKey $byName .name) }}{{ $names = append $names .name }}{{ end -}}
{{- $_ := set $byName .name . -}}
{{- end -}}
{{- range $names }}
- {{ get $byName . | toJson }}
{{- end }}
{{- end -}}

{{/* llm.env.hub: how a container reaches the Hugging Face hub: not at all
(HF_HUB_OFFLINE, download.offline), its address (HF_ENDPOINT, for a mirror
inside the network) and HF_TOKEN from the token Secret, each when the values
say so. Inputs (dict): root. */}}
{{- define "llm.env.hub" -}}
{{- if .root.Values.download.offline }}
- name: HF_HUB_OFFLINE
  value: "1"
{{- end }}
{{- with .root.Values.download.endpoint }}
- name: HF_ENDPOINT
  value: {{ . | quote }}
{{- end }}
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
  image: {{ include "llm.image" (dict "root" .root "ref" .ctx.image) | quote }}
  imagePullPolicy: {{ $v.workload.imagePullPolicy }}
  command:
    - /bin/bash
    - -c
    - {{ .script | quote }}
  {{- with $v.workload.workingDir }}
  workingDir: {{ . | quote }}
  {{- end }}
  env:
    {{- include "llm.env" (dict "root" .root "ctx" .ctx "fabric" true "extraEnv" (get . "extraEnv")) | nindent 4 }}
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
  image: {{ include "llm.image" (dict "root" .root "ref" $v.shell.image) | quote }}
  command: ["sleep", "infinity"]
  env:
    - name: HOME
      value: /tmp
    {{- include "llm.env.hub" . | nindent 4 }}
  resources:
    requests:
      cpu: 100m
      memory: 128Mi
    limits:
      memory: 512Mi
  securityContext:
    {{- include "llm.helper.securityContext" (dict "root" .root "ctx" .ctx "writes" true) | nindent 4 }}
  volumeMounts:
    - name: data
      mountPath: {{ $v.storage.mountPath | quote }}
    {{- include "llm.helper.tmp" . | nindent 4 }}
{{- end -}}

{{/* llm.container.tensorboard: TensorBoard on the log directory, read-only. Inputs (dict): root. */}}
{{- define "llm.container.tensorboard" -}}
{{- $v := .root.Values -}}
- name: tensorboard
  image: {{ include "llm.image" (dict "root" .root "ref" $v.tensorboard.image) | quote }}
  command:
    - tensorboard
    - {{ printf "--logdir=%s/%s" $v.storage.mountPath $v.tensorboard.logDir | quote }}
    - --bind_all
    - {{ printf "--port=%d" (int $v.tensorboard.port) | quote }}
  ports:
    - name: http
      containerPort: {{ int $v.tensorboard.port }}
  env:
    - name: HOME
      value: /tmp
  resources:
    requests:
      cpu: "1"
      memory: 2Gi
    limits:
      memory: 4Gi
  securityContext:
    {{- include "llm.helper.securityContext" . | nindent 4 }}
  volumeMounts:
    - name: data
      mountPath: {{ $v.storage.mountPath | quote }}
      readOnly: true
    {{- include "llm.helper.tmp" . | nindent 4 }}
{{- end -}}
