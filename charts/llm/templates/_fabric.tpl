{{/*
llm.fabric: how an accelerator pod reaches the pods on other nodes, as
JSON. llm.ctx computes it once (ctx.fabric); llm.pod.template and
llm.container.main place it, so every accelerator pod of every mode
carries the same wiring. It branches once on the kind; images, NICs,
network names and NCCL settings are data (catalog.fabrics).

Output keys:
  kind            "" (none), gpudirect-tcpx, gpudirect-tcpxo, gpudirect-rdma, efa,
                  infiniband or mnnvl
  annotations     pod annotations: GKE multi-networking and device injection
  initContainers  what runs first: the NCCL plugin installer, then the
                  receive daemon as a native sidecar (restartPolicy: Always:
                  it runs beside the program, and a Job still completes)
  volumes         pod volumes
  mounts          volume mounts of the containers that run the model
  env             their environment (llm.env merges it under the user's)
  resources       device requests per pod (EFA or InfiniBand devices, huge
                  pages)
  capabilities    capabilities the model's containers add
  privileged      true in the host-network form, as the recipes run it
  hostNetwork     true in the host-network form
  claims          DRA claims (pod resourceClaims entries, each naming the
                  ResourceClaimTemplate that fabric.yaml renders, or that
                  the ComputeDomain's controller creates)
  profile         a script the program sources first (the plugin's NCCL
                  environment profile), or ""
  net             the network NCCL names when it uses this fabric
  guard           true when the run fails fast on NCCL's socket transport

Inputs (dict): root, acc (the profile), kind (the resolved fabric, "" for
none), tcp (true when the values opt out of the profile's fabric), name
(the release's object name).
*/}}
{{- define "llm.fabric" -}}
{{- $v := .root.Values -}}
{{- $out := dict "kind" .kind "annotations" dict "initContainers" list "volumes" list "mounts" list "env" list
    "resources" dict "capabilities" list "privileged" false "hostNetwork" false "claims" list "profile" "" "net" ""
    "guard" false -}}
{{- if .kind -}}
{{- $f := get $v.catalog.fabrics .kind -}}
{{- $neuron := hasPrefix "aws.amazon.com/neuron" .acc.resource -}}
{{- $_ := set $out "net" (get $f "ncclNet" | default "") -}}
{{- $_ := set $out "capabilities" (get $f "capabilities" | default list) -}}
{{- $_ := set $out "env" ((get $f "env") | default list) -}}
{{- if eq (get $f "platform") "GKE" -}}
{{- include "llm.fabric.gke" (dict "root" .root "f" $f "kind" .kind "out" $out "name" .name) -}}
{{- else if get $f "computeDomain" -}}
{{- /* Multi-node NVLink: each pod claims an IMEX channel from the template
the ComputeDomain's controller creates (fabric.yaml renders the domain). */ -}}
{{- $_ := set $out "claims" (list (dict "name" "imex-channel" "resourceClaimTemplateName" (printf "%s-imex-channel" .name))) -}}
{{- else -}}
{{- /* A fabric of devices (EFA, InfiniBand): every device of the machine
(efaDevices is the profiles' older name), and (EFA on GPUs) the huge pages
aws-ofi-nccl registers its buffers in. */ -}}
{{- $resources := dict (get $f "resource") (int (get .acc "fabricDevices" | default (get .acc "efaDevices") | default 1)) -}}
{{- with get .acc "efaHugepages" }}{{ $_ := set $resources "hugepages-2Mi" . }}{{ end -}}
{{- $_ := set $out "resources" $resources -}}
{{- end -}}
{{- /* The guard reads NCCL's own log; Trainium has no NCCL, and a fabric
with guard: false (multi-node NVLink) keeps NCCL's socket network. */ -}}
{{- if and $v.fabric.guard (not $neuron) (ne (toString (get $f "guard")) "false") -}}
{{- $_ := set $out "guard" true -}}
{{- /* The guard reads the program's output through a pipe, to which
Python writes in blocks: unbuffered, each line arrives as it is written. */ -}}
{{- $_ := set $out "env"
    (concat $out.env
    (list (dict "name" "NCCL_DEBUG" "value" "INFO") (dict "name" "NCCL_DEBUG_SUBSYS" "value" "INIT,NET")
    (dict "name" "PYTHONUNBUFFERED" "value" "1"))) -}}
{{- end -}}
{{- end -}}
{{- /* A workload that opts out says so on its pods, for reviewers and for
LR020, which otherwise warns about accelerator pods without their NICs. */ -}}
{{- if get . "tcp" }}{{ $_ := set $out "annotations" (dict "llmrender.dev/fabric" "tcp") }}{{ end -}}
{{- toJson $out -}}
{{- end -}}

{{/*
llm.fabric.gke: GPUDirect on GKE (TCPX, TCPXO, RDMA with gIB); fills the
"out" dict of llm.fabric. The parts below fill a state dict in turn: the
inputs, o (the fabric values), release (the catalog.fabrics release in
use), and the annotations, volumes, mounts, init (init containers) and
env (before the fabric's own) they add to.
Inputs (dict): root, f (the catalog.fabrics entry), kind, out, name.
*/}}
{{- define "llm.fabric.gke" -}}
{{- $o := .root.Values.fabric -}}
{{- $f := .f -}}
{{- $out := .out -}}
{{- $release := get (get $f "releases" | default dict) ($o.release | default (get $f "release")) | default dict -}}
{{- $g := dict "root" .root "f" $f "kind" .kind "out" $out "name" .name "o" $o "release" $release
    "annotations" dict "volumes" list "mounts" list "init" list "env" list -}}
{{- include "llm.fabric.gke.nics" $g -}}
{{- include "llm.fabric.gke.plugin" $g -}}
{{- include "llm.fabric.gke.daemon" $g -}}
{{- $_ := set $out "annotations" $g.annotations -}}
{{- $_ := set $out "initContainers" $g.init -}}
{{- $_ := set $out "volumes" $g.volumes -}}
{{- $_ := set $out "mounts" $g.mounts -}}
{{- $_ := set $out "env" (concat $g.env $out.env) -}}
{{- end -}}

{{/*
llm.fabric.gke.nics: the extra NICs: in the multi-network form, interfaces
on the cluster's networks (annotations); in the host-network form, the
node's own (out's hostNetwork and privileged); with DRA, a claim for the
managed RDMA devices (out's claims). Input: the state of llm.fabric.gke;
output: none, it sets out and annotations.
*/}}
{{- define "llm.fabric.gke.nics" -}}
{{- $o := .o -}}
{{- $out := .out -}}
{{- if eq $o.attach "host" -}}
{{- $_ := set $out "hostNetwork" true -}}
{{- $_ := set $out "privileged" true -}}
{{- else if eq $o.attach "dra" -}}
{{- $_ := set $out "claims" (list (dict "name" "rdma" "resourceClaimTemplateName" (printf "%s-rdma" .name))) -}}
{{- else -}}
{{- $networks := $o.networks | default (get .f "networks") -}}
{{- $names := get .f "interfaces" | default list -}}
{{- if ne (len $networks) (len $names) -}}
{{- fail (printf "LR019: /fabric/networks: %s attaches %d NICs (%s); %d networks are given, one per NIC in order" .kind
    (len $names) (join ", " $names) (len $networks)) -}}
{{- end -}}
{{- $interfaces := list (dict "interfaceName" "eth0" "network" "default") -}}
{{- range $i, $name := $names }}{{ $interfaces = append $interfaces (dict "interfaceName" $name "network" (index $networks $i)) }}{{ end -}}
{{- $_ := set .annotations "networking.gke.io/default-interface" "eth0" -}}
{{- $_ := set .annotations "networking.gke.io/interfaces" (toJson $interfaces) -}}
{{- end -}}
{{- end -}}

{{/*
llm.fabric.gke.plugin: the NCCL plugin: installed into the pod by an init
container from the release's image, or from the host, where the cluster's
installer put it (TCPX, TCPXO: next to the driver's libraries; gIB: its
own directory); the environment that finds it (LD_LIBRARY_PATH, out's
profile), and the driver's libraries. Input: the state of llm.fabric.gke;
output: none, it adds to volumes, mounts, init and env, and sets out.
*/}}
{{- define "llm.fabric.gke.plugin" -}}
{{- $volumes := .volumes -}}
{{- $mounts := .mounts -}}
{{- $env := .env -}}
{{- $dir := "/usr/local/nvidia/lib64" -}}
{{- if eq (.o.plugin | default (get .f "plugin")) "pod" -}}
{{- $root := ternary "/usr/local/gib" "/usr/local/nccl-plugin" (eq .kind "gpudirect-rdma") -}}
{{- $dir = printf "%s/lib64" $root -}}
{{- $from := get (dict "gpudirect-tcpxo" "/var/lib/tcpxo" "gpudirect-rdma" "/var/lib/gib") .kind -}}
{{- /* gIB's installer also puts the NCCL it is qualified with in lib64
(--install-nccl), as Google's serving recipes do: first on LD_LIBRARY_PATH,
it is the NCCL PyTorch and vLLM load in place of the one they ship. */ -}}
{{- $install := ternary "/scripts/container_entry.sh install" "/scripts/container_entry.sh install --install-nccl"
    (eq .kind "gpudirect-rdma") -}}
{{- $volumes = append $volumes (dict "name" "nccl-plugin" "emptyDir" dict) -}}
{{- $mounts = append $mounts (dict "name" "nccl-plugin" "mountPath" $root) -}}
{{- $_ := set $ "init" (append .init (dict
  "name" "nccl-plugin-installer"
  "image" (include "llm.fabric.image" (dict "root" .root "release" .release "role" "plugin"))
  "command" (list "/bin/sh" "-c" (printf "set -e\n%s\ncp -R %s/. %s/" $install $from $root))
  "resources" (dict "requests" (dict "cpu" "150m" "memory" "64Mi"))
  "securityContext" (dict "allowPrivilegeEscalation" false)
  "volumeMounts" (list (dict "name" "nccl-plugin" "mountPath" $root)))) -}}
{{- else if eq .kind "gpudirect-rdma" -}}
{{- $dir = "/usr/local/gib/lib64" -}}
{{- $volumes = append $volumes (dict "name" "gib" "hostPath" (dict "path" "/home/kubernetes/bin/gib")) -}}
{{- $mounts = append $mounts (dict "name" "gib" "mountPath" "/usr/local/gib") -}}
{{- else -}}
{{- $mounts = append $mounts (dict "name" "nvidia" "mountPath" "/usr/local/nvidia") -}}
{{- end -}}
{{- /* NCCL loads its net plugin (libnccl-net.so) with dlopen, so through
LD_LIBRARY_PATH: the plugin's directory goes first (NCCL has no plugin
path variable of its own). TCPXO's profile needs NCCL_LIB_DIR; gIB's
lives in scripts/ beside lib64/. */ -}}
{{- $env = append $env
    (dict "name" "LD_LIBRARY_PATH"
    "value" (ternary "/usr/local/nvidia/lib64" (printf "%s:/usr/local/nvidia/lib64" $dir)
    (eq $dir "/usr/local/nvidia/lib64"))) -}}
{{- with (get .f "envProfile") -}}
{{- if eq $.kind "gpudirect-rdma" -}}
{{- $_ := set $.out "profile" (printf "%s/scripts/%s" (dir $dir) .) -}}
{{- else -}}
{{- $env = append $env (dict "name" "NCCL_LIB_DIR" "value" $dir) -}}
{{- $_ := set $.out "profile" (printf "%s/%s" $dir .) -}}
{{- end -}}
{{- end -}}
{{- /* The driver's libraries, where the daemon or a plugin installed on the
host needs them. */ -}}
{{- if ne .kind "gpudirect-rdma" }}{{ $volumes = prepend $volumes (dict "name" "nvidia" "hostPath" (dict "path" "/home/kubernetes/bin/nvidia")) }}{{ end -}}
{{- $_ := set $ "volumes" $volumes -}}
{{- $_ := set $ "mounts" $mounts -}}
{{- $_ := set $ "env" $env -}}
{{- end -}}

{{/*
llm.fabric.gke.daemon: the receive daemon (TCPX, TCPXO): a native sidecar
with the GPUs' device files, the driver's libraries and the host's /sys
and /proc/sys, and what the model's containers need to meet it. Input:
the state of llm.fabric.gke; output: none, it adds to annotations,
volumes, mounts, init and env.
*/}}
{{- define "llm.fabric.gke.daemon" -}}
{{- if has .kind (list "gpudirect-tcpx" "gpudirect-tcpxo") -}}
{{- $volumes := .volumes -}}
{{- $mounts := .mounts -}}
{{- $env := .env -}}
{{- $daemon := printf "%s-daemon" (trimPrefix "gpudirect-" .kind) -}}
{{- if not (get .out "hostNetwork") -}}
{{- $devices := list -}}
{{- range (get .f "daemonDevices") }}{{ $devices = append $devices (dict "path" .) }}{{ end -}}
{{- $_ := set .annotations (printf "devices.gke.io/container.%s" $daemon) (toYaml $devices) -}}
{{- end -}}
{{- $volumes = concat $volumes (list
  (dict "name" "sys" "hostPath" (dict "path" "/sys"))
  (dict "name" "proc-sys" "hostPath" (dict "path" "/proc/sys"))) -}}
{{- $daemonMounts := list (dict "name" "nvidia" "mountPath" "/usr/local/nvidia")
    (dict "name" "sys" "mountPath" "/hostsysfs") (dict "name" "proc-sys" "mountPath" "/hostprocsysfs") -}}
{{- $c := dict "name" $daemon
    "image" (include "llm.fabric.image" (dict "root" .root "release" .release "role" "daemon")) "restartPolicy" "Always" -}}
{{- $daemonEnv := list (dict "name" "LD_LIBRARY_PATH" "value" "/usr/local/nvidia/lib64") -}}
{{- $caps := list "NET_ADMIN" -}}
{{- if eq .kind "gpudirect-tcpx" -}}
{{- /* The daemon and NCCL meet on a Unix socket in a volume of the pod. */ -}}
{{- $volumes = append $volumes (dict "name" "tcpx-socket" "emptyDir" dict) -}}
{{- $daemonMounts = append $daemonMounts (dict "name" "tcpx-socket" "mountPath" "/run/tcpx") -}}
{{- $mounts = append $mounts (dict "name" "tcpx-socket" "mountPath" "/run/tcpx") -}}
{{- $env = append $env (dict "name" "NCCL_GPUDIRECTTCPX_UNIX_CLIENT_PREFIX" "value" "/run/tcpx") -}}
{{- $_ := set $c "command"
    (list "/tcpgpudmarxd/build/app/tcpgpudmarxd" "--gpu_nic_preset" "a3vm" "--gpu_shmem_type" "fd" "--uds_path"
    "/run/tcpx" "--setup_param" "--verbose 128 2 0 ") -}}
{{- else -}}
{{- /* TCPXO: the daemon writes its health-check file once its buffers are
ready (~30 s); the startup probe holds the program until then. */ -}}
{{- $volumes = append $volumes (dict "name" "aperture-devices" "hostPath" (dict "path" "/dev/aperture_devices")) -}}
{{- $mounts = append $mounts (dict "name" "aperture-devices" "mountPath" "/dev/aperture_devices") -}}
{{- $env = append $env (dict "name" "NCCL_FASTRAK_LLCM_DEVICE_DIRECTORY" "value" "/dev/aperture_devices") -}}
{{- $caps = append $caps "NET_BIND_SERVICE" -}}
{{- $daemonEnv = append $daemonEnv (dict "name" "HEALTH_CHECK_LOG_FILE" "value" "/run/health-check") -}}
{{- $_ := set $c "command"
    (list "/bin/sh" "-c" "set -e\nchmod 755 /fts/entrypoint_rxdm_container.sh\nexec /fts/entrypoint_rxdm_container.sh --num_hops=2") -}}
{{- $_ := set $c "startupProbe"
    (dict "exec" (dict "command" (list "cat" "/run/health-check")) "initialDelaySeconds" 1 "periodSeconds" 5
    "failureThreshold" 24) -}}
{{- end -}}
{{- $_ := set $c "env" $daemonEnv -}}
{{- $_ := set $c "resources" (dict "requests" (dict "cpu" "150m" "memory" "256Mi")) -}}
{{- $_ := set $c "securityContext"
    (ternary (dict "privileged" true) (dict "capabilities" (dict "add" $caps)) (get .out "hostNetwork")) -}}
{{- $_ := set $c "volumeMounts" $daemonMounts -}}
{{- $_ := set $ "init" (append .init $c) -}}
{{- $_ := set $ "volumes" $volumes -}}
{{- $_ := set $ "mounts" $mounts -}}
{{- $_ := set $ "env" $env -}}
{{- end -}}
{{- end -}}

{{/*
llm.fabric.image: the daemon or plugin image of a fabric release, or its
override (fabric.daemonImage, fabric.pluginImage).
Inputs (dict): root, release (a catalog.fabrics.*.releases entry), role.
*/}}
{{- define "llm.fabric.image" -}}
{{- include "llm.image"
    (dict "root" .root "ref" (get .root.Values.fabric (printf "%sImage" .role) | default (get .release .role))) -}}
{{- end -}}

{{/*
llm.fabric.run: the shell lines that run a command line with the fabric:
they source the fabric's NCCL environment profile (with profile: true)
and, with the guard, fail as soon as NCCL logs that it chose its socket
transport: the run would otherwise go on over the primary NIC at a
fraction of the bandwidth, silently.

The guard reads the program's output (stdout and stderr) in a filter of
its own, a process substitution, while the program runs under llm_run
(llm.sh.run), which passes the kubelet's TERM and INT on to it: a pipe
into a filter would keep the shell waiting for both in the foreground,
where no signal reaches the program. The shell's own stdout and stderr go
to the filter until the program is done (saved in 4 and 5): a redirection
of the llm_run call alone would leave bash a copy of the pipe when llm_run
leaves the script on TERM, and the filter would never see the end of its
input. The filter prints every line; on NCCL's socket line it prints why
it stops the run and signals the shell (USR1), which stops the program
with TERM (torchrun and mpirun stop their workers), waits for it and ends
with 3. The shell's PID comes from $BASHPID: Kubernetes reads $$ in a
command as an escaped $. Whichever way the script ends, it first lets the
filter print the program's last lines (llm_flush, once). The script that
includes these lines must be bash and define llm_run.
Inputs (dict): fabric (ctx.fabric), run (a shell command line), profile
(bool), then (bool: more lines follow, so the command is run and must
succeed, not exec'd).
*/}}
{{- define "llm.fabric.run" -}}
{{- $f := .fabric -}}
{{- $lines := list -}}
{{- /* The vendors' profiles are not written for set -u. */ -}}
{{- /* The container's own NCCL_DEBUG and NCCL_DEBUG_SUBSYS (the guard's
INFO, or the user's) win over the profile's: TCPXO's exports WARN, at
which NCCL never says which network it chose. */ -}}
{{- if and (get . "profile") $f.profile -}}
{{- $lines = concat $lines (list
  "llm_debug=${NCCL_DEBUG-} llm_subsys=${NCCL_DEBUG_SUBSYS-}"
  (printf "set +u; . %s" (include "llm.sh.quote" $f.profile))
  "[ -z \"$llm_debug\" ] || export NCCL_DEBUG=\"$llm_debug\""
  "[ -z \"$llm_subsys\" ] || export NCCL_DEBUG_SUBSYS=\"$llm_subsys\"") -}}
{{- end -}}
{{- if $f.guard -}}
{{- $stop := printf "llmrender: NCCL chose its socket transport instead of %s: the fabric is not working on this node; stopping (fabric.guard)"
    $f.net -}}
{{- $lines = concat $lines (list
  "llm_guard() {"
  "  while IFS= read -r line; do"
  "    printf '%s\\n' \"$line\""
  "    case $line in *'NCCL INFO Using network Socket'*)"
  (printf "      echo %s >&2" (include "llm.sh.quote" $stop))
  "      kill -USR1 \"$llm_shell\";;"
  "    esac"
  "  done"
  "}"
  "llm_flush() {"
  "  trap - EXIT"
  "  exec >&4 2>&5 4>&- 5>&-"
  "  while kill -0 \"$llm_filter\" 2>/dev/null; do wait \"$llm_filter\" || :; done"
  "}"
  "llm_pid= llm_socket= llm_shell=$BASHPID"
  "trap 'llm_socket=1; llm_pass TERM' USR1"
  "exec 4>&1 5>&2 > >(llm_guard) 2>&1"
  "llm_filter=$!"
  "trap llm_flush EXIT"
  (printf "llm_run %s && llm_status=0 || llm_status=$?" .run)
  "llm_flush"
  "[ -z \"$llm_socket\" ] || exit 3"
  (ternary "[ \"$llm_status\" -eq 0 ] || exit \"$llm_status\"" "exit \"$llm_status\"" (get . "then" | default false))) -}}
{{- else if get . "then" -}}
{{- $lines = append $lines (printf "llm_run %s" .run) -}}
{{- else -}}
{{- $lines = append $lines (printf "exec %s" .run) -}}
{{- end -}}
{{- join "\n" $lines -}}
{{- end -}}

{{/*
llm.fabric.wrap: a command (a list) run through llm.fabric.run by bash,
which defines llm_run for the guard, or as it is when the fabric has
neither a profile nor a guard.
Inputs (dict): fabric (ctx.fabric), command (a list), guard (optional:
false leaves the guard to a launcher that reads every rank's output).
*/}}
{{- define "llm.fabric.wrap" -}}
{{- $f := .fabric -}}
{{- if and (hasKey . "guard") (not .guard) }}{{ $f = merge (dict "guard" false) $f }}{{ end -}}
{{- if or $f.profile $f.guard -}}
{{- $script := include "llm.fabric.run" (dict "fabric" $f "run" "\"$@\"" "profile" true) -}}
{{- if $f.guard }}{{ $script = printf "%s\n%s" (include "llm.sh.run" .) $script }}{{ end -}}
{{- toYaml (concat (list "/bin/bash" "-c" $script "fabric") .command) -}}
{{- else -}}
{{- toYaml .command -}}
{{- end -}}
{{- end -}}
