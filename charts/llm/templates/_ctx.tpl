{{/*
llm.ctx: everything the templates derive from the three selections, as YAML.
Every template reads it once ("llm.ctx" . | fromYaml); numbers come back as
floats, so templates print them through int.

The steps before the run (download, preprocess, fabric-test, precompile) are listed in
order under "steps", each with the marker file its completion leaves on the
shared volume. A marker's name carries a hash of the step's inputs, chained
through the steps before it, and its content is those inputs: a changed
model, revision, command or image runs the step again, and an unchanged one
is reused.

Where the steps run ("stepsInPod"):
- the claim can be mounted by one node only (ReadWriteOnce, or a node-local
  class): every step is an init container of the run pod, so nothing else
  ever needs the disk or the node;
- the claim is shared (ReadWriteMany): each step is an object of its own
  (a Job, a RayJob, or the MPI launcher), which apply tools can order, and
  the accelerator pods wait for the last marker.
*/}}
{{- define "llm.ctx" -}}
{{- /* Every template asks for it; it depends only on the values, so it is
computed once per render and kept on the root context, which all the
chart's templates share within one render (in Helm as in llmrender). */ -}}
{{- if not (hasKey . "llmCtx") -}}
{{- $_ := set . "llmCtx" (include "llm.ctx.compute" .) -}}
{{- end -}}
{{- get . "llmCtx" -}}
{{- end -}}

{{/*
llm.modes: reads the chart's table of modes (modes.yaml) once per render
and keeps its rows on the root context as llmModes, as llm.ctx keeps its
result. Input: the chart root.
*/}}
{{- define "llm.modes" -}}
{{- if not (hasKey . "llmModes") -}}
{{- $table := (.Files.Get "modes.yaml" | fromYaml).modes -}}
{{- $byName := dict -}}
{{- range $table }}{{ $_ := set $byName .name . }}{{ end -}}
{{- $_ := set . "llmModes" $table -}}
{{- $_ := set . "llmModeRows" $byName -}}
{{- end -}}
{{- end -}}

{{/*
llm.valueAt: sets .out.value to the value at .pointer (a JSON pointer, as
modes.yaml names values) in .values; unset where the path leads nowhere.
*/}}
{{- define "llm.valueAt" -}}
{{- $at := .values -}}
{{- range splitList "/" (trimPrefix "/" .pointer) -}}
{{- if kindIs "map" $at }}{{ $at = get $at . }}{{ else }}{{ $at = "" }}{{ end -}}
{{- end -}}
{{- $_ := set .out "value" $at -}}
{{- end -}}

{{/* llm.names: the names of a list of the modes' table's rows, joined by ", ". */}}
{{- define "llm.names" -}}
{{- $names := list -}}
{{- range . }}{{ $names = append $names .name }}{{ end -}}
{{- join ", " $names -}}
{{- end -}}

{{/*
llm.ctx.compute: llm.ctx's YAML, from the parts below, run in order on one
dict ($c): each reads what the parts before it set on $c and sets its own
results there. The order is that of the chart's checks (model, profile,
mode, TPU slice, lnc, fabric). Input: the chart root. Output: the YAML.
*/}}
{{- define "llm.ctx.compute" -}}
{{- $c := dict "root" . "v" .Values -}}
{{- include "llm.ctx.select" $c -}}
{{- include "llm.ctx.devices" $c -}}
{{- include "llm.ctx.claim" $c -}}
{{- include "llm.ctx.inputs" $c -}}
{{- include "llm.ctx.steps" $c -}}
{{- include "llm.ctx.yaml" $c -}}
{{- end -}}

{{/*
llm.ctx.select: the model's and the profile's catalog entries, the mode's
row of the table of modes, and the images. Input: $c with root and v.
Sets m, a, mode, row, image and downloadImage.
*/}}
{{- define "llm.ctx.select" -}}
{{- $v := .v -}}
{{- $m := get $v.catalog.models $v.model.name -}}
{{- if not $m -}}
{{- fail (printf "LR011: /model/name: model %q is not in catalog.models (known: %s)" $v.model.name
    (keys $v.catalog.models | sortAlpha | join ", ")) -}}
{{- end -}}
{{- $a := get $v.catalog.accelerators $v.accelerator.profile -}}
{{- if not $a -}}
{{- fail (printf "LR011: /accelerator/profile: accelerator profile %q is not in catalog.accelerators (known: %s)"
    $v.accelerator.profile (keys $v.catalog.accelerators | sortAlpha | join ", ")) -}}
{{- end -}}
{{- $mode := $v.orchestration.mode -}}
{{- /* The mode's row of the chart's table of modes (modes.yaml). */ -}}
{{- include "llm.modes" .root -}}
{{- $row := get .root.llmModeRows $mode -}}
{{- if not $row -}}
{{- fail (printf "orchestration.mode %q is not a mode of this chart (known: %s)" $mode (include "llm.names" .root.llmModes)) -}}
{{- end -}}
{{- /* The image of the main containers: the user's, or else the profile's
(the catalog's default when the profile names none). A download from
Hugging Face runs the catalog's download image, which has Hugging Face's
CLI and no CUDA: it runs on any node, and the user's image may lack the
CLI. */ -}}
{{- $profileImage := get $a "image" | default $v.catalog.defaultImage -}}
{{- $image := $v.workload.image | default $profileImage -}}
{{- $downloadImage := $v.download.image -}}
{{- if and (not $downloadImage) (eq $v.download.source "huggingface") }}{{ $downloadImage = $v.catalog.downloadImage | default "" }}{{ end -}}
{{- $downloadImage = $downloadImage | default $profileImage -}}
{{- $_ := set . "m" $m -}}
{{- $_ := set . "a" $a -}}
{{- $_ := set . "mode" $mode -}}
{{- $_ := set . "row" $row -}}
{{- $_ := set . "image" $image -}}
{{- $_ := set . "downloadImage" $downloadImage -}}
{{- end -}}

{{/*
llm.ctx.devices: the devices and nodes of the run, its TPU slice, and the
logical cores of a Neuron device. Input: $c with v and a (llm.ctx.select).
Sets devices, devicesFromProfile, nodes, tpu, lnc, cores and neuron, and
sets a again: with a TPU slice, its nodeSelector selects the topology.
*/}}
{{- define "llm.ctx.devices" -}}
{{- $v := .v }}{{ $a := .a -}}
{{- /* accelerator.devices: a count, 0 for every device of a node, or not
given: one device for a pod of one node, every device of each node for a
workload across nodes (a server or a run spans nodes for their devices). */ -}}
{{- $devices := int $a.devicesPerNode -}}
{{- $devicesFromProfile := true -}}
{{- if kindIs "invalid" $v.accelerator.devices -}}
{{- if le (int $v.workload.nodes) 1 }}{{ $devices = 1 }}{{ $devicesFromProfile = false }}{{ end -}}
{{- else if gt (int $v.accelerator.devices) 0 -}}
{{- $devices = int $v.accelerator.devices -}}
{{- $devicesFromProfile = false -}}
{{- end -}}
{{- $nodes := int $v.workload.nodes -}}
{{- /* A Cloud TPU slice: its shape selects the node pool (the topology
label), and its hosts (the shape's chips over a host's) are the run's
nodes, slice by slice, each with all of its host's chips. */ -}}
{{- $tpu := dict -}}
{{- with get $a "tpu" -}}
{{- $topology := $v.accelerator.topology | default .topology -}}
{{- if not (has $topology .topologies) -}}
{{- fail (printf "LR011: /accelerator/topology: %s is not a slice shape of %s (known: %s)" $topology
    $v.accelerator.profile (join ", " .topologies)) -}}
{{- end -}}
{{- $chips := 1 -}}
{{- range splitList "x" $topology }}{{ $chips = mul $chips (int .) }}{{ end -}}
{{- $hosts := max 1 (div $chips (int $a.devicesPerNode)) -}}
{{- $slices := int ($v.accelerator.slices | default 1) -}}
{{- if ne $nodes (int (mul $hosts $slices)) -}}
{{- fail (printf "LR014: /workload/nodes: a %s slice of %s is %d host(s) of %d chips, and the run spans %d slice(s): set workload.nodes to %d"
    $topology $v.accelerator.profile $hosts (int $a.devicesPerNode) $slices (mul $hosts $slices)) -}}
{{- end -}}
{{- if ne $devices (int $a.devicesPerNode) -}}
{{- fail (printf "LR014: /accelerator/devices: a TPU slice's pods take every chip of their host: set accelerator.devices to %d (or 0)"
    (int $a.devicesPerNode)) -}}
{{- end -}}
{{- $a = merge (dict "nodeSelector" (merge (dict "cloud.google.com/gke-tpu-topology" $topology) $a.nodeSelector))
    (deepCopy $a) -}}
{{- /* Across slices, a profile's hosts may run on the host network
(tpu.multisliceHostNetwork), as JobSet's v6e multislice example runs them. */ -}}
{{- $tpu = dict "topology" $topology "hosts" $hosts "slices" $slices
    "hostNetwork" (and (gt $slices 1) (get . "multisliceHostNetwork" | default false)) -}}
{{- end -}}
{{- /* Logical cores per device: Trainium2 groups its physical cores by LNC. */ -}}
{{- $lnc := int ($v.accelerator.lnc | default (get $a "defaultLnc") | default 1) -}}
{{- if and (get $a "lncChoices") (not (has (toString $lnc) (get $a "lncChoices" | toStrings))) -}}
{{- fail (printf "LR011: /accelerator/lnc: %d is not a logical NeuronCore config of %s (choices: %s)" $lnc
    $v.accelerator.profile (join ", " (get $a "lncChoices"))) -}}
{{- end -}}
{{- $_ := set . "a" $a -}}
{{- $_ := set . "devices" $devices -}}
{{- $_ := set . "devicesFromProfile" $devicesFromProfile -}}
{{- $_ := set . "nodes" $nodes -}}
{{- $_ := set . "tpu" $tpu -}}
{{- $_ := set . "lnc" $lnc -}}
{{- $_ := set . "cores" (div (int (get $a "coresPerDevice" | default 1)) $lnc) -}}
{{- $_ := set . "neuron" (hasPrefix "aws.amazon.com/neuron" $a.resource) -}}
{{- end -}}

{{/*
llm.ctx.claim: the claim (PersistentVolumeClaim) and the directories on it.
Input: $c with v, m, mode and nodes. Sets mount, markerDir, modelDir, pods,
access, nodeLocal, singleNode, rootOwned, sizeGi, and draft (the catalog
entry of a speculative draft model, or an empty dict).
*/}}
{{- define "llm.ctx.claim" -}}
{{- $v := .v }}{{ $m := .m }}{{ $mode := .mode }}{{ $nodes := .nodes -}}
{{- $mount := $v.storage.mountPath -}}
{{- $modelDir := printf "%s/models/%s" $mount $v.model.name -}}
{{- if eq $v.model.format "meta" }}{{ $modelDir = printf "%s/%s" $mount (get $m "metaName" | default $v.model.name) }}{{ end -}}
{{- /* Storage: which nodes can mount the claim. Every node of the run
mounts it, and in serve mode every node of every server. */ -}}
{{- $pods := $nodes -}}
{{- if eq $mode "serve" }}{{ $pods = mul $nodes (include "llm.serve.replicas" $v | int) }}{{ end -}}
{{- $access := $v.storage.accessMode | default (ternary "ReadWriteOnce" "ReadWriteMany" (eq (int $pods) 1)) -}}
{{- $class := get ($v.catalog.storageClasses | default dict) ($v.storage.storageClassName | default "") | default dict -}}
{{- $nodeLocal := or $v.storage.nodeLocal (get $class "nodeLocal" | default false) -}}
{{- $rootOwned := $v.storage.rootOwned -}}
{{- if kindIs "invalid" $rootOwned }}{{ $rootOwned = get $class "rootOwned" | default false }}{{ end -}}
{{- $gib := 1073741824 -}}
{{- $fifty := mul 50 $gib -}}
{{- /* The claim holds the weights twice and the training checkpoints
kept on it: weights and AdamW state, 14 bytes a parameter (1% of that
with LoRA). workload.ClaimNeed computes the same. */ -}}
{{- $kept := $v.storage.checkpointsKept -}}
{{- if eq (toString $kept) "" }}{{ $kept = ternary 2 0 (and (ne $v.workload.type "inference") (not $v.output.uri)) }}{{ end -}}
{{- $checkpoint := mul (int64 (get $m "params" | default 0)) 14 -}}
{{- if $v.workload.lora }}{{ $checkpoint = div $checkpoint 100 }}{{ end -}}
{{- /* A speculative draft (serving.speculative.draft) is a catalog entry
of its own, on the claim beside the weights. */ -}}
{{- $draft := dict -}}
{{- if and (eq $mode "serve") (eq $v.serving.speculative.method "draft") -}}
{{- $draft = get $v.catalog.models $v.serving.speculative.draft.model | default dict -}}
{{- end -}}
{{- $weightsBytes := add (mul (int64 $m.checkpointBytes) 2) (int64 (get $draft "checkpointBytes" | default 0)) -}}
{{- if and (eq $mode "serve") $v.serving.weights.from }}{{ $weightsBytes = 0 }}{{ end -}}
{{- $claimBytes := add $weightsBytes (mul (int64 $kept) $checkpoint) -}}
{{- $_ := set . "mount" $mount -}}
{{- $_ := set . "markerDir" (printf "%s/.llmrender" $mount) -}}
{{- $_ := set . "modelDir" $modelDir -}}
{{- $_ := set . "pods" $pods -}}
{{- $_ := set . "access" $access -}}
{{- $_ := set . "nodeLocal" $nodeLocal -}}
{{- $_ := set . "singleNode" (or $nodeLocal (has $access (list "ReadWriteOnce" "ReadWriteOncePod"))) -}}
{{- $_ := set . "rootOwned" $rootOwned -}}
{{- $_ := set . "sizeGi" (mul 50 (max 1 (div (add $claimBytes (sub $fifty 1)) $fifty))) -}}
{{- $_ := set . "draft" $draft -}}
{{- end -}}

{{/*
llm.ctx.inputs: the program the run starts, and the inputs of the steps
before the run, in order. Input: $c with v, m, a, mode, row, image, nodes,
devices, neuron, mount, modelDir and draft. Sets program, programCommand
and inputs (a list of dicts, each naming its step).
*/}}
{{- define "llm.ctx.inputs" -}}
{{- $v := .v }}{{ $m := .m }}{{ $a := .a }}{{ $mode := .mode }}{{ $row := .row }}{{ $image := .image }}{{ $nodes := .nodes -}}
{{- $devices := .devices }}{{ $neuron := .neuron }}{{ $mount := .mount }}{{ $modelDir := .modelDir }}{{ $draft := .draft -}}
{{- /* The program the run starts: the script, or the mode's default. */ -}}
{{- $program := $v.workload.script -}}
{{- with and (not $program) (get $row "program") -}}
{{- $at := dict -}}
{{- with get . "value" }}{{ include "llm.valueAt" (dict "values" $v "pointer" . "out" $at) }}{{ end -}}
{{- $program = get . "file" | default (get $at "value") | default "" -}}
{{- end -}}
{{- /* How a launcher that is not torchrun (mpirun, Ray's entrypoint) starts
it: a Python file by the interpreter, anything else as an executable. */ -}}
{{- $programCommand := ternary (list "python3" $program) (list $program) (hasSuffix ".py" $program) -}}
{{- $inputs := list -}}
{{- /* Servers that stream or mount the weights from a bucket need no
download (serving.weights.from). */ -}}
{{- $fromBucket := and (eq $mode "serve") (ne $v.serving.weights.from "") -}}
{{- $download := and $v.download.enabled (not $v.download.offline) (not $fromBucket)
    (or (ne $v.download.source "huggingface") (ne (get $m "hfRepo" | default "") "")) -}}
{{- if $download -}}
{{- $in := dict "step" "download" "source" $v.download.source "format" $v.model.format "dir" $modelDir -}}
{{- if eq $v.download.source "meta" -}}
{{- $_ := set $in "models" (get $m "metaDownload" | default $v.model.name) -}}
{{- else -}}
{{- $_ := set $in "repo" $m.hfRepo -}}
{{- $_ := set $in "revision" $v.model.revision -}}
{{- /* What a server reads beside its weights comes down with them, each
into a directory of its own: LoRA adapters, and a speculative draft. */ -}}
{{- if eq $mode "serve" -}}
{{- $beside := list -}}
{{- range $v.serving.lora.adapters -}}
{{- $beside = append $beside
    (dict "repo" .hfRepo "revision" (get . "revision" | default "main") "dir" (printf "%s/adapters/%s" $mount .name)) -}}
{{- end -}}
{{- with $draft -}}
{{- $beside = append $beside
    (dict "repo" .hfRepo "revision" ($v.serving.speculative.draft.revision | default "main")
    "dir" (printf "%s/models/%s" $mount $v.serving.speculative.draft.model) "exclude" "original/*") -}}
{{- end -}}
{{- with $beside }}{{ $_ := set $in "beside" . }}{{ end -}}
{{- end -}}
{{- end -}}
{{- $inputs = append $inputs $in -}}
{{- end -}}
{{- if $v.steps.preprocess.enabled -}}
{{- $inputs = append $inputs
    (dict "step" "preprocess" "command" $v.steps.preprocess.command "workingDir" $v.steps.preprocess.workingDir
    "image" ($v.steps.preprocess.image | default $image)) -}}
{{- end -}}
{{- if and $v.steps.fabricTest.enabled (gt $nodes 1) (not $neuron) -}}
{{- $min := int $v.steps.fabricTest.minBusGBps | default (div (mul 2 (int (get $a "tcpGbps" | default 100))) 8) -}}
{{- $inputs = append $inputs
    (dict "step" "fabric-test" "image" $image "nodes" $nodes "devices" $devices "profile" $v.accelerator.profile
    "fabric" $v.accelerator.fabric "minBusGBps" $min) -}}
{{- end -}}
{{- if and $v.steps.precompile.enabled (has "precompile" (get $row "steps" | default list)) -}}
{{- $inputs = append $inputs
    (dict "step" "precompile" "image" $image "program" $program "args" $v.workload.args "model" $v.model.name
    "nodes" $nodes "devices" $devices) -}}
{{- end -}}
{{- $_ := set . "program" $program -}}
{{- $_ := set . "programCommand" $programCommand -}}
{{- $_ := set . "inputs" $inputs -}}
{{- end -}}

{{/*
llm.ctx.steps: the steps before the run, each with its marker, and
whether they run in the run's pod. Input: $c with inputs (llm.ctx.inputs),
markerDir and singleNode. Sets steps and stepsInPod.
*/}}
{{- define "llm.ctx.steps" -}}
{{- $markerDir := .markerDir -}}
{{- /* Each step's marker names a hash of its inputs; every step after the
download counts the hash of the step before it ("after", "" for none) among
them, so a changed step runs the ones after it again. */ -}}
{{- $steps := list -}}
{{- $after := "" -}}
{{- range .inputs -}}
{{- if ne .step "download" }}{{ $_ := set . "after" $after }}{{ end -}}
{{- $hash := toJson . | sha256sum | trunc 12 -}}
{{- $steps = append $steps (dict "name" .step "marker" (printf "%s/%s-%s.done" $markerDir .step $hash) "inputs" .) -}}
{{- $after = $hash -}}
{{- end -}}
{{- $_ := set . "steps" $steps -}}
{{- $_ := set . "stepsInPod" (and .singleNode (gt (len $steps) 0)) -}}
{{- end -}}

{{/*
llm.ctx.yaml: the fabric and the object that runs the program, then
everything as llm.ctx's YAML. Input: $c, as the parts above leave it.
Output: the YAML.
*/}}
{{- define "llm.ctx.yaml" -}}
{{- $v := .v }}{{ $a := .a }}{{ $mode := .mode }}{{ $nodes := .nodes }}{{ $devices := .devices -}}
{{- $name := .root.Release.Name | trunc 40 | trimSuffix "-" -}}
{{- /* The fabric: the profile's, when asked for by name or when the
workload spans nodes (disaggregated servers do); none with tcp. */ -}}
{{- $native := get $a "fabric" | default "" -}}
{{- $fabric := "" -}}
{{- $want := $v.accelerator.fabric | default "auto" -}}
{{- if eq $want "auto" -}}
{{- /* Disaggregated servers move KV caches between nodes too. */ -}}
{{- if or (gt $nodes 1) (and (eq $mode "serve") $v.serving.disaggregation.enabled) }}{{ $fabric = $native }}{{ end -}}
{{- else if ne $want "tcp" -}}
{{- if ne $want $native -}}
{{- fail (printf "LR019: /accelerator/fabric: %s is not the fabric of %s (%s); use auto, tcp%s" $want
    $v.accelerator.profile (ternary "it has none" (printf "it has %s" $native) (eq $native ""))
    (ternary "" (printf " or %s" $native) (eq $native ""))) -}}
{{- end -}}
{{- $fabric = $want -}}
{{- end -}}
{{- /* The object that runs the program (a server across nodes is another kind). */ -}}
{{- $run := .row.run -}}
{{- if and (gt $nodes 1) (get $run "acrossNodes") }}{{ $run = $run.acrossNodes }}{{ end -}}
model: {{ toJson .m }}
acc: {{ toJson $a }}
mode: {{ $mode | quote }}
run: {{ toJson
    (dict "kind" $run.kind "group" (ternary (regexReplaceAll "/.*" $run.apiVersion "") "" (contains "/" $run.apiVersion))) }}
name: {{ $name | quote }}
devices: {{ $devices }}
devicesFromProfile: {{ .devicesFromProfile }}
nodes: {{ $nodes }}
pods: {{ .pods }}
worldSize: {{ mul $devices $nodes }}
neuronCores: {{ mul $devices .cores }}
procsPerNode: {{ ternary (mul $devices .cores) $devices .neuron }}
neuron: {{ .neuron }}
claimName: {{ $v.storage.claimName | default (printf "%s-data" $name) | quote }}
accessMode: {{ .access }}
singleNode: {{ .singleNode }}
nodeLocal: {{ .nodeLocal }}
rootOwned: {{ .rootOwned }}
storageSize: {{ $v.storage.size | default (printf "%dGi" .sizeGi) | quote }}
modelDir: {{ .modelDir | quote }}
markerDir: {{ .markerDir | quote }}
serviceAccount: {{ $v.serviceAccount.name | default (ternary (printf "%s-sa" $name) "" $v.serviceAccount.create) | quote }}
cpu: {{ $v.workload.cpu | default
    (printf "%d" (max 1 (div (mul (int $a.cpuPerNode) $devices) (int $a.devicesPerNode)))) | quote }}
memory: {{ $v.workload.memory | default
    (printf "%dGi" (max 1 (div (mul (int $a.memoryPerNodeGi) $devices) (int $a.devicesPerNode)))) | quote }}
program: {{ .program | quote }}
programCommand: {{ toJson .programCommand }}
image: {{ .image | quote }}
downloadImage: {{ .downloadImage | quote }}
steps: {{ toJson .steps }}
stepsInPod: {{ .stepsInPod }}
lnc: {{ .lnc }}
fabric: {{ include "llm.fabric"
    (dict "root" .root "acc" $a "kind" $fabric "tcp" (and (eq $want "tcp") (ne $native "")) "name" $name) }}
tpu: {{ toJson .tpu }}
{{- end -}}
