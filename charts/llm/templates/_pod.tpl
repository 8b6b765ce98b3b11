{{/*
llm.pod.template: the metadata and spec of every pod the chart renders; no
other template writes pod metadata or placement.

Two kinds of pods:
- accelerator pods (accelerator: true) request the profile's devices: the
  profile's node selector and tolerations, /dev/shm, and its fabric
  (ctx.fabric: annotations, init containers, volumes, host network, claims);
- helper pods (downloads, preprocessing, launchers, shells) request little.
  They tolerate the accelerator nodes' taints, so they can run on a cluster
  whose only nodes are accelerator nodes. When the claim can be mounted by
  one node only (ctx.singleNode; then the rules allow only a node-local
  class beside the run), a helper that mounts it next to the run (a shell,
  TensorBoard) also takes the accelerator node selector: whichever pod
  comes first, the volume is made on an accelerator node, and it pins the
  others there.

Inputs (dict):
  root, ctx
  component       app.kubernetes.io/component of the pod: its step ("run" for every pod of the run)
  role            optional llmrender.dev/role, for runs with several kinds of pods (launcher, worker, head)
  labels          optional, more pod labels (a dict)
  accelerator     true for pods that request the profile's devices
  colocate        true for long-running helpers that mount the claim beside the run (shell, TensorBoard)
  helper          reads or writes, for a helper pod of the chart's own (a download, the shell, TensorBoard): it
                  meets PodSecurity "restricted" (llm.helper.securityContext), with a writable /tmp; a writer
                  gets the claim through fsGroup
  nodeSelector    optional, for a helper pod that must run on certain nodes (a Ray head)
  tolerations     optional, instead of the accelerator nodes' (none for a Ray head)
  restartPolicy   optional
  subdomain       optional (Indexed Job DNS)
  initContainers  optional, a YAML list
  volumes         optional, more volumes, a YAML list
  annotations     optional, more pod annotations (a dict)
  containers      a YAML list
*/}}
{{- define "llm.pod.template" -}}
metadata:
  labels:
    {{- include "llm.labels" .root | nindent 4 }}
    app.kubernetes.io/component: {{ .component | quote }}
    {{- with include "llm.pod.labels" . | fromYaml }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  {{- $annotations := deepCopy (get . "annotations" | default dict) }}
  {{- if get . "accelerator" }}
  {{- $annotations = merge $annotations
      (include "llm.kueue.topology" (dict "root" .root "role" (get . "role")) | fromYaml) .ctx.fabric.annotations }}
  {{- end }}
  {{- with $annotations }}
  annotations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
spec:
  {{- include "llm.pod.spec" . | nindent 2 }}
{{- end -}}

{{/* llm.pod.labels: labels a pod adds to the release's (same inputs). */}}
{{- define "llm.pod.labels" -}}
{{- with get . "role" }}
llmrender.dev/role: {{ . | quote }}
{{- end }}
{{- with get . "labels" }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/*
llm.pod.spec: the spec part of llm.pod.template (same inputs), as YAML
lines: its settings, its placement, then its containers and volumes.
*/}}
{{- define "llm.pod.spec" -}}
{{- include "llm.pod.spec.settings" . -}}
{{- include "llm.pod.spec.placement" . -}}
{{- include "llm.pod.spec.containers" . -}}
{{- end -}}

{{/*
llm.pod.spec.settings: the pod's restart policy, subdomain, host network,
ServiceAccount, priority class, security context and image pull secrets.
Input: the inputs of llm.pod.template; output: YAML lines of the spec.
*/}}
{{- define "llm.pod.spec.settings" -}}
{{- $v := .root.Values -}}
{{- $c := .ctx -}}
{{- $fabric := ternary $c.fabric dict (get . "accelerator" | default false) -}}
{{- with get . "restartPolicy" }}
restartPolicy: {{ . }}
{{- end }}
{{- with get . "subdomain" }}
subdomain: {{ . }}
{{- end }}
{{- if or (get $fabric "hostNetwork") (and (get . "accelerator") (get $c.tpu "hostNetwork")) }}
hostNetwork: true
dnsPolicy: ClusterFirstWithHostNet
{{- end }}
{{- with $c.serviceAccount }}
serviceAccountName: {{ . }}
{{- end }}
{{- if get . "accelerator" }}
{{- with $v.workload.priorityClassName }}
priorityClassName: {{ . | quote }}
{{- end }}
{{- end }}
{{- with get . "helper" }}
securityContext:
  {{- if and (eq . "writes") (not $c.rootOwned) }}
  fsGroup: {{ int64 $v.security.helperGroup }}
  fsGroupChangePolicy: OnRootMismatch
  {{- end }}
  seccompProfile:
    type: RuntimeDefault
{{- end }}
{{- with $v.workload.imagePullSecrets }}
imagePullSecrets:
  {{- range . }}
  - name: {{ . | quote }}
  {{- end }}
{{- end }}
{{- end -}}

{{/*
llm.pod.spec.placement: where the pod runs: its node selector,
tolerations, and the affinity that keeps a step's accelerator pods in one
NVLink domain. Input: the inputs of llm.pod.template; output: YAML lines
of the spec.
*/}}
{{- define "llm.pod.spec.placement" -}}
{{- $c := .ctx -}}
{{- $selector := get . "nodeSelector" }}
{{- /* A claim this release creates is provisioned where its first pod
runs (zonal disks and zonal file shares alike): a helper that mounts it
with no placement of its own runs on the accelerator nodes, so whichever
pod comes first, the volume is made in their zone. */ -}}
{{- $makesClaim := and .root.Values.storage.create (not (hasKey . "nodeSelector")) }}
{{- if or (get . "accelerator") (and (get . "colocate") $c.singleNode) $makesClaim }}{{ $selector = $c.acc.nodeSelector }}{{ end }}
{{- with $selector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- $tolerations := $c.acc.tolerations }}
{{- if hasKey . "tolerations" }}{{ $tolerations = .tolerations }}{{ end }}
{{- with $tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- /* Rack-scale NVLink: the accelerator pods of a step across nodes share
one NVLink domain, or NCCL's traffic between domains leaves NVLink. Each
pod must land where the step's other pods are (the first lands anywhere);
a LeaderWorkerSet's groups each keep to a domain of their own. */ -}}
{{- $domain := get $c.acc "nvlinkDomain" }}
{{- if and (get . "accelerator") $domain (gt (int $c.nodes) 1) }}
affinity:
  podAffinity:
    requiredDuringSchedulingIgnoredDuringExecution:
      - labelSelector:
          matchLabels:
            app.kubernetes.io/instance: {{ .root.Release.Name | quote }}
            app.kubernetes.io/component: {{ .component | quote }}
        {{- if eq $c.run.kind "LeaderWorkerSet" }}
        matchLabelKeys:
          - leaderworkerset.sigs.k8s.io/group-index
        {{- end }}
        topologyKey: {{ $domain.label | quote }}
{{- end }}
{{- end -}}

{{/*
llm.pod.spec.containers: the pod's init containers (the fabric's first),
containers, volumes (the claim, then an accelerator pod's /dev/shm, the
fabric's and the workload's extra ones, a helper's /tmp, then the
caller's) and the fabric's resource claims. Input: the inputs of
llm.pod.template; output: YAML lines of the spec.
*/}}
{{- define "llm.pod.spec.containers" -}}
{{- $c := .ctx -}}
{{- $fabric := ternary $c.fabric dict (get . "accelerator" | default false) -}}
{{- $fabricInit := get $fabric "initContainers" }}
{{- if or $fabricInit (get . "initContainers") }}
initContainers:
  {{- with $fabricInit }}
  {{- toYaml . | nindent 2 }}
  {{- end }}
  {{- with get . "initContainers" }}
  {{- . | nindent 2 }}
  {{- end }}
{{- end }}
containers:
  {{- .containers | nindent 2 }}
volumes:
  - name: data
    persistentVolumeClaim:
      claimName: {{ $c.claimName }}
  {{- if get . "accelerator" }}
  - name: dshm
    emptyDir:
      medium: Memory
      sizeLimit: {{ $c.acc.shmSize }}
  {{- with $fabric.volumes }}
  {{- toYaml . | nindent 2 }}
  {{- end }}
  {{- with .root.Values.workload.extraVolumes }}
  {{- toYaml . | nindent 2 }}
  {{- end }}
  {{- end }}
  {{- if get . "helper" }}
  - name: tmp
    emptyDir: {}
  {{- end }}
  {{- with get . "volumes" | default "" | fromYamlArray }}
  {{- toYaml . | nindent 2 }}
  {{- end }}
{{- with get $fabric "claims" }}
resourceClaims:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{/*
llm.workload: wraps a pod spec as a bare Pod (pod mode) or a Job, the two
kinds a step can be in every mode.
Inputs (dict): root, ctx, name, order (llm.order as a dict), pod (the
inputs of llm.pod.template), job (extra Job spec fields, a dict).
*/}}
{{- define "llm.workload" -}}
{{- $root := .root -}}
{{- /* A bare accelerator Pod carries what a pod template's metadata would:
Kueue's topology requests and the fabric's annotations. */ -}}
{{- $annotations := dict -}}
{{- if and (eq .ctx.mode "pod") (get .pod "accelerator") -}}
{{- $annotations = merge (include "llm.kueue.topology" (dict "root" $root) | fromYaml) .ctx.fabric.annotations -}}
{{- end -}}
{{- $meta := include "llm.metadata"
    (dict "root" $root "name" .name "component" .pod.component "order" .order
    "extraLabels" (include "llm.pod.labels" .pod | fromYaml) "annotations" $annotations) -}}
{{- if eq .ctx.mode "pod" }}
apiVersion: v1
kind: Pod
metadata:
  {{- $meta | nindent 2 }}
spec:
  {{- include "llm.pod.spec" .pod | nindent 2 }}
{{- else }}
apiVersion: batch/v1
kind: Job
metadata:
  {{- $meta | nindent 2 }}
spec:
  {{- with get . "job" }}
  {{- toYaml . | nindent 2 }}
  {{- end }}
  ttlSecondsAfterFinished: {{ int $root.Values.workload.ttlSecondsAfterFinished }}
  template:
    {{- include "llm.pod.template" .pod | nindent 4 }}
{{- end }}
{{- end -}}

{{/*
llm.kueue.topology: the pod annotations of Kueue's topology-aware
scheduling for the accelerator pods. Slices apply to the pods of one
JobSet replicated job (jobset and trainjob modes). A server's
LeaderWorkerSet has a leader and workers, two pod sets; one group name
places them in the same domain.
Inputs (dict): root, role (the pod's llmrender.dev/role, optional).
*/}}
{{- define "llm.kueue.topology" -}}
{{- $v := .root.Values -}}
{{- $k := $v.kueue -}}
{{- with $k.requiredTopology }}
kueue.x-k8s.io/podset-required-topology: {{ . | quote }}
{{- end }}
{{- with $k.preferredTopology }}
kueue.x-k8s.io/podset-preferred-topology: {{ . | quote }}
{{- end }}
{{- if and (or $k.requiredTopology $k.preferredTopology) (eq $v.orchestration.mode "serve")
    (has (get . "role") (list "leader" "worker")) }}
kueue.x-k8s.io/podset-group-name: server
{{- end }}
{{- if and $k.sliceTopology (has $v.orchestration.mode (list "jobset" "trainjob")) }}
kueue.x-k8s.io/podset-slice-required-topology: {{ $k.sliceTopology | quote }}
kueue.x-k8s.io/podset-slice-size: {{ int $k.sliceSize | toString | quote }}
{{- end }}
{{- end -}}
