{{/* llm.labels: the labels of every object and pod of the release (input: the chart root). */}}
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

{{/*
llm.metadata: the metadata of an object: name, labels and the annotations,
including the ordering hints for apply tools.
Inputs (dict): root, name, component, extraLabels, annotations, and where
the object sits in the apply order: either ctx and step (the inputs of
llm.order) or order (llm.order's result, for a caller that reads it too).
*/}}
{{- define "llm.metadata" -}}
{{- $root := .root -}}
{{- $order := get . "order" -}}
{{- with get . "step" }}{{ $order = include "llm.order" (dict "root" $root "ctx" $.ctx "step" .) | fromJson }}{{ end -}}
name: {{ .name }}
labels:
  {{- include "llm.labels" $root | nindent 2 }}
  app.kubernetes.io/component: {{ .component | quote }}
  {{- with get . "extraLabels" }}
  {{- toYaml . | nindent 2 }}
  {{- end }}
  {{- with get ($order | default dict) "labels" }}
  {{- toYaml . | nindent 2 }}
  {{- end }}
{{- $ann := dict -}}
{{- range $k, $val := $root.Values.workload.annotations }}{{ $_ := set $ann $k $val }}{{ end -}}
{{- range $k, $val := get . "annotations" | default dict }}{{ $_ := set $ann $k $val }}{{ end -}}
{{- with $order -}}
{{- $_ := set $ann "argocd.argoproj.io/sync-wave" (printf "%d" (int .wave)) -}}
{{- with .dependsOn }}{{ $_ := set $ann "config.kubernetes.io/depends-on" (join "," .) }}{{ end -}}
{{- range $k, $val := .annotations }}{{ $_ := set $ann $k $val }}{{ end -}}
{{- end -}}
{{- with $root.Values.rules.waive }}{{ $_ := set $ann "llmrender.dev/waived-rules" (join "," .) }}{{ end -}}
{{- with $ann }}
annotations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{/*
llm.ref: a depends-on reference (kpt and Config Sync format) to an object of
this release. Inputs (dict): root, group ("" for the core group), kind, name.
*/}}
{{- define "llm.ref" -}}
{{- printf "%s/namespaces/%s/%s/%s" (get . "group") .root.Release.Namespace .kind .name -}}
{{- end -}}

{{/*
llm.order: where an object sits in the apply order, and how it is
admitted, as JSON {"wave": n, "dependsOn": [...], "annotations": {...},
"labels": {...}}: Kueue's labels (see below).

Waves count the objects that run steps (download, preprocess, run), in
order, so under Argo CD a step starts only when the one before it is healthy
(a Job is healthy when it has completed). Objects the steps need (claim,
ServiceAccount, Services, queues) are in wave 0 with the first step: a claim
whose class binds on first consumer stays Pending until a pod uses it, so it
must never gate a wave of its own. depends-on names the previous step's
object and the ServiceAccount, never the claim, for the same reason. The
run's object also says which steps run inside it, before its own work
(llmrender.dev/steps-inside), for reviewers and `llmrender plan`.
Inputs (dict): root, ctx, and step: a step name, "run", "setup" (what every
step needs) or "beside" (what runs next to the run: shell, TensorBoard, a
server's Service); queued (optional): a workload beside the run, which Kueue
queues too.
*/}}
{{- define "llm.order" -}}
{{- $root := .root -}}
{{- $c := .ctx -}}
{{- /* The objects that run steps, in order; a step may run inside the run's. */ -}}
{{- $objects := list -}}
{{- $inside := list -}}
{{- range $c.steps -}}
{{- $name := (include "llm.stepObject" (dict "ctx" $c "step" .name) | fromJson).name -}}
{{- if or $c.stepsInPod (eq $name $c.name) }}{{ $inside = append $inside .name }}{{ else }}{{ $objects = append $objects .name }}{{ end -}}
{{- end -}}
{{- $objects = append $objects "run" -}}
{{- $step := ternary "run" .step (eq .step "beside") -}}
{{- $wave := 0 -}}
{{- $prev := "" -}}
{{- range $i, $s := $objects -}}
{{- if eq $s $step }}{{ $wave = $i }}{{ if gt $i 0 }}{{ $prev = index $objects (sub $i 1) }}{{ end }}{{ end -}}
{{- end -}}
{{- $deps := list -}}
{{- if and $root.Values.serviceAccount.create (ne .step "setup") -}}
{{- $deps = append $deps (include "llm.ref" (dict "root" $root "kind" "ServiceAccount" "name" $c.serviceAccount)) -}}
{{- end -}}
{{- if and $prev (ne .step "beside") -}}
{{- $ref := include "llm.stepObject" (dict "ctx" $c "step" $prev) | fromJson -}}
{{- $_ := set $ref "root" $root -}}
{{- $deps = append $deps (include "llm.ref" $ref) -}}
{{- end -}}
{{- $annotations := dict -}}
{{- if and (eq .step "run") $inside }}{{ $_ := set $annotations "llmrender.dev/steps-inside" (join "," $inside) }}{{ end -}}
{{- /* Kueue queues and admits the run's object, and every other workload
of the release (the steps' Jobs, the shell and TensorBoard): where Kueue
manages every Job (manageJobsWithoutQueueName), a Job without the queue
label is never admitted and the run behind it waits forever. The run alone
carries the workload priority. */ -}}
{{- $labels := dict -}}
{{- if or (not (has .step (list "setup" "beside"))) (get . "queued") -}}
{{- with $root.Values.kueue.queueName }}{{ $_ := set $labels "kueue.x-k8s.io/queue-name" . }}{{ end -}}
{{- end -}}
{{- if eq .step "run" -}}
{{- with $root.Values.kueue.priorityClass }}{{ $_ := set $labels "kueue.x-k8s.io/priority-class" . }}{{ end -}}
{{- end -}}
{{- toJson (dict "wave" $wave "dependsOn" $deps "annotations" $annotations "labels" $labels) -}}
{{- end -}}

{{/*
llm.stepObject: the object that runs a step, as JSON {"group", "kind",
"name"}. The run is named after the release and a step after the release
and the step. Steps are Jobs, or Pods in pod mode (no controllers at all),
except precompilation and the fabric test, which need the run's workers:
the MPI launcher or the Ray job precompiles before training, and every
accelerator pod of the run tests the fabric in an init container, in the
run's own object. In jobset mode every step is a replicated job of the
run's JobSet.
Inputs (dict): ctx, step.
*/}}
{{- define "llm.stepObject" -}}
{{- $c := .ctx -}}
{{- $kind := ternary "Pod" "Job" (eq $c.mode "pod") -}}
{{- $name := printf "%s-%s" $c.name .step -}}
{{- $group := ternary "" "batch" (eq $kind "Pod") -}}
{{- if or (has .step (list "run" "precompile" "fabric-test")) (eq $c.mode "jobset") -}}
{{- $kind = $c.run.kind -}}
{{- $group = $c.run.group -}}
{{- $name = $c.name -}}
{{- end -}}
{{- toJson (dict "group" $group "kind" $kind "name" $name) -}}
{{- end -}}
