{{/*
Serving (orchestration.mode serve): an OpenAI-compatible server, vLLM or
SGLang, holding the whole model on workload.nodes nodes. Facts about the
engines (images per kind of accelerator, what each build can do, start-up
time) are data in catalog.servers; the formulas are here, and
rules/serve.go derives the same numbers for the rules and the plan (a test
ties the two).
*/}}

{{/*
llm.serve.replicas: the most servers that can run at once: serving.replicas,
or autoscaling's maximum when it is on (the autoscaler owns the count then),
or the prefill and decode servers of a disaggregated release.
They all mount the claim, so more than one makes it a shared
(ReadWriteMany) claim. Input: the values.
*/}}
{{- define "llm.serve.replicas" -}}
{{- $s := .serving -}}
{{- if $s.disaggregation.enabled -}}
{{- add (int $s.disaggregation.prefill.replicas) (int $s.disaggregation.decode.replicas) -}}
{{- else if ne $s.autoscaling.kind "none" -}}
{{- int $s.autoscaling.maxReplicas -}}
{{- else -}}
{{- int $s.replicas -}}
{{- end -}}
{{- end -}}

{{/*
llm.serve: what the serve templates derive, as JSON.

  engine, platform  serving.engine; gpu, cpu or neuron (from the profile's resource)
  nodes             the nodes of one server: workload.nodes, or with prefill
                    and decode apart the role's own (serving.disaggregation.
                    <phase>.nodes)
  build             catalog.servers.<engine>.platforms.<platform> (empty when there is none)
  image             serving.image, or the build's
  tp, pp            tensor and pipeline parallel sizes
  lws               true when a server spans nodes (a LeaderWorkerSet)
  kind, group       the run's object: Deployment (apps) or LeaderWorkerSet
  service           the Service's name (<release>-api; a LeaderWorkerSet
                    makes a headless Service of its own name)
  model             what the server loads: the claim's copy when the download
                    step fetches it, or the Hugging Face repository
  pulls             true when the server downloads the weights itself
  servedName        the model name clients ask for
  maxModelLen       serving.maxModelLen, or the model's context length up to 8192
  maxNumSeqs        sequences at once: serving.maxNumSeqs, or the build's
                    default, or 0 for the engine's own; with data-parallel
                    attention each rank's share of them, rounded up
  kvBytes           the KV cache of maxNumSeqs sequences (at least one) of
                    maxModelLen tokens
  adapters, loraRank
                    LoRA adapters ({name, path}) and the largest rank (0:
                    the engine's default)
  speculative       speculative decoding ({method, tokens, model,
                    revision}), empty for none
  expertParallel    true when the experts spread over the devices
  dataParallelAttention, dp, dpLocal
                    true when each device is a data-parallel rank of its
                    own (then tp and pp are 1), the ranks, those of a node
  startupMinutes    the startup probe's allowance
  disaggregated     true for prefill and decode servers (serving.disaggregation)
  hybrid            true when every pod of a server across nodes answers
                    HTTP for its own node's data-parallel ranks (vLLM's
                    --data-parallel-hybrid-lb: prefill and decode servers
                    across nodes, llm-d's wide expert parallelism)
  env               environment the server adds (a list)

Inputs (dict): root, ctx, phase (optional: "prefill" or "decode"; the
decode server's when it is not given and prefill and decode are apart).
*/}}
{{- define "llm.serve" -}}
{{- /* Computed once per render and role, and kept on the root context as
llm.ctx is: a serving render asks for it from a dozen templates. */ -}}
{{- $key := printf "llmServe.%s" (get . "phase" | default "") -}}
{{- if not (hasKey .root $key) -}}
{{- $_ := set .root $key (include "llm.serve.compute" .) -}}
{{- end -}}
{{- get .root $key -}}
{{- end -}}

{{/*
llm.serve.compute: llm.serve's JSON, worked out afresh. Each of its parts
below reads the inputs and the earlier parts' results from one dict and
sets its own results into it; the fields are then read back from it.
Inputs (dict): root, ctx, phase (optional). Output: llm.serve's JSON.
*/}}
{{- define "llm.serve.compute" -}}
{{- $o := dict "root" .root "ctx" .ctx "phase" (get . "phase" | default "") -}}
{{- $_ := include "llm.serve.compute.layout" $o -}}
{{- $_ = include "llm.serve.compute.weights" $o -}}
{{- $_ = include "llm.serve.compute.kvCache" $o -}}
{{- $_ = include "llm.serve.compute.adapters" $o -}}
{{- $_ = include "llm.serve.compute.env" $o -}}
{{- $c := .ctx -}}
{{- $s := .root.Values.serving -}}
{{- $lws := $o.lws -}}
{{- toJson (dict
  "engine" $s.engine
  "platform" $o.platform
  "nodes" $o.nodes
  "build" $o.build
  "image" ($s.image | default (get $o.build "image") | default "")
  "tp" $o.tp
  "pp" $o.pp
  "lws" $lws
  "kind" (ternary "LeaderWorkerSet" "Deployment" $lws)
  "group" (ternary "leaderworkerset.x-k8s.io" "apps" $lws)
  "apiVersion" (ternary "leaderworkerset.x-k8s.io/v1" "apps/v1" $lws)
  "service" (printf "%s-api" $c.name)
  "model" $o.model
  "pulls" $o.pulls
  "source" $o.source
  "bucket" $o.bucket
  "servedName" ($s.servedModelName | default $o.repo)
  "queueMetric" (get $o.server "queueMetric" | default "")
  "kvCacheMetric" (get $o.server "kvCacheMetric" | default "")
  "tokensMetric" (get $o.server "tokensMetric" | default "")
  "maxModelLen" $o.maxLen
  "kvBytes" $o.kvBytes
  "maxNumSeqs" $o.seqs
  "adapters" $o.adapters
  "loraRank" $o.rank
  "speculative" $o.spec
  "expertParallel" $o.ep
  "dataParallelAttention" $o.dpa
  "dp" $o.dp
  "dpLocal" (int $c.procsPerNode)
  "startupMinutes" $o.startup
  "disaggregated" (and $s.disaggregation.enabled true)
  "hybrid" (and $s.disaggregation.enabled $lws $o.dpa true)
  "env" $o.env) -}}
{{- end -}}

{{/*
llm.serve.compute.layout: where one server runs and how it spreads over
its devices. Input: llm.serve.compute's dict (root, ctx, phase). Sets
nodes, platform, server (catalog.servers.<engine>), build, seqs (sequences
at once, a rank's share), tp, pp, dpa (data-parallel attention), dp, lws
and ep (expert parallelism).
*/}}
{{- define "llm.serve.compute.layout" -}}
{{- $v := .root.Values -}}
{{- $c := .ctx -}}
{{- $s := $v.serving -}}
{{- $nodes := int $c.nodes -}}
{{- if $s.disaggregation.enabled -}}
{{- $nodes = int (get $s.disaggregation (get . "phase" | default "decode")).nodes | default $nodes | int -}}
{{- end -}}
{{- $m := $c.model -}}
{{- /* The engine's build: gpu (NVIDIA, CUDA), rocm (AMD), tpu, neuron or cpu. */ -}}
{{- $platform := "gpu" -}}
{{- if $c.neuron }}{{ $platform = "neuron" }}
{{- else if not $c.acc.resource }}{{ $platform = "cpu" }}
{{- else if hasPrefix "amd.com/" $c.acc.resource }}{{ $platform = "rocm" }}
{{- else if eq $c.acc.resource "google.com/tpu" }}{{ $platform = "tpu" }}{{ end -}}
{{- $server := get $v.catalog.servers $s.engine | default dict -}}
{{- $build := get (get $server "platforms" | default dict) $platform | default dict -}}
{{- /* The profile's own build of the engine, where the engine builds per
device generation. */ -}}
{{- with get (get $c.acc "serverImages" | default dict) $s.engine }}{{ $build = merge (dict "image" .) $build }}{{ end -}}
{{- /* Sequences at once: the values', or the build's default, or 0 for
the engine's own (no flag). */ -}}
{{- $seqs := int $s.maxNumSeqs | default (int (get $build "maxNumSeqs" | default 0)) | int -}}
{{- $tp := int $s.tensorParallel | default (int $c.procsPerNode) | int -}}
{{- $pp := int $s.pipelineParallel | default $nodes | int -}}
{{- /* Data-parallel attention (a mixture-of-experts model): each device is
a rank with attention and a KV cache of its own, the experts spread over
all of them. */ -}}
{{- $devices := mul $nodes (int $c.procsPerNode) -}}
{{- $moe := gt (int (get $m "experts" | default 0)) 1 -}}
{{- $dpa := or (eq $s.dataParallelAttention "on")
    (and (eq $s.dataParallelAttention "auto") $moe (eq $platform "gpu") (gt $devices 1)
    (or (gt (int (get $m "kvLoraRank" | default 0)) 0) (gt $nodes 1))) -}}
{{- /* Disaggregated servers of one node are tensor-parallel (llm-d's P/D
path); across nodes they are data-parallel, experts spread over every
device (its wide expert-parallel path). */ -}}
{{- if and $s.disaggregation.enabled (eq $nodes 1) }}{{ $dpa = false }}{{ end -}}
{{- $dp := 1 -}}
{{- if $dpa }}{{ $dp = $devices }}{{ $tp = 1 }}{{ $pp = 1 }}{{ end -}}
{{- /* serving.maxNumSeqs is the server's, whatever runs it: each rank
runs its share (rules/serve.go: RankSeqs). */ -}}
{{- $seqs = div (add $seqs (sub $dp 1)) $dp -}}
{{- /* A mixture-of-experts model on several GPUs spreads its experts over
them (expert parallelism) instead of slicing every expert. */ -}}
{{- $ep := or (eq $s.expertParallel "on") (and (eq $s.expertParallel "auto") $moe (or (gt $tp 1) $dpa)) -}}
{{- $_ := set . "nodes" $nodes }}{{ $_ = set . "platform" $platform }}{{ $_ = set . "server" $server -}}
{{- $_ = set . "build" $build }}{{ $_ = set . "seqs" $seqs }}{{ $_ = set . "tp" $tp }}{{ $_ = set . "pp" $pp -}}
{{- $_ = set . "dpa" $dpa }}{{ $_ = set . "dp" $dp }}{{ $_ = set . "lws" (gt $nodes 1) }}{{ $_ = set . "ep" $ep -}}
{{- end -}}

{{/*
llm.serve.compute.weights: where the server reads the model from, and how
long it may take to start. Input: llm.serve.compute's dict, after layout.
Sets pulls (true when the server downloads the weights itself), repo (the
Hugging Face repository), bucket, source, model and startup (minutes).
*/}}
{{- define "llm.serve.compute.weights" -}}
{{- $v := .root.Values -}}
{{- $c := .ctx -}}
{{- $s := $v.serving -}}
{{- $m := $c.model -}}
{{- /* The server downloads the weights itself unless a step does, or
they are on the claim already (download.offline). */ -}}
{{- $w := $s.weights -}}
{{- $pulls := and (not $v.download.offline) (not $w.from) -}}
{{- range $c.steps }}{{ if eq .name "download" }}{{ $pulls = false }}{{ end }}{{ end -}}
{{- $repo := get $m "hfRepo" | default $v.model.name -}}
{{- /* A bucket's weights: streamed from their URI, or read from where its
CSI driver mounts it (gs:// by Cloud Storage FUSE, s3:// by Mountpoint). */ -}}
{{- $bucket := dict -}}
{{- if $w.from -}}
{{- $parts := splitn "/" 2 (trimPrefix "gs://" (trimPrefix "s3://" $w.uri)) -}}
{{- $bucket = dict "from" $w.from "uri" $w.uri "scheme" (ternary "gs" "s3" (hasPrefix "gs://" $w.uri)) "name" $parts._0
    "prefix" (trimSuffix "/" (index $parts "_1")) "mountPath" "/weights" -}}
{{- end -}}
{{- $source := ternary "hub" "claim" $pulls -}}
{{- with $w.from }}{{ $source = . }}{{ end -}}
{{- $model := ternary $repo $c.modelDir $pulls -}}
{{- if eq $w.from "stream" }}{{ $model = $w.uri }}{{ else if eq $w.from "mount" }}{{ $model = $bucket.mountPath }}{{ end -}}
{{- /* Start-up: the engine's own (compiling, CUDA graphs) plus reading
the weights as fast as their source allows (catalog.weightSources). */ -}}
{{- $rate := get (get $v.catalog.weightSources $source | default dict) "gbPerMinute" | default 6 | float64 -}}
{{- $read := int64 (ceil (divf (float64 (int64 $m.checkpointBytes)) (mulf $rate 1000000000.0))) -}}
{{- $startup := int $s.startupMinutes | default (add (int (get .build "startupMinutes" | default 10)) $read) | int -}}
{{- $_ := set . "pulls" $pulls }}{{ $_ = set . "repo" $repo }}{{ $_ = set . "bucket" $bucket -}}
{{- $_ = set . "source" $source }}{{ $_ = set . "model" $model }}{{ $_ = set . "startup" $startup -}}
{{- end -}}

{{/*
llm.serve.compute.kvCache: the KV cache of a server. Input:
llm.serve.compute's dict, after layout (tp, seqs). Sets maxLen
(maxModelLen) and kvBytes (for seqs sequences, at least one, of maxLen
tokens).
*/}}
{{- define "llm.serve.compute.kvCache" -}}
{{- $s := .root.Values.serving -}}
{{- $m := .ctx.model -}}
{{- /* The KV cache (model.Facts.KVBytes computes the same): keys and
values (2) of every layer for every KV head a GPU holds (vLLM copies a KV
head to each of the tensor-parallel GPUs when there are fewer heads than
GPUs), head_dim wide, in 2 bytes; with MLA, one latent and its rotary key
a layer, kept whole on every GPU. A sliding-window layer holds at most
its window, a chunked layer at most its chunk; linear-attention and
state-space layers keep no KV cache (their state per sequence is apart). */ -}}
{{- $heads := int (get $m "heads" | default 1) -}}
{{- $kvHeads := int (get $m "kvHeads" | default $heads) -}}
{{- $width := mul 2 (int (get $m "headDim" | default (div (int (get $m "hidden" | default 0)) (max 1 $heads)))) -}}
{{- if get $m "kvLoraRank" }}{{ $width = add (int $m.kvLoraRank) (int (get $m "qkRopeHeadDim" | default 0)) }}{{ $kvHeads = 1 }}{{ end -}}
{{- $layers := int (get $m "layers" | default 0) -}}
{{- $hybrid := or (gt (int (get $m "linearLayers" | default 0)) 0) (gt (int (get $m "ssmLayers" | default 0)) 0) -}}
{{- $attention := min (int (get $m "attentionLayers" | default (ternary 0 $layers $hybrid))) $layers -}}
{{- $window := int (get $m "slidingWindow" | default 0) -}}
{{- $sliding := ternary (min (int (get $m "slidingLayers" | default 0)) $attention) 0 (gt $window 0) -}}
{{- $chunk := int (get $m "chunkSize" | default 0) -}}
{{- $chunked := ternary (min (int (get $m "chunkedLayers" | default 0)) (sub $attention $sliding)) 0 (gt $chunk 0) -}}
{{- $maxLen := int $s.maxModelLen | default (min (int (get $m "contextLength" | default 8192)) 8192) | int -}}
{{- $tokens := add (mul (sub $attention (add $sliding $chunked)) $maxLen) (mul $sliding (min $maxLen $window))
    (mul $chunked (min $maxLen $chunk)) -}}
{{- $kvDtype := ternary 1 2 (eq $s.kvCacheDtype "fp8") -}}
{{- $_ := set . "maxLen" $maxLen -}}
{{- $_ = set . "kvBytes" (mul (max $kvHeads .tp 1) $width $kvDtype $tokens (max 1 .seqs)) -}}
{{- end -}}

{{/*
llm.serve.compute.adapters: what the server loads beside the model.
Input: llm.serve.compute's dict, after weights (pulls). Sets adapters
({name, path}), rank (the largest LoRA rank, 0: the engine's default) and
spec (speculative decoding: {method, tokens, model, revision}, empty for
none).
*/}}
{{- define "llm.serve.compute.adapters" -}}
{{- $v := .root.Values -}}
{{- $s := $v.serving -}}
{{- $m := .ctx.model -}}
{{- /* LoRA adapters: from the claim where the download step put them, or
from the hub. vLLM takes a rank from its own list of sizes. */ -}}
{{- $adapters := list -}}
{{- $rank := int $s.lora.maxRank -}}
{{- $given := gt $rank 0 -}}
{{- /* With no download step for the weights, servers take the adapters
from the hub too, unless nothing may call out (download.offline). */ -}}
{{- $adaptersFromHub := or .pulls (ne $s.weights.from "") -}}
{{- range $s.lora.adapters -}}
{{- $adapters = append $adapters
    (dict "name" .name "path" (ternary .hfRepo (printf "%s/adapters/%s" $v.storage.mountPath .name) $adaptersFromHub)) -}}
{{- if not $given }}{{ $rank = max $rank (int (get . "rank" | default 0)) }}{{ end -}}
{{- end -}}
{{- if and (eq $s.engine "vllm") (gt $rank 0) (le $rank 512) -}}
{{- $want := $rank -}}
{{- range list 512 320 256 128 64 32 16 8 1 }}{{ if ge . $want }}{{ $rank = . }}{{ end }}{{ end -}}
{{- end -}}
{{- /* Speculative decoding (rules/speculative.go): the draft proposes
tokens a step, the model's MTP layers' count for mtp, three otherwise. A
draft model comes from the claim beside the weights, or from the hub as
the adapters do. */ -}}
{{- $spec := dict -}}
{{- $sp := $s.speculative -}}
{{- if ne $sp.method "none" -}}
{{- $spec = dict "method" $sp.method
    "tokens" (int $sp.tokens | default
    (ternary (max 1 (int (get $m "mtpLayers" | default 0))) 3 (eq $sp.method "mtp")) | int) -}}
{{- if eq $sp.method "draft" -}}
{{- $d := get $v.catalog.models $sp.draft.model | default dict -}}
{{- $_ := set $spec "model"
    (ternary (get $d "hfRepo" | default $sp.draft.model) (printf "%s/models/%s" $v.storage.mountPath $sp.draft.model)
    $adaptersFromHub) -}}
{{- if $adaptersFromHub }}{{ $_ := set $spec "revision" ($sp.draft.revision | default "main") }}{{ end -}}
{{- end -}}
{{- end -}}
{{- $_ := set . "adapters" $adapters }}{{ $_ = set . "rank" $rank }}{{ $_ = set . "spec" $spec -}}
{{- end -}}

{{/*
llm.serve.compute.env: the environment the server adds (a list of
{name, value}). Input: llm.serve.compute's dict, after the parts above.
Sets env.
*/}}
{{- define "llm.serve.compute.env" -}}
{{- $v := .root.Values -}}
{{- $s := $v.serving -}}
{{- $platform := .platform -}}
{{- $env := list -}}
{{- if .pulls -}}
{{- /* The server's download cache is on the claim: a restarted server
does not download again. */ -}}
{{- $env = append $env (dict "name" "HF_HOME" "value" (printf "%s/huggingface" $v.storage.mountPath)) -}}
{{- end -}}
{{- if eq $platform "neuron" -}}
{{- /* Neuron: the compiled model is kept on the claim, in a directory
named after what it was compiled for; the server compiles it there on its
first start and loads it afterwards. */ -}}
{{- $in := dict "model" .repo "revision" $v.model.revision "tp" .tp "maxModelLen" .maxLen "maxNumSeqs" .seqs
    "lnc" (int .ctx.lnc) "image" ($s.image | default (get .build "image")) -}}
{{- $env = append $env
    (dict "name" "NEURON_COMPILED_ARTIFACTS"
    "value" (printf "%s/neuron-compiled/%s-%s" $v.storage.mountPath $v.model.name (toJson $in | sha256sum | trunc 12))) -}}
{{- end -}}
{{- if eq $platform "tpu" -}}
{{- /* TPU: XLA's compiled graphs are kept on the claim, so a restarted
server does not compile again (GKE's vLLM TPU sample keeps them on a
bucket the same way). */ -}}
{{- $env = append $env (dict "name" "VLLM_XLA_CACHE_PATH" "value" (printf "%s/xla-cache" $v.storage.mountPath)) -}}
{{- end -}}
{{- if and (eq $platform "cpu") (gt .seqs 0) -}}
{{- /* vLLM on CPU sizes its KV cache from this variable, in GiB (its own
default without it). */ -}}
{{- $env = append $env
    (dict "name" "VLLM_CPU_KVCACHE_SPACE" "value" (printf "%d" (max 1 (div (add .kvBytes 1073741823) 1073741824)))) -}}
{{- end -}}
{{- $env = concat $env (get .build "env" | default list) -}}
{{- /* Programs of the user's (workload.command) find the weights where the
server reads them. */ -}}
{{- if $s.weights.from }}{{ $env = append $env (dict "name" "MODEL_DIR" "value" .model) }}{{ end -}}
{{- $_ := set . "env" $env -}}
{{- end -}}

{{/*
llm.serve.servers: the server of each role, as a JSON list of {phase,
serve (llm.serve)}: phase "" for the release's one kind of server, or
"prefill" and "decode" (serving.disaggregation). With lws given, only the
roles whose servers are LeaderWorkerSets (true: they span nodes) or
Deployments (false).
Inputs (dict): root, ctx, lws (optional).
*/}}
{{- define "llm.serve.servers" -}}
{{- $phases := list "" -}}
{{- if .root.Values.serving.disaggregation.enabled }}{{ $phases = list "prefill" "decode" }}{{ end -}}
{{- $out := list -}}
{{- range $phases -}}
{{- $p := include "llm.serve" (dict "root" $.root "ctx" $.ctx "phase" .) | fromJson -}}
{{- if or (not (hasKey $ "lws")) (eq $p.lws $.lws) }}{{ $out = append $out (dict "phase" . "serve" $p) }}{{ end -}}
{{- end -}}
{{- toJson $out -}}
{{- end -}}

{{/*
llm.serve.command: the server's command line, as a YAML list. A server
that spans nodes runs one process per node; each finds the leader and its
own rank from the variables the LeaderWorkerSet gives every container
(LWS_LEADER_ADDRESS, LWS_GROUP_SIZE, LWS_WORKER_INDEX). vLLM's workers run
headless (no API server); SGLang's nodes take the same arguments.
A prefill or decode server (phase) has vLLM's NixlConnector, which sends
a prompt's KV cache from the prefill server to the decode server (kv_both:
either side), and a decode server's vLLM listens behind the routing
sidecar (llm.serve.vllmPort).
Inputs (dict): root, serve (llm.serve), role ("leader", "worker", or ""
for a one-node server), phase ("prefill", "decode" or "").
*/}}
{{- define "llm.serve.command" -}}
{{- $p := .serve -}}
{{- $o := dict "root" .root "serve" $p "role" .role "phase" (get . "phase" | default "") -}}
{{- if eq $p.engine "sglang" -}}
{{- $_ := include "llm.serve.command.sglang" $o -}}
{{- else -}}
{{- $_ := include "llm.serve.command.vllm" $o -}}
{{- $_ = include "llm.serve.command.vllmParallel" $o -}}
{{- end -}}
{{- $args := $o.args -}}
{{- if $o.phase -}}
{{- $args = append $args "--kv-transfer-config={\"kv_connector\":\"NixlConnector\",\"kv_role\":\"kv_both\"}" -}}
{{- end -}}
{{- $args = concat $args .root.Values.serving.args -}}
{{- /* A node's first engine is its index times the engines of a node:
arithmetic, so a shell computes it and execs the server. */ -}}
{{- if and $p.dataParallelAttention (eq $p.engine "vllm") (eq .role "worker") -}}
{{- $args = concat
    (list "/bin/sh" "-c" (printf "exec \"$@\" --data-parallel-start-rank=$((LWS_WORKER_INDEX * %d))" (int $p.dpLocal))
    "server") $args -}}
{{- end -}}
{{- toYaml $args -}}
{{- end -}}

{{/*
llm.serve.command.sglang: SGLang's command line, before the arguments
every engine ends with. Input: llm.serve.command's dict (root, serve,
role, phase). Sets args (a list).
*/}}
{{- define "llm.serve.command.sglang" -}}
{{- $v := .root.Values -}}
{{- $s := $v.serving -}}
{{- $p := .serve -}}
{{- $args := list "python3" "-m" "sglang.launch_server"
  (printf "--model-path=%s" $p.model)
  (printf "--served-model-name=%s" $p.servedName)
  "--host=0.0.0.0"
  (printf "--port=%d" (int $s.port))
  (printf "--tp-size=%d" (mul $p.tp $p.dp))
  (printf "--pp-size=%d" (int $p.pp))
  (printf "--context-length=%d" (int $p.maxModelLen))
  (printf "--mem-fraction-static=%v" $s.memoryFraction)
  "--enable-metrics" -}}
{{- if gt (int $p.maxNumSeqs) 0 }}{{ $args = append $args (printf "--max-running-requests=%d" (mul $p.maxNumSeqs $p.dp)) }}{{ end -}}
{{- if gt (int $s.maxNumBatchedTokens) 0 }}{{ $args = append $args (printf "--chunked-prefill-size=%d" (int $s.maxNumBatchedTokens)) }}{{ end -}}
{{- /* SGLang's tensor-parallel size is every device; with data-parallel
attention as many ranks (attention on one device each), and it shares
--max-running-requests among them. */ -}}
{{- if $p.dataParallelAttention }}{{ $args = concat $args (list (printf "--dp-size=%d" (int $p.dp)) "--enable-dp-attention") }}{{ end -}}
{{- with $p.adapters -}}
{{- $args = append $args "--lora-paths" -}}
{{- range . }}{{ $args = append $args (printf "%s=%s" .name .path) }}{{ end -}}
{{- $args = append $args (printf "--max-loras-per-batch=%d" (len .)) -}}
{{- if gt (int $p.loraRank) 0 }}{{ $args = append $args (printf "--max-lora-rank=%d" (int $p.loraRank)) }}{{ end -}}
{{- end -}}
{{- if eq $s.kvCacheDtype "fp8" }}{{ $args = append $args "--kv-cache-dtype=fp8_e4m3" }}{{ end -}}
{{- /* Speculative decoding: MTP layers are SGLang's NEXTN (run as EAGLE),
a draft model STANDALONE, each a chain of --speculative-num-steps tokens
(top-1) verified with the token before them; NGRAM verifies its draft
tokens alone. */ -}}
{{- with $p.speculative -}}
{{- if eq .method "ngram" -}}
{{- $args = concat $args (list "--speculative-algorithm=NGRAM" (printf "--speculative-num-draft-tokens=%d" (int .tokens))) -}}
{{- else -}}
{{- $args = concat $args
    (list (printf "--speculative-algorithm=%s" (ternary "NEXTN" "STANDALONE" (eq .method "mtp")))
    (printf "--speculative-num-steps=%d" (int .tokens)) "--speculative-eagle-topk=1"
    (printf "--speculative-num-draft-tokens=%d" (add1 (int .tokens)))) -}}
{{- with .model }}{{ $args = append $args (printf "--speculative-draft-model-path=%s" .) }}{{ end -}}
{{- with get . "revision" }}{{ $args = append $args (printf "--speculative-draft-model-revision=%s" .) }}{{ end -}}
{{- end -}}
{{- end -}}
{{- if $p.expertParallel }}{{ $args = append $args (printf "--ep-size=%d" (mul $p.tp $p.dp)) }}{{ end -}}
{{- if $p.pulls }}{{ $args = append $args (printf "--revision=%s" $v.model.revision) }}{{ end -}}
{{- if eq $p.source "stream" }}{{ $args = append $args "--load-format=runai_streamer" }}{{ end -}}
{{- if $p.lws -}}
{{- $args = concat $args
    (list "--dist-init-addr=$(LWS_LEADER_ADDRESS):20000" "--nnodes=$(LWS_GROUP_SIZE)" "--node-rank=$(LWS_WORKER_INDEX)") -}}
{{- end -}}
{{- $_ := set . "args" $args -}}
{{- end -}}

{{/*
llm.serve.command.vllm: vLLM's command line up to its parallelism: the
model, where it listens, its sizes, LoRA adapters, the KV cache's type and
speculative decoding. Input: llm.serve.command's dict (root, serve, role,
phase). Sets args (a list).
*/}}
{{- define "llm.serve.command.vllm" -}}
{{- $s := .root.Values.serving -}}
{{- $p := .serve -}}
{{- $args := list "vllm" "serve" $p.model
  (printf "--served-model-name=%s" $p.servedName)
  "--host=0.0.0.0"
  (printf "--port=%s" (include "llm.serve.vllmPort" (dict "root" .root "phase" .phase)))
  (printf "--tensor-parallel-size=%d" (int $p.tp))
  (printf "--pipeline-parallel-size=%d" (int $p.pp))
  (printf "--max-model-len=%d" (int $p.maxModelLen)) -}}
{{- /* 0: the engine's own default; a rank's share with data-parallel
attention, each rank an engine of its own. */ -}}
{{- if gt (int $p.maxNumSeqs) 0 }}{{ $args = append $args (printf "--max-num-seqs=%d" (int $p.maxNumSeqs)) }}{{ end -}}
{{- if gt (int $s.maxNumBatchedTokens) 0 }}{{ $args = append $args (printf "--max-num-batched-tokens=%d" (int $s.maxNumBatchedTokens)) }}{{ end -}}
{{- /* On CPU the KV cache is VLLM_CPU_KVCACHE_SPACE; Neuron's is sized
from the two lengths above. */ -}}
{{- if has $p.platform (list "gpu" "rocm") }}{{ $args = append $args (printf "--gpu-memory-utilization=%v" $s.memoryFraction) }}{{ end -}}
{{- with $p.adapters -}}
{{- $args = concat $args (list "--enable-lora" "--lora-modules") -}}
{{- range . }}{{ $args = append $args (printf "%s=%s" .name .path) }}{{ end -}}
{{- $args = append $args (printf "--max-loras=%d" (len .)) -}}
{{- if gt (int $p.loraRank) 0 }}{{ $args = append $args (printf "--max-lora-rank=%d" (int $p.loraRank)) }}{{ end -}}
{{- end -}}
{{- if eq $s.kvCacheDtype "fp8" }}{{ $args = append $args "--kv-cache-dtype=fp8" }}{{ end -}}
{{- /* Speculative decoding: vLLM's SpeculativeConfig as JSON (method mtp,
draft_model or ngram). */ -}}
{{- with $p.speculative -}}
{{- $cfg := dict "method" (get (dict "mtp" "mtp" "draft" "draft_model" "ngram" "ngram") .method)
    "num_speculative_tokens" (int .tokens) -}}
{{- with get . "model" }}{{ $_ := set $cfg "model" . }}{{ end -}}
{{- with get . "revision" }}{{ $_ := set $cfg "revision" . }}{{ end -}}
{{- $args = append $args (printf "--speculative-config=%s" (toJson $cfg)) -}}
{{- end -}}
{{- $_ := set . "args" $args -}}
{{- end -}}

{{/*
llm.serve.command.vllmParallel: vLLM's arguments after
llm.serve.command.vllm's: expert parallelism, the weights' revision and
load format, and how the server spreads over data-parallel ranks and
nodes. Input: llm.serve.command's dict, with args. Sets args.
*/}}
{{- define "llm.serve.command.vllmParallel" -}}
{{- $v := .root.Values -}}
{{- $p := .serve -}}
{{- $args := .args -}}
{{- if $p.expertParallel }}{{ $args = append $args "--enable-expert-parallel" }}{{ end -}}
{{- if $p.pulls }}{{ $args = append $args (printf "--revision=%s" $v.model.revision) }}{{ end -}}
{{- if eq $p.source "stream" -}}
{{- $args = append $args "--load-format=runai_streamer" -}}
{{- /* Ranks read their own part of the files and share it over NCCL,
instead of every rank reading everything. */ -}}
{{- if gt (mul $p.tp $p.pp $p.dp) 1 }}{{ $args = append $args "--model-loader-extra-config={\"distributed\":true}" }}{{ end -}}
{{- end -}}
{{- if $p.dataParallelAttention -}}
{{- /* Each device is an engine of its own (--max-num-seqs each); the
leader's API server reaches the engines of every node at its address. */ -}}
{{- $args = concat $args
    (list (printf "--data-parallel-size=%d" (int $p.dp)) (printf "--data-parallel-size-local=%d" (int $p.dpLocal))) -}}
{{- if $p.lws }}{{ $args = concat $args (list "--data-parallel-address=$(LWS_LEADER_ADDRESS)" "--data-parallel-rpc-port=13345") }}{{ end -}}
{{- /* Prefill and decode across nodes: every node's API server answers
for its own engines, the picker choosing among the nodes. */ -}}
{{- if $p.hybrid }}{{ $args = append $args "--data-parallel-hybrid-lb" }}{{ else if eq .role "worker" }}{{ $args = append $args "--headless" }}{{ end -}}
{{- else if $p.lws -}}
{{- $args = concat $args
    (list "--distributed-executor-backend=mp" "--nnodes=$(LWS_GROUP_SIZE)" "--node-rank=$(LWS_WORKER_INDEX)"
    "--master-addr=$(LWS_LEADER_ADDRESS)") -}}
{{- if eq .role "worker" }}{{ $args = append $args "--headless" }}{{ end -}}
{{- end -}}
{{- $_ := set . "args" $args -}}
{{- end -}}

{{/*
llm.serve.probes: the ports and probes of a container that answers HTTP
(a one-node server, or a leader), as YAML container fields. The startup
probe holds the others until the model is loaded (and, on Neuron,
compiled), for serve.startupMinutes; afterwards a server that stops
answering /health is taken out of the Service, and restarted after half a
minute.
A prefill or decode server's vLLM port is "vllm" (a decode server's
"http" is its routing sidecar's), beside NIXL's side channel.
Inputs (dict): root, serve (llm.serve), phase (optional).
*/}}
{{- define "llm.serve.probes" -}}
{{- $phase := get . "phase" | default "" -}}
{{- $name := ternary "vllm" "http" (ne $phase "") -}}
{{- $health := dict "httpGet" (dict "path" "/health" "port" $name) -}}
ports:
  - name: {{ $name }}
    containerPort: {{ include "llm.serve.vllmPort" (dict "root" .root "phase" $phase) }}
  {{- if $phase }}
  - name: nixl
    containerPort: {{ int .root.Values.serving.disaggregation.sideChannelPort }}
  {{- end }}
startupProbe:
  {{- toYaml (merge (dict "periodSeconds" 10 "failureThreshold" (mul (int .serve.startupMinutes) 6)) $health) | nindent 2 }}
readinessProbe:
  {{- toYaml (merge (dict "periodSeconds" 5 "timeoutSeconds" 5 "failureThreshold" 3) $health) | nindent 2 }}
livenessProbe:
  {{- toYaml (merge (dict "periodSeconds" 10 "timeoutSeconds" 5 "failureThreshold" 3) $health) | nindent 2 }}
{{- end -}}

{{/*
llm.serve.pod: the pod template of a server (role "" for a one-node
server, or "leader" / "worker" in a LeaderWorkerSet): an accelerator pod,
so it carries the profile's fabric, that waits for the steps before it
(the download's marker) and runs the server.
A prefill or decode server (phase) is labelled with its role as llm-d's
filters read it (llm-d.ai/role), tells NIXL its pod's address, and a
decode server has llm-d's routing sidecar before it: a native sidecar on
the API port that, for a request the picker paired with a prefill server
(its x-prefiller-host-port header), has that server compute the KV cache
first, then lets the local vLLM decode with it (connector nixlv2).
Inputs (dict): root, ctx, serve (llm.serve), role, phase (optional).
*/}}
{{- define "llm.serve.pod" -}}
{{- $root := .root -}}
{{- $p := .serve -}}
{{- $phase := get . "phase" | default "" -}}
{{- $http := or (ne .role "worker") $p.hybrid -}}
{{- /* workload.command replaces the server's command line, as it replaces
the program in every mode. */ -}}
{{- $command := include "llm.serve.command" (dict "root" $root "serve" $p "role" .role "phase" $phase) -}}
{{- with $root.Values.workload.command }}{{ $command = toYaml . }}{{ end -}}
{{- $weights := include "llm.serve.weights" (dict "root" $root "ctx" .ctx "serve" $p) | fromYaml -}}
{{- $env := $p.env | default list -}}
{{- $init := include "llm.container.before" (dict "root" $root "ctx" .ctx) -}}
{{- if $phase -}}
{{- $d := $root.Values.serving.disaggregation -}}
{{- $env = concat $env (list
  (dict "name" "VLLM_NIXL_SIDE_CHANNEL_HOST" "valueFrom" (dict "fieldRef" (dict "fieldPath" "status.podIP")))
  (dict "name" "VLLM_NIXL_SIDE_CHANNEL_PORT" "value" (printf "%d" (int $d.sideChannelPort)))) -}}
{{- if eq $phase "decode" -}}
{{- $sidecar := dict "name" "routing-proxy"
  "image" (include "llm.image" (dict "root" $root "ref" $d.sidecarImage))
  "imagePullPolicy" "IfNotPresent"
  "restartPolicy" "Always"
  "args" (list (printf "--port=%d" (int $root.Values.serving.port))
    (printf "--vllm-port=%s" (include "llm.serve.vllmPort" (dict "root" $root "phase" $phase)))
    "--kv-connector=nixlv2" "--secure-proxy=false")
  "ports" (list (dict "name" "http" "containerPort" (int $root.Values.serving.port)))
  "resources" (dict "requests" (dict "cpu" "250m" "memory" "256Mi") "limits" (dict "memory" "1Gi"))
  "securityContext" (include "llm.helper.securityContext" (dict "root" $root "ctx" .ctx) | fromYaml) -}}
{{- $init = printf "%s\n%s" (toYaml (list $sidecar)) ($init | default "") -}}
{{- end -}}
{{- end -}}
{{- $container := include "llm.container.main" (dict "root" $root "ctx" .ctx "name" "server" "image" $p.image
  "command" $command
  "extraEnv" (toYaml $env)
  "mounts" (toYaml (get $weights "mounts" | default list))
  "extra" (ternary (include "llm.serve.probes" (dict "root" $root "serve" $p "phase" $phase)) "" $http)) -}}
{{- $pod := dict "root" $root "ctx" .ctx "component" "run" "accelerator" true
  "initContainers" (trim $init)
  "volumes" (toYaml (get $weights "volumes" | default list))
  "annotations" (get $weights "annotations" | default dict)
  "containers" $container -}}
{{- with .role }}{{ $_ := set $pod "role" . }}{{ end -}}
{{- with $phase }}{{ $_ := set $pod "labels" (dict "llm-d.ai/role" .) }}{{ end -}}
{{- include "llm.pod.template" $pod -}}
{{- end -}}

{{/*
llm.serve.vllmPort: the port vLLM listens on: serving.port, or behind a
decode server's routing sidecar, 8200, as llm-d runs it. Inputs (dict):
root, phase.
*/}}
{{- define "llm.serve.vllmPort" -}}
{{- ternary 8200 (int .root.Values.serving.port) (eq .phase "decode") -}}
{{- end -}}

{{/*
llm.serve.weights: what a server pod needs to read a mounted bucket
(serving.weights.from mount), as YAML {volumes, mounts, annotations}:
Cloud Storage FUSE's inline volume for gs:// (its sidecar, which GKE's
webhook adds to pods annotated gke-gcsfuse/volumes, with no limits of its
own, as Google's vLLM samples run it; a file cache on the node's ephemeral
storage; only the prefix's folder, its listings cached for the life of the
mount), or the claim of Mountpoint for S3's volume for s3://
(serve-weights.yaml). Empty otherwise.
Inputs (dict): root, ctx, serve (llm.serve).
*/}}
{{- define "llm.serve.weights" -}}
{{- $b := .serve.bucket -}}
{{- if eq (get $b "from") "mount" -}}
mounts:
  - name: weights
    mountPath: {{ $b.mountPath }}
    readOnly: true
volumes:
  {{- if eq $b.scheme "gs" }}
  - name: weights
    csi:
      driver: gcsfuse.csi.storage.gke.io
      readOnly: true
      volumeAttributes:
        bucketName: {{ $b.name | quote }}
        {{- $options := list "implicit-dirs" "metadata-cache:ttl-secs:-1" "metadata-cache:stat-cache-max-size-mb:-1"
            "metadata-cache:type-cache-max-size-mb:-1" "file-cache:max-size-mb:-1"
            "file-cache:cache-file-for-range-read:true" "file-cache:enable-parallel-downloads:true" }}
        {{- with $b.prefix }}{{ $options = append $options (printf "only-dir=%s" .) }}{{ end }}
        mountOptions: {{ join "," $options | quote }}
  - name: gke-gcsfuse-cache
    emptyDir: {}
  {{- else }}
  - name: weights
    persistentVolumeClaim:
      claimName: {{ printf "%s-weights" .ctx.name }}
      readOnly: true
  {{- end }}
{{- if eq $b.scheme "gs" }}
annotations:
  gke-gcsfuse/volumes: "true"
  gke-gcsfuse/cpu-limit: "0"
  gke-gcsfuse/memory-limit: "0"
  gke-gcsfuse/ephemeral-storage-limit: "0"
{{- end }}
{{- end -}}
{{- end -}}

{{/*
llm.serve.endpoints: the labels that select the server pods that answer
HTTP: every server of a Deployment, a LeaderWorkerSet's leaders (its
workers only compute), or every pod of prefill and decode servers across
nodes (each answers for its node). Inputs (dict): root, ctx, serve
(llm.serve).
*/}}
{{- define "llm.serve.endpoints" -}}
{{- if and .serve.lws (not .serve.disaggregated) -}}
leaderworkerset.sigs.k8s.io/name: {{ .ctx.name }}
llmrender.dev/role: leader
{{- else -}}
{{- include "llm.serve.selector" .root }}
{{- end -}}
{{- end -}}

{{/*
llm.serve.pickerQueue: the PromQL sum of the requests the endpoint picker
holds for the release's InferencePool (its flow control queue).
Input: the chart root.
*/}}
{{- define "llm.serve.pickerQueue" -}}
{{- $c := include "llm.ctx" . | fromYaml -}}
{{- printf "sum(inference_extension_flow_control_queue_size{namespace=%q,inference_pool=%q})" .Release.Namespace $c.name -}}
{{- end -}}

{{/*
llm.serve.selector: the labels that select every server pod of the
release. Input: the chart root.
*/}}
{{- define "llm.serve.selector" -}}
app.kubernetes.io/name: llm
app.kubernetes.io/instance: {{ .Release.Name | quote }}
app.kubernetes.io/component: run
{{- end -}}

{{/*
llm.serve.wakeQuery: the PromQL query that wakes servers scaled to zero:
serving.autoscaling.wakeQuery, or the requests the endpoint picker holds for
the pool when its flow control is on; empty when neither is there.
Inputs: the root.
*/}}
{{- define "llm.serve.wakeQuery" -}}
{{- $ip := .Values.serving.inferencePool -}}
{{- if .Values.serving.autoscaling.wakeQuery -}}
{{- .Values.serving.autoscaling.wakeQuery -}}
{{- else if and $ip.enabled $ip.flowControl -}}
{{- include "llm.serve.pickerQueue" . -}}
{{- end -}}
{{- end -}}

{{/*
llm.serve.gatewayProvider: the gateway implementation the pool's route is
written for: serving.inferencePool.provider, or gke on a GKE profile and
none elsewhere. It decides what the route may carry and which policies
come beside it, as the extension's own chart decides on its provider.name
(v1.5.0 config/charts/inferencepool). Inputs (dict): root, ctx.
*/}}
{{- define "llm.serve.gatewayProvider" -}}
{{- .root.Values.serving.inferencePool.provider | default (ternary "gke" "none" (eq (get .ctx.acc "platform") "GKE")) -}}
{{- end -}}

{{/*
llm.serve.requestSeconds: how long a request may take end to end, in
seconds: serving.inferencePool.requestTimeout (a Gateway API duration,
rounded up to whole seconds), or 300, plus a server's start-up allowance
when servers scale to zero (a request that wakes them waits for a start).
Inputs (dict): root, serve (llm.serve).
*/}}
{{- define "llm.serve.requestSeconds" -}}
{{- $a := .root.Values.serving.autoscaling -}}
{{- $given := .root.Values.serving.inferencePool.requestTimeout -}}
{{- if $given -}}
{{- $ms := 0 -}}
{{- range regexFindAll "[0-9]+(ms|h|m|s)" $given -1 -}}
{{- $n := int (regexFind "^[0-9]+" .) -}}
{{- $unit := regexFind "[a-z]+$" . -}}
{{- $ms = add $ms (mul $n (get (dict "ms" 1 "s" 1000 "m" 60000 "h" 3600000) $unit)) -}}
{{- end -}}
{{- div (add $ms 999) 1000 -}}
{{- else -}}
{{- $toZero := and (eq $a.kind "keda") (eq (int $a.minReplicas) 0) -}}
{{- add 300 (ternary (mul (int .serve.startupMinutes) 60) 0 $toZero) -}}
{{- end -}}
{{- end -}}
