{{/*
llm.rules.credentials: LR009's credential check for plain Helm, over every
key and string of the values (input: the values). The patterns are
llmrender's own (internal/redact); a test ties the two. Each pattern runs
over the values printed as text (keys and strings as written: JSON would
escape a newline and hide the word boundary after it), and only when the
text holds one of its hints (a literal every match contains): most values
hold none, and a regular expression over all of them is most of a render's
time. Only when one matches are the values walked to name the value.
*/}}
{{- define "llm.rules.credentials" -}}
{{- $text := toString . -}}
{{- $lower := "" -}}
{{- range include "llm.rules.patterns" "" | fromJsonArray -}}
{{- $p := . -}}
{{- $hinted := false -}}
{{- range index $p 2 }}{{ if contains . $text }}{{ $hinted = true }}{{ end }}{{ end -}}
{{- if $hinted -}}
{{- if index $p 3 }}{{ if not $lower }}{{ $lower = lower $text }}{{ end }}{{ end -}}
{{- if regexMatch (index $p 0) (ternary $lower $text (index $p 3)) -}}
{{- include "llm.rules.find" (dict "value" $ "path" "") -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/*
llm.rules.patterns: LR009's patterns as JSON: each is the expression, what
it finds, its hints, and whether it runs over the text in lower case (the
expression is then written in lower case; a literal prefix such as "http"
lets the expression skip ahead where "(?i)" would not).
*/}}
{{- define "llm.rules.patterns" -}}
{{- toJson (list
  (list `\bhf_[A-Za-z0-9]{30,}` "a Hugging Face token" (list "hf_") false)
  (list `\b(AKIA|ASIA)[A-Z0-9]{16}\b` "an AWS access key" (list "AKIA" "ASIA") false)
  (list `-----BEGIN [A-Z ]*PRIVATE KEY-----` "a private key" (list "-----BEGIN ") false)
  (list `\bgh[pousr]_[A-Za-z0-9]{36,}` "a GitHub token" (list "ghp_" "gho_" "ghu_" "ghs_" "ghr_") false)
  (list `\bgithub_pat_[A-Za-z0-9_]{36,}` "a GitHub token" (list "github_pat_") false)
  (list `https?://[^\s]*[?&](x-amz-signature|signature|sig|policy|key-pair-id|x-goog-signature)=` "a signed URL" (list "://") true)) -}}
{{- end -}}

{{/* llm.rules.find: walks the values to the credential and fails, naming it. Inputs (dict): value, path. */}}
{{- define "llm.rules.find" -}}
{{- if kindIs "map" .value -}}
{{- range $k, $e := .value -}}
{{- $path := printf "%s/%s" $.path $k -}}
{{- include "llm.rules.credential" (dict "text" $k "path" $path) -}}
{{- include "llm.rules.find" (dict "value" $e "path" $path) -}}
{{- end -}}
{{- else if kindIs "slice" .value -}}
{{- range $i, $e := .value -}}
{{- include "llm.rules.find" (dict "value" $e "path" (printf "%s/%d" $.path $i)) -}}
{{- end -}}
{{- else if kindIs "string" .value -}}
{{- include "llm.rules.credential" (dict "text" .value "path" .path) -}}
{{- end -}}
{{- end -}}

{{/* llm.rules.credential: fails when one string looks like a credential. Inputs (dict): text, path. */}}
{{- define "llm.rules.credential" -}}
{{- range include "llm.rules.patterns" "" | fromJsonArray -}}
{{- if regexMatch (index . 0) (ternary (lower $.text) $.text (index . 3)) -}}
{{- fail (printf
    "LR009: %s: this looks like %s; never put credentials in values (they would be rendered into the manifests): store it in a Secret and reference the Secret"
    $.path (index . 1)) -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* llm.or, llm.and: a list of names as people write it ("a, b or c",
"a, b and c"). Input: the list. */}}
{{- define "llm.or" -}}{{ include "llm.joinLast" (dict "names" . "last" " or ") }}{{- end -}}
{{- define "llm.and" -}}{{ include "llm.joinLast" (dict "names" . "last" " and ") }}{{- end -}}
{{- define "llm.joinLast" -}}
{{- if lt (len .names) 2 -}}
{{- join "" .names -}}
{{- else -}}
{{- join ", " (initial .names) }}{{ .last }}{{ last .names -}}
{{- end -}}
{{- end -}}

{{/*
llm.rules.serve: the serving rules plain Helm can decide (LR014, LR021,
LR009 for a server that downloads), with llmrender's messages, as a JSON
list of failures. rules/serve.go is the other copy. The parts below check
a subject each, in this order, on a state dict they share: root, ctx,
waived, failures (each part appends to it), p (llm.serve: the server the
part checks), and, for each server, its sizes (nodesAt, heads, kvHeads,
tp, pp, procs) and servers (every role's, llm.serve.servers).
Inputs (dict): root, ctx, waived.
*/}}
{{- define "llm.rules.serve" -}}
{{- $c := .ctx -}}
{{- $st := dict "root" .root "ctx" $c "waived" .waived "failures" list -}}
{{- if eq $c.mode "serve" -}}
{{- $_ := set $st "p" (include "llm.serve" (dict "root" .root "ctx" $c) | fromJson) -}}
{{- include "llm.rules.serve.release" $st -}}
{{- if not (has "LR021" .waived) -}}
{{- /* Each role's servers when prefill and decode are apart (a failure
both share is said once). The last one's stays in p for LR009 below. */ -}}
{{- $s := .root.Values.serving -}}
{{- $m := $c.model -}}
{{- $_ := set $st "servers" (include "llm.serve.servers" (dict "root" .root "ctx" $c) | fromJsonArray) -}}
{{- range $st.servers -}}
{{- $p := .serve -}}
{{- $nodesAt := "/workload/nodes" -}}
{{- if .phase }}{{ if gt (int (get $s.disaggregation .phase).nodes) 0 }}{{ $nodesAt = printf "/serving/disaggregation/%s/nodes" .phase }}{{ end }}{{ end -}}
{{- $heads := int (get $m "heads" | default 0) -}}
{{- $_ := set $st "p" $p -}}
{{- $_ := set $st "nodesAt" $nodesAt -}}
{{- $_ := set $st "heads" $heads -}}
{{- $_ := set $st "kvHeads" (int (get $m "kvHeads" | default $heads)) -}}
{{- $_ := set $st "tp" (int $p.tp) -}}
{{- $_ := set $st "pp" (int $p.pp) -}}
{{- $_ := set $st "procs" (mul (int $p.nodes) (int $c.procsPerNode)) -}}
{{- include "llm.rules.serve.build" $st -}}
{{- include "llm.rules.serve.tensor" $st -}}
{{- include "llm.rules.serve.weights" $st -}}
{{- include "llm.rules.serve.experts" $st -}}
{{- include "llm.rules.serve.limits" $st -}}
{{- include "llm.rules.serve.speculative" $st -}}
{{- include "llm.rules.serve.disaggregation" $st -}}
{{- end -}}
{{- end -}}
{{- $m := $c.model -}}
{{- if and $st.p.pulls (get $m "gated") (not (get (.root.Values.download.tokenSecret | default dict) "name"))
    (not (has "LR009" .waived)) -}}
{{- $_ := set $st "failures" (append $st.failures
    (printf "LR009: /model/name: %s is gated on Hugging Face and the server downloads it: accept its licence and reference a token Secret (download.tokenSecret.name)"
    (get $m "hfRepo"))) -}}
{{- end -}}
{{- end -}}
{{- toJson (uniq $st.failures) -}}
{{- end -}}

{{/*
llm.rules.serve.release: LR014 for the release as a whole: a training
workload in mode serve, an InferencePool without its Gateway, servers
scaled to zero with nothing to wake them. Input: the state of
llm.rules.serve (root, ctx, waived, failures); output: none, it appends
to failures.
*/}}
{{- define "llm.rules.serve.release" -}}
{{- $v := .root.Values -}}
{{- $s := $v.serving -}}
{{- $failures := .failures -}}
{{- if and (ne $v.workload.type "inference") (not (has "LR014" .waived)) -}}
{{- $training := list -}}
{{- include "llm.modes" .root -}}
{{- range .root.llmModes }}{{ if ne .launcher "server" }}{{ $training = append $training .name }}{{ end }}{{ end -}}
{{- $failures = append $failures
    (printf "LR014: /workload/type: mode serve runs an inference server; a %s workload needs a training mode (%s)"
    $v.workload.type (join ", " $training)) -}}
{{- end -}}
{{- if and $s.inferencePool.enabled (not $s.inferencePool.gateway.name) (not (has "LR014" .waived)) -}}
{{- $failures = append $failures
    "LR014: /serving/inferencePool/gateway/name: the HTTPRoute to the InferencePool attaches to a Gateway of yours: name it (a gateway that implements the Inference Extension: GKE's, Istio, kgateway, Envoy AI Gateway, NGINX Gateway Fabric, agentgateway)" -}}
{{- end -}}
{{- $a := $s.autoscaling -}}
{{- if and (has $a.kind (list "hpa" "keda")) (eq (int $a.minReplicas) 0) (not (has "LR014" .waived)) -}}
{{- if ne $a.kind "keda" -}}
{{- $failures = append $failures
    "LR014: /serving/autoscaling/minReplicas: an HPA keeps at least one server (0 needs Kubernetes' HPAScaleToZero feature gate, and a metric that exists when no server does); scale to zero with serving.autoscaling.kind: keda and a wakeQuery" -}}
{{- else if not (include "llm.serve.wakeQuery" .root) -}}
{{- $failures = append $failures
    "LR014: /serving/autoscaling/wakeQuery: with minReplicas 0 the servers' metrics go with the last server, and nothing would start one again: give a PromQL query that is above 0 while requests wait in front of the servers (the gateway's, router's or endpoint picker's metric), or hold them in the endpoint picker (serving.inferencePool.flowControl)" -}}
{{- end -}}
{{- end -}}
{{- $_ := set $ "failures" $failures -}}
{{- end -}}

{{/*
llm.rules.serve.build: LR021 for the model and the engine's build: a model
a server can load, a build for the platform, and one that spans the nodes
and pipeline stages asked for. Input: the state of llm.rules.serve, with
one server's p and sizes; output: none, it appends to failures.
*/}}
{{- define "llm.rules.serve.build" -}}
{{- $v := .root.Values -}}
{{- $s := $v.serving -}}
{{- $p := .p -}}
{{- $failures := .failures -}}
{{- if not (get .ctx.model "hfRepo") -}}
{{- $failures = append $failures
    (printf "LR021: /model/name: %s has no Hugging Face repository, so no server can load it" $v.model.name) -}}
{{- else if eq $v.model.format "meta" -}}
{{- $failures = append $failures "LR021: /model/format: vLLM and SGLang load Hugging Face checkpoints; use model.format: hf" -}}
{{- end -}}
{{- if not $p.build -}}
{{- $failures = append $failures
    (printf "LR021: /serving/engine: %s has no build for %s (%s accelerators); builds: %s" $s.engine
    $v.accelerator.profile $p.platform
    (keys (get (get $v.catalog.servers $s.engine | default dict) "platforms" | default dict) | sortAlpha | join ", ")) -}}
{{- else if and $p.lws (not (get $p.build "multiNode")) -}}
{{- $failures = append $failures
    (printf "LR021: %s: %s on %s serves from one node; a server cannot span %d nodes (use serving.replicas for more servers)"
    .nodesAt $s.engine $p.platform (int $p.nodes)) -}}
{{- else if and (gt .pp 1) (not (get $p.build "pipeline")) -}}
{{- $failures = append $failures
    (printf "LR021: /serving/pipelineParallel: %s on %s has no pipeline parallelism; use serving.pipelineParallel: 1"
    $s.engine $p.platform) -}}
{{- end -}}
{{- $_ := set $ "failures" $failures -}}
{{- end -}}

{{/*
llm.rules.serve.tensor: LR021 for the tensor parallel size: it divides the
attention heads, and the KV heads and it divide one another, and tensor x
pipeline parallel is the server's devices. Input: the state of
llm.rules.serve, with one server's p and sizes; output: none, it appends
to failures.
*/}}
{{- define "llm.rules.serve.tensor" -}}
{{- $v := .root.Values -}}
{{- $c := .ctx -}}
{{- $p := .p -}}
{{- $heads := .heads -}}
{{- $kvHeads := .kvHeads -}}
{{- $tp := .tp -}}
{{- $pp := .pp -}}
{{- $failures := .failures -}}
{{- /* A tensor parallel size derived from the hardware is the devices'
doing: point there, and say which device counts would do. */ -}}
{{- $tpAt := "/serving/tensorParallel" -}}
{{- $tpWhy := "" -}}
{{- $fix := "set serving.tensorParallel (and serving.pipelineParallel) so that it does" -}}
{{- if le (int $v.serving.tensorParallel) 0 -}}
{{- $tpAt = ternary "/accelerator/profile" "/accelerator/devices" $c.devicesFromProfile -}}
{{- $tpWhy = printf " (a node's %d %s, as serving.tensorParallel 0 derives it)" (int $c.procsPerNode)
    (ternary "logical NeuronCores" "devices" $c.neuron) -}}
{{- $perDevice := div (int $c.procsPerNode) (int $c.devices) -}}
{{- $ok := list -}}
{{- range $i := until (int $c.acc.devicesPerNode) -}}
{{- $d := sub (int $c.acc.devicesPerNode) $i -}}
{{- $t := mul $d $perDevice -}}
{{- if and (gt $heads 0) (eq (mod $heads $t) 0)
    (or (le $kvHeads 0) (eq (mod (max $kvHeads $t) (min $kvHeads $t)) 0)) }}{{ $ok = append $ok (toString $d) }}{{ end -}}
{{- end -}}
{{- $fix = printf "request a number of devices per node whose tensor parallel size does%s"
    (ternary (printf " (accelerator.devices: %s)" (join ", " $ok)) "" (gt (len $ok) 0)) -}}
{{- end -}}
{{- if and (gt $heads 0) (ne (mod $heads $tp) 0) -}}
{{- $failures = append $failures
    (printf "LR021: %s: tensor parallel size %d%s does not divide the %d attention heads of %s: each device must hold whole heads; %s"
    $tpAt $tp $tpWhy $heads $v.model.name $fix) -}}
{{- else if and (gt $kvHeads 0) (ne (mod (max $kvHeads $tp) (min $kvHeads $tp)) 0) -}}
{{- $failures = append $failures
    (printf "LR021: %s: tensor parallel size %d%s and the %d KV heads of %s do not divide one another: the KV heads cannot be split or copied evenly; %s"
    $tpAt $tp $tpWhy $kvHeads $v.model.name $fix) -}}
{{- end -}}
{{- if and $c.acc.resource (ne (mul $tp $pp (int $p.dp)) .procs) -}}
{{- $failures = append $failures
    (printf "LR021: /serving/tensorParallel: tensor x pipeline parallel is %d x %d = %d, but the server gets %d node(s) x %d = %d devices"
    $tp $pp (mul $tp $pp) (int $p.nodes) (int $c.procsPerNode) .procs) -}}
{{- end -}}
{{- $_ := set $ "failures" $failures -}}
{{- end -}}

{{/*
llm.rules.serve.weights: LR021 for weights in a bucket (rules/serve.go:
weightsShape). Input: the state of llm.rules.serve, with one server's p;
output: none, it appends to failures.
*/}}
{{- define "llm.rules.serve.weights" -}}
{{- $v := .root.Values -}}
{{- $acc := .ctx.acc -}}
{{- $p := .p -}}
{{- $w := $v.serving.weights -}}
{{- $failures := .failures -}}
{{- if and $w.from (not $w.uri) -}}
{{- $failures = append $failures
    (printf "LR021: /serving/weights/uri: serving.weights.from %s reads the checkpoint's folder in a bucket: give it as s3://BUCKET/PREFIX or gs://BUCKET/PREFIX"
    $w.from) -}}
{{- else if and (eq $w.from "stream") (not (has $p.platform (list "gpu" "rocm"))) -}}
{{- $failures = append $failures
    (printf "LR021: /serving/weights/from: the Run:ai Model Streamer loads into GPU memory through vLLM's or SGLang's CUDA and ROCm builds; %s on %s loads from files: use serving.weights.from mount, or a claim"
    $v.serving.engine $p.platform) -}}
{{- else if and (eq $w.from "mount") (hasPrefix "gs://" $w.uri) (get $acc "platform") (ne (get $acc "platform") "GKE") -}}
{{- $failures = append $failures
    (printf "LR021: /serving/weights/uri: a gs:// bucket is mounted by Cloud Storage FUSE, GKE's CSI driver, and %s runs on %s: stream it (serving.weights.from stream), or keep the weights in an s3:// bucket or a claim"
    $v.accelerator.profile (get $acc "platform")) -}}
{{- end -}}
{{- $_ := set $ "failures" $failures -}}
{{- end -}}

{{/*
llm.rules.serve.experts: LR021 for data-parallel attention, experts and
LoRA adapters (rules/serve.go: dataParallelShape, loraShape). Input: the
state of llm.rules.serve, with one server's p and sizes; output: none, it
appends to failures.
*/}}
{{- define "llm.rules.serve.experts" -}}
{{- $v := .root.Values -}}
{{- $s := $v.serving -}}
{{- $p := .p -}}
{{- $failures := .failures -}}
{{- $experts := int (get .ctx.model "experts" | default 0) -}}
{{- if $p.dataParallelAttention -}}
{{- if le $experts 1 -}}
{{- $failures = append $failures
    (printf "LR021: /serving/dataParallelAttention: data-parallel attention serves a mixture-of-experts model, whose experts spread over the ranks; %s is dense: serve more copies of it with serving.replicas"
    $v.model.name) -}}
{{- else if ne $p.platform "gpu" -}}
{{- $failures = append $failures
    (printf "LR021: /serving/dataParallelAttention: data-parallel attention runs on GPUs; %s has %s accelerators"
    $v.accelerator.profile $p.platform) -}}
{{- else if eq $s.expertParallel "off" -}}
{{- $failures = append $failures
    "LR021: /serving/expertParallel: data-parallel attention spreads the experts over the ranks (expert parallelism); leave serving.expertParallel at auto or on" -}}
{{- end -}}
{{- range list "tensorParallel" "pipelineParallel" -}}
{{- if gt (int (get $s .)) 0 -}}
{{- $failures = append $failures
    (printf "LR021: /serving/%s: with data-parallel attention each of the %d devices is a rank of its own; leave serving.%s at 0 (or set serving.dataParallelAttention: off)"
    . (int $p.dp) .) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- if and $p.expertParallel (gt $experts 0) (ne (mod $experts (mul .tp $p.dp)) 0) -}}
{{- $failures = append $failures
    (printf "LR021: %s: the %d experts of %s do not spread evenly over %d devices: choose a device count that divides them, or serving.expertParallel: off"
    (ternary "/serving/expertParallel" "/accelerator/devices" (eq $s.expertParallel "on")) $experts $v.model.name
    (mul .tp $p.dp)) -}}
{{- end -}}
{{- if and $p.adapters $p.build (not (get $p.build "lora")) -}}
{{- $failures = append $failures
    (printf "LR021: /serving/lora/adapters: %s on %s serves no LoRA adapters; serve them on GPUs, or merge the adapter into the weights"
    $s.engine $p.platform) -}}
{{- end -}}
{{- $names := list $p.servedName -}}
{{- range $i, $a := $p.adapters -}}
{{- if has $a.name $names -}}
{{- $failures = append $failures
    (printf "LR021: /serving/lora/adapters/%d/name: %s is also the name of the base model or of an adapter before it: clients could not tell them apart; name it otherwise"
    $i $a.name) -}}
{{- end -}}
{{- $names = append $names $a.name -}}
{{- end -}}
{{- $_ := set $ "failures" $failures -}}
{{- end -}}

{{/*
llm.rules.serve.limits: LR021 for what the model bounds: pipeline stages
(its layers) and the longest sequence (its context length). Input: the
state of llm.rules.serve, with one server's p and sizes; output: none, it
appends to failures.
*/}}
{{- define "llm.rules.serve.limits" -}}
{{- $v := .root.Values -}}
{{- $m := .ctx.model -}}
{{- $p := .p -}}
{{- $failures := .failures -}}
{{- if gt .pp (int (get $m "layers" | default .pp)) -}}
{{- $failures = append $failures
    (printf "LR021: /serving/pipelineParallel: %d pipeline stages for the %d layers of %s" .pp (int (get $m "layers"))
    $v.model.name) -}}
{{- end -}}
{{- with get $m "contextLength" -}}
{{- if gt (int $p.maxModelLen) (int .) -}}
{{- $failures = append $failures
    (printf "LR021: /serving/maxModelLen: %d tokens, but %s's context length is %d" (int $p.maxModelLen) $v.model.name
    (int .)) -}}
{{- end -}}
{{- end -}}
{{- $_ := set $ "failures" $failures -}}
{{- end -}}

{{/*
llm.rules.serve.speculative: LR021 and LR011 for speculative decoding
(rules/speculative.go), then LR021 for the autoscaler's bounds. Input: the
state of llm.rules.serve, with one server's p; output: none, it appends to
failures.
*/}}
{{- define "llm.rules.serve.speculative" -}}
{{- $v := .root.Values -}}
{{- $s := $v.serving -}}
{{- $m := .ctx.model -}}
{{- $p := .p -}}
{{- $sp := $s.speculative -}}
{{- $failures := .failures -}}
{{- if ne $sp.method "none" -}}
{{- if not (has $p.platform (list "gpu" "rocm")) -}}
{{- $failures = append $failures
    (printf "LR021: /serving/speculative/method: speculative decoding is rendered for vLLM and SGLang on GPUs; %s has %s accelerators: set serving.speculative.method: none"
    $v.accelerator.profile $p.platform) -}}
{{- end -}}
{{- if and (eq $sp.method "mtp") (not (gt (int (get $m "mtpLayers" | default 0)) 0)) -}}
{{- $failures = append $failures
    (printf "LR021: /serving/speculative/method: %s ships no multi-token-prediction layers (its catalog entry has no mtpLayers): use method draft with a smaller model of its vocabulary, or ngram"
    $v.model.name) -}}
{{- end -}}
{{- if eq $sp.method "draft" -}}
{{- $d := get $v.catalog.models $sp.draft.model -}}
{{- if not $sp.draft.model -}}
{{- $failures = append $failures
    "LR021: /serving/speculative/method: method draft needs the draft model: the name of its catalog.models entry (a smaller model of the same vocabulary)" -}}
{{- else if not $d -}}
{{- $failures = append $failures
    (printf "LR011: /serving/speculative/draft/model: draft model %q is not in catalog.models" $sp.draft.model) -}}
{{- else if and (get $d "vocab") (get $m "vocab") (ne (int $d.vocab) (int $m.vocab)) -}}
{{- $failures = append $failures
    (printf "LR021: /serving/speculative/draft/model: the draft %s has a vocabulary of %d tokens and %s one of %d: the engine checks the draft's tokens against the model's, so both need one tokenizer"
    $sp.draft.model (int $d.vocab) $v.model.name (int $m.vocab)) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- if and (ne $s.autoscaling.kind "none") (gt (int $s.autoscaling.minReplicas) (int $s.autoscaling.maxReplicas)) -}}
{{- $failures = append $failures
    (printf "LR021: /serving/autoscaling/minReplicas: %d is more than maxReplicas %d" (int $s.autoscaling.minReplicas)
    (int $s.autoscaling.maxReplicas)) -}}
{{- end -}}
{{- $_ := set $ "failures" $failures -}}
{{- end -}}

{{/*
llm.rules.serve.disaggregation: LR021, LR014 and LR019 for prefill and
decode apart (rules/serve.go disaggregationShape): vLLM, the endpoint
picker, one kind of server for both roles, no autoscaler, free ports and
an RDMA fabric. Input: the state of llm.rules.serve, with one server's p
and sizes, and servers; output: none, it appends to failures.
*/}}
{{- define "llm.rules.serve.disaggregation" -}}
{{- $v := .root.Values -}}
{{- $c := .ctx -}}
{{- $s := $v.serving -}}
{{- $p := .p -}}
{{- $failures := .failures -}}
{{- if $p.disaggregated -}}
{{- if ne $s.engine "vllm" -}}
{{- $failures = append $failures
    (printf "LR021: /serving/disaggregation/enabled: prefill and decode apart run vLLM's NixlConnector, as llm-d's P/D path does; %s's disaggregation is not rendered: use serving.engine vllm"
    $s.engine) -}}
{{- end -}}
{{- if not $s.inferencePool.enabled -}}
{{- $failures = append $failures
    "LR014: /serving/disaggregation/enabled: prefill and decode servers are paired per request by llm-d's endpoint picker, which serves an InferencePool: set serving.inferencePool.enabled and its gateway" -}}
{{- end -}}
{{- /* Both roles of one node (tensor-parallel), or both across nodes (data-parallel). */ -}}
{{- $pn := int (index .servers 0).serve.nodes -}}
{{- $dn := int (index .servers 1).serve.nodes -}}
{{- if ne (eq $pn 1) (eq $dn 1) -}}
{{- $mixAt := "/workload/nodes" -}}
{{- if gt (int $s.disaggregation.prefill.nodes) 0 }}{{ $mixAt = "/serving/disaggregation/prefill/nodes" }}{{ end -}}
{{- if gt (int $s.disaggregation.decode.nodes) 0 }}{{ $mixAt = "/serving/disaggregation/decode/nodes" }}{{ end -}}
{{- $failures = append $failures
    (printf "LR014: %s: prefill servers of %d node%s and decode servers of %d node%s: a server of one node is tensor-parallel (llm-d's P/D path) and one across nodes data-parallel (its wide expert-parallel path), and the two kinds are not rendered together: give both roles one node, or both two or more"
    $mixAt $pn (ternary "" "s" (eq $pn 1)) $dn (ternary "" "s" (eq $dn 1))) -}}
{{- end -}}
{{- if and (gt (int $p.nodes) 1) (not $p.dataParallelAttention) -}}
{{- if gt (int (get $c.model "experts" | default 0)) 1 -}}
{{- $failures = append $failures
    "LR014: /serving/dataParallelAttention: prefill and decode servers across nodes are data-parallel with their experts spread over every device, as llm-d's wide expert-parallel path runs them: leave serving.dataParallelAttention at auto or on" -}}
{{- else -}}
{{- $failures = append $failures
    (printf "LR014: %s: prefill and decode servers span nodes only for a mixture-of-experts model (llm-d's wide expert parallelism), and %s is dense: serve it with one node a server"
    .nodesAt $v.model.name) -}}
{{- end -}}
{{- end -}}
{{- if ne $s.autoscaling.kind "none" -}}
{{- $failures = append $failures
    "LR014: /serving/autoscaling/kind: prefill and decode servers have counts of their own (serving.disaggregation.prefill.replicas, decode.replicas); an autoscaler of the release's one server count is not rendered beside them: set kind none" -}}
{{- end -}}
{{- if and (eq $s.dataParallelAttention "on") (eq (int $p.nodes) 1) -}}
{{- $failures = append $failures
    "LR014: /serving/dataParallelAttention: prefill and decode servers of one node are tensor-parallel, as llm-d's P/D path runs them: set dataParallelAttention auto or off, or serve across nodes (workload.nodes) as its wide expert-parallel path does" -}}
{{- end -}}
{{- if eq (int $s.port) 8200 -}}
{{- $failures = append $failures
    "LR021: /serving/port: a decode server's vLLM listens on 8200 behind its routing sidecar on serving.port: choose another serving.port" -}}
{{- else if has (int $s.disaggregation.sideChannelPort) (list (int $s.port) 8200) -}}
{{- $failures = append $failures
    (printf "LR021: /serving/disaggregation/sideChannelPort: %d is taken by the server (serving.port %d, a decode server's vLLM 8200): choose another port for NIXL's side channel"
    (int $s.disaggregation.sideChannelPort) (int $s.port)) -}}
{{- end -}}
{{- if ne (get (get $v.catalog.fabrics $c.fabric.kind | default dict) "nixlBackend" | default "") "UCX" -}}
{{- $failures = append $failures
    (printf "LR019: /serving/disaggregation/enabled: KV caches move between the prefill and decode servers over RDMA with NIXL's UCX backend, and %s's fabric in use (%s) offers none: use a profile with GPUDirect RDMA or InfiniBand"
    $v.accelerator.profile ($c.fabric.kind | default "none")) -}}
{{- end -}}
{{- end -}}
{{- $_ := set $ "failures" $failures -}}
{{- end -}}
