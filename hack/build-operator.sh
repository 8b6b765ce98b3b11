#!/usr/bin/env bash
# Builds an operator's binaries (or another tool's, such as kpt) from its Go
# module at a pinned version, for the e2e suite. The module is copied from the module
# cache to SRC (a fresh, writable copy every time: its replace directives only
# apply when it is the main module, and some operators need the small source
# patches below), built there, smoke-checked, and only then moved to OUTDIR,
# so a failed build leaves no binary behind and `make` tries again.
#
# The patches make every listener bind 127.0.0.1 or not exist at all. Each one
# must find its target text exactly once, or the build fails: a new version
# cannot silently skip a patch. The Makefile names OUTDIR after a hash of
# this script, so that any change to it builds every tool it makes again.
#
# usage: hack/build-operator.sh MODULE VERSION SRC OUTDIR NAME=PACKAGE...
#   e.g. hack/build-operator.sh volcano.sh/volcano v1.10.0 "$TOOLS/src/volcano-v1.10.0" \
#          "$TOOLS/volcano-v1.10.0-KEY" vc-scheduler=./cmd/scheduler vc-controller-manager=./cmd/controller-manager
set -euo pipefail

fail() {
	echo "build-operator: $*" >&2
	exit 1
}

[[ $# -ge 5 ]] || fail "usage: $0 MODULE VERSION SRC OUTDIR NAME=PACKAGE..."
module=$1 version=$2 src=$3 outdir=$4
shift 4
GO=${GO:-go}
hack=$(cd "$(dirname "$0")" && pwd)

# replace FILE OLD NEW: OLD, a literal text, must occur exactly once in FILE.
replace() {
	local file=$1 old=$2 new=$3 text rest
	[[ -f $file ]] || fail "$module@$version: patch target file $file does not exist"
	text=$(cat "$file" && echo .)
	text=${text%.}
	rest=${text#*"$old"}
	[[ $rest != "$text" ]] || fail "$module@$version: patch target not found in $file: $old"
	[[ $rest != *"$old"* ]] || fail "$module@$version: patch target found more than once in $file: $old"
	printf '%s%s%s' "${text%%"$old"*}" "$new" "$rest" >"$file"
	echo "patched $file"
}

# The MPI Operator serves /healthz on a hard-coded ":8080" (all interfaces, no
# flag; a port already taken is fatal) and, with --monitoring-port, /metrics
# on all interfaces. Both move to 127.0.0.1, the health check to a free port
# the kernel picks, so that nothing else on the machine (another run, another
# operator's default :8080) can make it exit.
patch_mpi_operator() {
	replace cmd/mpi-operator/app/server.go 'healthCheckPort = 8080' 'healthCheckPort = 0'
	replace cmd/mpi-operator/app/server.go 'fmt.Sprintf(":%d", healthCheckPort)' 'fmt.Sprintf("127.0.0.1:%d", healthCheckPort)'
	replace cmd/mpi-operator/main.go 'fmt.Sprintf(":%d", monitoringPort)' 'fmt.Sprintf("127.0.0.1:%d", monitoringPort)'
}

# The training-operator starts its controllers only after a certificate
# rotator has filled a Secret that must already exist and a kubelet has
# mounted it as files, then serves validating webhooks on :9443 (all
# interfaces, host not configurable). Nothing calls those webhooks without a
# ValidatingWebhookConfiguration, so: no rotator (the certificates are ready
# at once), no webhook registered (so controller-runtime never starts the
# webhook server), and a readiness check that no longer asks for that server
# (asking would start it). Metrics and health probes have flags
# (--metrics-bind-address, --health-probe-bind-address; 0 disables).
patch_training_operator() {
	replace pkg/cert/cert.go \
		'func ManageCerts(mgr ctrl.Manager, cfg Config, setupFinished chan struct{}) error {' \
		'func ManageCerts(mgr ctrl.Manager, cfg Config, setupFinished chan struct{}) error {
	if true { // patched: no webhooks, no certificates
		return nil
	}'
	replace cmd/training-operator.v1/main.go 'defer close(certsReady)' 'close(certsReady) // patched: no certificates to wait for'
	replace cmd/training-operator.v1/main.go 'return mgr.GetWebhookServer().StartedChecker()(req)' 'return nil // patched: no webhook server'
	replace pkg/webhooks/webhooks.go 'func scaffold(manager.Manager) error {' \
		'// patched: register no webhook, so that no webhook server starts.
func init() {
	for kind := range SupportedSchemeWebhook {
		SupportedSchemeWebhook[kind] = scaffold
	}
}

func scaffold(manager.Manager) error {'
}

# Kueue reads every listener from its configuration file (webhook host and
# port, metrics and health addresses, pprof; "0" disables), but with its own
# certificate management off it always builds a watcher for metrics
# certificates at the hard-coded /etc/kueue/metrics/certs, and fails to start
# when they are not there. With metrics disabled there is nothing to serve
# them for: the watcher is built only when metrics are served.
patch_kueue() {
	replace cmd/kueue/main.go \
		'if cfg.InternalCertManagement == nil || !*cfg.InternalCertManagement.Enable {
		metricsCertPath' \
		'if (cfg.InternalCertManagement == nil || !*cfg.InternalCertManagement.Enable) && cfg.Metrics.BindAddress != "0" { // patched: no metrics, no metrics certificates
		metricsCertPath'
}

# The Inference Extension's endpoint picker serves its gRPC services (the
# ext-proc server and its health, through one helper) and its metrics on
# ":PORT", all interfaces; the ports are flags. Both move to 127.0.0.1.
patch_endpoint_picker() {
	replace internal/runnable/grpc.go 'fmt.Sprintf(":%d", port)' 'fmt.Sprintf("127.0.0.1:%d", port)'
	replace cmd/epp/runner/runner.go 'BindAddress: fmt.Sprintf(":%d", opts.MetricsPort)' 'BindAddress: fmt.Sprintf("127.0.0.1:%d", opts.MetricsPort)'
}

# llm-d's inference scheduler runs the Inference Extension's picker (its
# v1.4.0 module, a dependency) with its own plugins: the picker's gRPC and
# metrics listeners are patched as above, in a writable copy of that module
# the build is pointed at (a replace directive); its routing sidecar listens
# on ":PORT", patched to 127.0.0.1 unless LLMRENDER_POD_NETWORK is set (the
# simulated cluster's pods, each in a network namespace of its own). The
# module proxy does not serve
# llm-d-kv-cache v0.7.1, which only the precise-prefix-cache scorer and the
# tokenizer (and the context-length plugin that reads its tokens) import:
# they are left out of this build. The chart's P/D configuration uses none
# of them; a configuration that did would fail here with an unknown plugin.
patch_llm_d_scheduler() {
	local gie=sigs.k8s.io/gateway-api-inference-extension@v1.4.0 json dir
	json=$(cd "${TMPDIR:-/tmp}" && GOFLAGS=-mod=mod "$GO" mod download -json "$gie") || fail "go mod download $gie failed: $json"
	dir=$(sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p' <<<"$json")
	[[ -n $dir && -d $dir ]] || fail "go mod download $gie gave no directory"
	cp -R "$dir" _gie
	chmod -R u+w _gie
	replace _gie/internal/runnable/grpc.go 'fmt.Sprintf(":%d", port)' 'fmt.Sprintf("127.0.0.1:%d", port)'
	replace _gie/cmd/epp/runner/runner.go 'BindAddress: fmt.Sprintf(":%d", opts.MetricsPort)' 'BindAddress: fmt.Sprintf("127.0.0.1:%d", opts.MetricsPort)'
	"$GO" mod edit -replace sigs.k8s.io/gateway-api-inference-extension=./_gie
	replace pkg/sidecar/proxy/proxy_helpers.go 'net.Listen("tcp", ":"+s.config.Port)' 'net.Listen("tcp", listenHost()+":"+s.config.Port)'
	replace pkg/sidecar/proxy/proxy_helpers.go '	"syscall"
' '	"os"
	"syscall"
'
	replace pkg/sidecar/proxy/proxy_helpers.go '// startHTTP starts the HTTP reverse proxy.' '// listenHost (patched) is 127.0.0.1, unless LLMRENDER_POD_NETWORK says the
// sidecar runs in a pod network namespace of its own (the simulated
// cluster'"'"'s), where it listens on every interface of the pod, as in a pod.
func listenHost() string {
	if os.Getenv("LLMRENDER_POD_NETWORK") != "" {
		return ""
	}
	return "127.0.0.1"
}

// startHTTP starts the HTTP reverse proxy.'
	rm pkg/plugins/scorer/precise_prefix_cache.go
	replace pkg/plugins/register.go '	"github.com/llm-d/llm-d-inference-scheduler/pkg/plugins/multi"
' ''
	replace pkg/plugins/register.go '	"github.com/llm-d/llm-d-inference-scheduler/pkg/plugins/preparedata"
' ''
	replace pkg/plugins/register.go '	plugin.Register(scorer.PrecisePrefixCachePluginType, scorer.PrecisePrefixCachePluginFactory)
' ''
	replace pkg/plugins/register.go '	plugin.Register(preparedata.TokenizerPluginType, preparedata.TokenizerPluginFactory)
' ''
	replace pkg/plugins/register.go '	plugin.Register(multi.ContextLengthAwareType, multi.ContextLengthAwareFactory)
' ''
}

# NVIDIA's ComputeDomain controller opens no port unless asked
# (--http-endpoint) and elects no leader unless asked, but reads its object
# templates from /templates, where its image keeps them. They are embedded
# in the binary instead, so it runs from the tools folder.
patch_compute_domain_controller() {
	local cmd=cmd/compute-domain-controller
	mkdir "$cmd/templates"
	cp templates/compute-domain-*.tmpl.yaml "$cmd/templates/"
	printf '%s\n' 'package main' '' 'import "embed"' '' '//go:embed templates/*.tmpl.yaml' 'var embeddedTemplates embed.FS' >"$cmd/embedded_templates.go"
	replace "$cmd/daemonset.go" 'template.ParseFiles(DaemonSetTemplatePath)' 'template.ParseFS(embeddedTemplates, DaemonSetTemplatePath[1:])'
	replace "$cmd/resourceclaimtemplate.go" 'template.ParseFiles(templatePath)' 'template.ParseFS(embeddedTemplates, templatePath[1:])'
}

# Volcano's scheduler and controller-manager open no port unless asked
# (--enable-metrics, --enable-healthz, with address flags). KubeRay's metrics
# and probe addresses are flags (--metrics-addr, --health-probe-bind-address;
# 0 disables) and its webhook needs ENABLE_WEBHOOKS=true. JobSet, LWS and
# Kubeflow Trainer read the webhook server's host, port and certificates and
# the metrics and health addresses from their configuration files (Trainer's
# certificates from $TMPDIR/k8s-webhook-server/serving-certs), and Trainer's
# status server only runs behind its TrainJobStatus feature gate. None of
# these needs a patch.
# kpt is a command-line client that serves nothing; it is built from a copy
# only because the checksum database does not know this version (the caller
# sets GONOSUMDB for its module path).
case $module@$version in
github.com/kubeflow/mpi-operator@v0.8.0) patch=patch_mpi_operator ;;
github.com/kubeflow/training-operator@v1.9.2) patch=patch_training_operator ;;
sigs.k8s.io/kueue@v0.19.2) patch=patch_kueue ;;
sigs.k8s.io/gateway-api-inference-extension@v1.5.0) patch=patch_endpoint_picker ;;
sigs.k8s.io/dra-driver-nvidia-gpu@v0.4.1) patch=patch_compute_domain_controller ;;
github.com/llm-d/llm-d-inference-scheduler@v0.7.1) patch=patch_llm_d_scheduler ;;
volcano.sh/volcano@v1.10.0 | github.com/ray-project/kuberay/ray-operator@v1.6.0) patch=: ;;
github.com/GoogleContainerTools/kpt@v1.0.0-beta.54) patch=: ;;
sigs.k8s.io/jobset@v0.12.0 | sigs.k8s.io/lws@v0.9.0 | github.com/kubeflow/trainer/v2@v2.3.0) patch=: ;;
*) fail "$module@$version: no patch set is known for this version; review the listeners and add one (or : for none)" ;;
esac

json=$(cd "${TMPDIR:-/tmp}" && GOFLAGS=-mod=mod "$GO" mod download -json "$module@$version") ||
	fail "go mod download $module@$version failed: $json"
moddir=$(sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p' <<<"$json")
[[ -n $moddir && -d $moddir ]] || fail "go mod download $module@$version gave no directory: $json"

rm -rf "$src"
mkdir -p "$(dirname "$src")" "$outdir"
cp -R "$moddir" "$src"
chmod -R u+w "$src"
(cd "$src" && $patch)

names=() pkgs=()
for arg in "$@"; do
	[[ $arg == *=* ]] || fail "want NAME=PACKAGE, got $arg"
	names+=("${arg%%=*}")
	pkgs+=("${arg#*=}")
done

stage=$(mktemp -d "$outdir/.build.XXXXXX")
trap 'rm -rf "$stage"' EXIT
# One go build for all packages: they share the dependency graph. GOWORK=off
# and -buildvcs=false because the copy lives inside this repository's tree.
(cd "$src" && GOWORK=off "$GO" build -buildvcs=false -trimpath -ldflags "-s -w" -o "$stage/out/" "${pkgs[@]}")

mkdir "$stage/bin"
bins=()
for i in "${!pkgs[@]}"; do
	# go build -o DIR/ names a binary after the last element of its import path.
	path=${pkgs[i]#./}
	[[ $path != . ]] || path=$module
	built=$stage/out/${path##*/}
	[[ -f $built ]] || fail "go build did not produce $built for ${pkgs[i]}"
	mv "$built" "$stage/bin/${names[i]}"
	bins+=("$stage/bin/${names[i]}")
done
"$hack/smoke.sh" "${bins[@]}"
for name in "${names[@]}"; do
	mv -f "$stage/bin/$name" "$outdir/$name"
done
