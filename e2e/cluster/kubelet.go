package cluster

import (
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/llmrender/llmrender/e2e/cluster/standin"
	"github.com/llmrender/llmrender/e2e/sandbox"
)

// What the kubelet does before a container starts, for the runtime: the
// command line with $(VAR) expanded, the environment (the operators'
// variables come in through the pod spec: values, the downward API,
// ConfigMaps and Secrets), the volumes on host directories (a claim's
// directory shared by every pod that mounts it, an emptyDir per pod, a
// hostPath per node, ConfigMaps and Secrets as files), and the programs
// the images hold, as stand-ins.

// Where the stand-ins, the runtime's socket and the real programs some
// images hold are in a container.
const (
	standInDir     = "/.llmrender-test/bin"
	socketDir      = "/.llmrender-test/sim"
	routingSidecar = "/.llmrender-test/pd-sidecar"
)

// imagePath is PATH as the images the chart uses set it.
const imagePath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// Environment variables the runtime adds to tell a stand-in whose it is.
const (
	envPod       = "LLMRENDER_SIM_POD"       // the pod's UID
	envContainer = "LLMRENDER_SIM_CONTAINER" // the container's name
	envRayJob    = "LLMRENDER_SIM_RAYJOB"    // the RayCluster whose job this is
)

// containerSpec is what the runtime starts for a container.
func (r *Runtime) containerSpec(ctx context.Context, p *corev1.Pod, c corev1.Container) (sandbox.Spec, error) {
	env, vals, err := r.environment(ctx, p, c)
	if err != nil {
		return sandbox.Spec{}, err
	}
	var argv []string
	for _, a := range append(append([]string{}, c.Command...), c.Args...) {
		argv = append(argv, sandbox.Expand(a, vals))
	}
	switch {
	case len(c.Command) == 0:
		// The image's entrypoint: for the images the chart runs without
		// a command (MPI workers), a server (sshd), with the args given.
		argv = append([]string{"/usr/local/bin/image-entrypoint"}, argv...)
	case argv[0] == "sh" || argv[0] == "bash":
		argv[0] = "/bin/" + argv[0] // the image's shells are the host's
	}
	spec := sandbox.Spec{Argv: argv, Env: env, WorkDir: c.WorkingDir, NetNS: r.netNS(p.UID),
		Binds: []sandbox.Bind{{Source: r.binDir(), Target: standInDir}, {Source: r.socketDir(), Target: socketDir}}}
	// In a pod with a network, llm-d's routing sidecar image runs the real
	// sidecar, built from the release the chart names.
	if spec.NetNS != "" && r.sidecar != "" && len(c.Command) == 0 && strings.Contains(c.Image, "/llm-d-routing-sidecar:") {
		spec.Binds = append(spec.Binds, sandbox.Bind{Source: r.sidecar, Target: routingSidecar})
		spec.Argv[0] = routingSidecar
		// The build listens on loopback but in a pod of its own
		// (hack/build-operator.sh).
		spec.Env = append(spec.Env, "LLMRENDER_POD_NETWORK=1")
	}
	if spec.WorkDir == "" {
		spec.WorkDir = "/"
	}
	// Its user, and a read-only root that takes writes only in the
	// container's volumes.
	spec.User = identity(p, c)
	spec.ReadOnlyRoot = c.SecurityContext != nil && c.SecurityContext.ReadOnlyRootFilesystem != nil && *c.SecurityContext.ReadOnlyRootFilesystem
	binds, err := r.volumes(ctx, p, c)
	if err != nil {
		return sandbox.Spec{}, err
	}
	spec.Binds = append(spec.Binds, binds...)
	for _, name := range sandbox.StandInNames {
		spec.Links = append(spec.Links, sandbox.Link{Path: "/usr/local/bin/" + name, Target: standInDir + "/stand-in"})
	}
	e := r.expected(p.Namespace)
	progs := append(append([]string{"/usr/local/bin/image-entrypoint"}, sandbox.ImagePrograms...), e.Programs...)
	for _, prog := range progs {
		if !strings.HasPrefix(prog, "/") {
			if !strings.Contains(prog, "/") {
				prog = "/usr/local/bin/" + prog
			} else {
				prog = path.Join(spec.WorkDir, prog)
			}
		}
		target := standInDir + "/stand-in"
		if strings.HasSuffix(prog, ".sh") {
			target += ".sh"
		}
		spec.Links = append(spec.Links, sandbox.Link{Path: prog, Target: target})
	}
	// The image holds the working directory the values name, and what
	// the fabric's plugin images hold.
	if e.WorkDir != "" {
		spec.Dirs = append(spec.Dirs, e.WorkDir)
	}
	for name, dir := range pluginImages {
		if strings.Contains(c.Image, name) {
			if spec.Files, err = r.imageFiles(name, dir); err != nil {
				return sandbox.Spec{}, err
			}
		}
	}
	return spec, nil
}

// identity is who a container's processes run as: its securityContext's
// user and group, else the pod's, else the image's (root, for every image
// here), with the pod's fsGroup and supplemental groups; nil for root.
func identity(p *corev1.Pod, c corev1.Container) *sandbox.User {
	var uid, gid int64
	var groups []uint32
	if sc := p.Spec.SecurityContext; sc != nil {
		if sc.RunAsUser != nil {
			uid = *sc.RunAsUser
		}
		if sc.RunAsGroup != nil {
			gid = *sc.RunAsGroup
		}
		if sc.FSGroup != nil {
			groups = append(groups, uint32(*sc.FSGroup))
		}
		for _, g := range sc.SupplementalGroups {
			groups = append(groups, uint32(g))
		}
	}
	if sc := c.SecurityContext; sc != nil {
		if sc.RunAsUser != nil {
			uid = *sc.RunAsUser
		}
		if sc.RunAsGroup != nil {
			gid = *sc.RunAsGroup
		}
	}
	if uid == 0 && gid == 0 && len(groups) == 0 {
		return nil
	}
	return &sandbox.User{UID: uint32(uid), GID: uint32(gid), Groups: groups}
}

// pluginImages are the fabric plugin images the chart runs, and where
// each holds the plugin that its init container copies out.
var pluginImages = map[string]string{
	"gpudirect-tcpxo/nccl-plugin-gpudirecttcpx": "/var/lib/tcpxo",
	"gpudirect-gib/nccl-plugin-gib":             "/var/lib/gib",
}

// imageFiles is a directory with what a plugin image holds.
func (r *Runtime) imageFiles(name, dir string) (string, error) {
	root := filepath.Join(r.dir, "images", strings.ReplaceAll(name, "/", "_"))
	return root, r.prepare(filepath.Join(root, dir), sandbox.PluginFiles("plugin"))
}

// prepare writes files under a directory once, for every container that
// mounts or copies it; the others wait until it is written.
func (r *Runtime) prepare(dir string, files map[string]string) error {
	once, _ := r.prepared.LoadOrStore(dir, &preparation{})
	p := once.(*preparation)
	p.once.Do(func() { p.err = writeFiles(dir, files) })
	return p.err
}

type preparation struct {
	once sync.Once
	err  error
}

// writeFiles writes files (path -> content) under a directory.
func writeFiles(dir string, files map[string]string) error {
	for name, text := range files {
		f := filepath.Join(dir, filepath.Clean("/"+name))
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(f, []byte(text), 0o755); err != nil {
			return err
		}
	}
	return nil
}

// environment is the container's environment as the kubelet builds it,
// and its values for $(VAR).
func (r *Runtime) environment(ctx context.Context, p *corev1.Pod, c corev1.Container) ([]string, map[string]string, error) {
	hostname := p.Name
	if p.Spec.Hostname != "" {
		hostname = p.Spec.Hostname
	}
	var order []string
	vals := map[string]string{}
	set := func(k, v string) {
		if _, ok := vals[k]; !ok {
			order = append(order, k)
		}
		vals[k] = v
	}
	set("PATH", imagePath)
	set("HOME", "/root")
	set("HOSTNAME", hostname)
	for _, from := range c.EnvFrom {
		data, err := r.keys(ctx, p.Namespace, from.ConfigMapRef, from.SecretRef)
		if err != nil {
			return nil, nil, err
		}
		keys := make([]string, 0, len(data))
		for k := range data {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			set(from.Prefix+k, data[k])
		}
	}
	for _, e := range c.Env {
		if e.ValueFrom == nil {
			set(e.Name, sandbox.Expand(e.Value, vals))
			continue
		}
		v, ok, err := r.valueFrom(ctx, p, c, e.ValueFrom)
		if err != nil {
			return nil, nil, fmt.Errorf("env %s: %w", e.Name, err)
		}
		if ok {
			set(e.Name, v)
		}
	}
	set(envPod, string(p.UID))
	set(envContainer, c.Name)
	env := make([]string, 0, len(order))
	for _, k := range order {
		env = append(env, k+"="+vals[k])
	}
	return env, vals, nil
}

// valueFrom resolves an env var's source; false for an optional key that
// is not there.
func (r *Runtime) valueFrom(ctx context.Context, p *corev1.Pod, c corev1.Container, from *corev1.EnvVarSource) (string, bool, error) {
	switch {
	case from.FieldRef != nil:
		v, err := fieldValue(p, from.FieldRef.FieldPath)
		return v, err == nil, err
	case from.ResourceFieldRef != nil:
		return resourceValue(c, from.ResourceFieldRef)
	case from.ConfigMapKeyRef != nil:
		ref := from.ConfigMapKeyRef
		cm, err := r.cp.Client.CoreV1().ConfigMaps(p.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
		if err != nil || cm.Data[ref.Key] == "" && cm.BinaryData[ref.Key] == nil {
			if ref.Optional != nil && *ref.Optional {
				return "", false, nil
			}
			return "", false, fmt.Errorf("ConfigMap %s has no key %s (%v)", ref.Name, ref.Key, err)
		}
		return cm.Data[ref.Key], true, nil
	case from.SecretKeyRef != nil:
		ref := from.SecretKeyRef
		s, err := r.cp.Client.CoreV1().Secrets(p.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
		if err != nil || s.Data[ref.Key] == nil {
			if ref.Optional != nil && *ref.Optional {
				return "", false, nil
			}
			return "", false, fmt.Errorf("Secret %s has no key %s (%v)", ref.Name, ref.Key, err)
		}
		return string(s.Data[ref.Key]), true, nil
	}
	return "", false, nil
}

// fieldValue is a downward API field of the pod.
func fieldValue(p *corev1.Pod, field string) (string, error) {
	if k, ok := strings.CutPrefix(field, "metadata.labels['"); ok {
		return p.Labels[strings.TrimSuffix(k, "']")], nil
	}
	if k, ok := strings.CutPrefix(field, "metadata.annotations['"); ok {
		return p.Annotations[strings.TrimSuffix(k, "']")], nil
	}
	switch field {
	case "metadata.name":
		return p.Name, nil
	case "metadata.namespace":
		return p.Namespace, nil
	case "metadata.uid":
		return string(p.UID), nil
	case "spec.nodeName":
		return p.Spec.NodeName, nil
	case "spec.serviceAccountName":
		return p.Spec.ServiceAccountName, nil
	case "status.podIP", "status.podIPs":
		return p.Status.PodIP, nil
	case "status.hostIP", "status.hostIPs":
		return p.Status.HostIP, nil
	}
	return "", fmt.Errorf("the downward API has no field %s", field)
}

// resourceValue is a container's limit or request, in the divisor's units,
// rounded up, as the downward API gives it.
func resourceValue(c corev1.Container, ref *corev1.ResourceFieldSelector) (string, bool, error) {
	kind, name, _ := strings.Cut(ref.Resource, ".")
	list := c.Resources.Limits
	if kind == "requests" {
		list = c.Resources.Requests
	}
	q, ok := list[corev1.ResourceName(name)]
	if !ok {
		return "0", true, nil
	}
	div := ref.Divisor
	if div.IsZero() {
		div = resource.MustParse("1")
	}
	n := (q.MilliValue() + div.MilliValue() - 1) / div.MilliValue()
	return fmt.Sprint(n), true, nil
}

// keys is the data of a ConfigMap or Secret named by envFrom.
func (r *Runtime) keys(ctx context.Context, ns string, cm *corev1.ConfigMapEnvSource, s *corev1.SecretEnvSource) (map[string]string, error) {
	out := map[string]string{}
	switch {
	case cm != nil:
		o, err := r.cp.Client.CoreV1().ConfigMaps(ns).Get(ctx, cm.Name, metav1.GetOptions{})
		if err != nil {
			if cm.Optional != nil && *cm.Optional {
				return out, nil
			}
			return nil, err
		}
		return o.Data, nil
	case s != nil:
		o, err := r.cp.Client.CoreV1().Secrets(ns).Get(ctx, s.Name, metav1.GetOptions{})
		if err != nil {
			if s.Optional != nil && *s.Optional {
				return out, nil
			}
			return nil, err
		}
		for k, v := range o.Data {
			out[k] = string(v)
		}
	}
	return out, nil
}

// volumes binds the container's volume mounts to host directories.
func (r *Runtime) volumes(ctx context.Context, p *corev1.Pod, c corev1.Container) ([]sandbox.Bind, error) {
	var binds []sandbox.Bind
	for _, m := range c.VolumeMounts {
		var v *corev1.Volume
		for i := range p.Spec.Volumes {
			if p.Spec.Volumes[i].Name == m.Name {
				v = &p.Spec.Volumes[i]
			}
		}
		if v == nil {
			return nil, fmt.Errorf("volume mount %s names no volume", m.Name)
		}
		dir, err := r.volumeDir(ctx, p, v)
		if err != nil {
			return nil, fmt.Errorf("volume %s: %w", v.Name, err)
		}
		if m.SubPath != "" {
			dir = filepath.Join(dir, m.SubPath)
			if _, err := os.Stat(dir); os.IsNotExist(err) {
				if err := os.MkdirAll(dir, 0o755); err != nil {
					return nil, err
				}
			}
		}
		binds = append(binds, sandbox.Bind{Source: dir, Target: m.MountPath})
	}
	// A directory before what is bound inside it.
	sort.SliceStable(binds, func(i, j int) bool { return len(binds[i].Target) < len(binds[j].Target) })
	return binds, nil
}

// volumeDir is the host directory behind a volume: a claim's is shared by
// every pod that mounts it, a hostPath's by the node's pods, the others
// are the pod's own.
func (r *Runtime) volumeDir(ctx context.Context, p *corev1.Pod, v *corev1.Volume) (string, error) {
	own := filepath.Join(r.dir, "pods", string(p.UID), v.Name)
	var dir string
	var files map[string][]byte
	switch {
	case v.PersistentVolumeClaim != nil:
		dir = r.claimDir(p.Namespace, v.PersistentVolumeClaim.ClaimName)
		return dir, r.mountClaim(ctx, p, v.PersistentVolumeClaim.ClaimName, dir)
	case v.HostPath != nil:
		dir = filepath.Join(r.dir, "nodes", p.Spec.NodeName, filepath.Clean("/"+v.HostPath.Path))
		// The node's installer has put the fabric's plugin there.
		if sandbox.PluginVolumes["hostPath:"+v.HostPath.Path] {
			if err := r.prepare(dir, sandbox.PluginFiles("plugin")); err != nil {
				return "", err
			}
		}
	case v.ConfigMap != nil:
		cm, err := untilFound(ctx, func() (*corev1.ConfigMap, error) {
			return r.cp.Client.CoreV1().ConfigMaps(p.Namespace).Get(ctx, v.ConfigMap.Name, metav1.GetOptions{})
		}, v.ConfigMap.Optional)
		if err != nil && !(v.ConfigMap.Optional != nil && *v.ConfigMap.Optional) {
			return "", err
		}
		if err == nil {
			files = projected(cm.Data, cm.BinaryData, v.ConfigMap.Items)
		}
		dir = own
	case v.Secret != nil:
		s, err := untilFound(ctx, func() (*corev1.Secret, error) {
			return r.cp.Client.CoreV1().Secrets(p.Namespace).Get(ctx, v.Secret.SecretName, metav1.GetOptions{})
		}, v.Secret.Optional)
		if err != nil && !(v.Secret.Optional != nil && *v.Secret.Optional) {
			return "", err
		}
		if err == nil {
			files = projected(nil, s.Data, v.Secret.Items)
		}
		dir = own
	default:
		// emptyDir, ephemeral claims, projected tokens, downward API:
		// the pod's own, empty, and writable by any user, as the kubelet
		// makes an emptyDir.
		if err := os.MkdirAll(own, 0o755); err != nil {
			return "", err
		}
		return own, os.Chmod(own, 0o777)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	for name, data := range files {
		f := filepath.Join(dir, filepath.Clean("/"+name))
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			return "", err
		}
		if err := os.WriteFile(f, data, 0o644); err != nil {
			return "", err
		}
	}
	return dir, nil
}

// mountClaim makes a claim's volume as its driver makes a new one (its
// root's mode) the first time, and, for a pod with an fsGroup on a driver
// that takes one, gives the volume to that group as the kubelet does with
// fsGroupChangePolicy OnRootMismatch: when the root is not the group's yet,
// every file becomes the group's, readable and writable by it, and every
// directory also keeps new files in the group (setgid).
func (r *Runtime) mountClaim(ctx context.Context, p *corev1.Pod, claim, dir string) error {
	own := r.ownership(ctx, p.Namespace, claim)
	if _, err := os.Stat(dir); os.IsNotExist(err) {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		if err := os.Chmod(dir, own.Mode); err != nil {
			return err
		}
	}
	sc := p.Spec.SecurityContext
	if !own.FSGroup || sc == nil || sc.FSGroup == nil {
		return nil
	}
	gid := int(*sc.FSGroup)
	if fi, err := os.Stat(dir); err == nil {
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Gid) == gid && fi.Mode()&0o070 == 0o070 && fi.Mode()&os.ModeSetgid != 0 {
			return nil
		}
	}
	return filepath.Walk(dir, func(path string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if fi.Mode()&os.ModeSymlink != 0 {
			return nil
		}
		if err := os.Lchown(path, -1, gid); err != nil {
			return err
		}
		mode := fi.Mode() | 0o060
		if fi.IsDir() {
			mode |= 0o010 | os.ModeSetgid
		} else if fi.Mode()&0o100 != 0 {
			mode |= 0o010
		}
		return os.Chmod(path, mode)
	})
}

// ownership is how a claim's driver makes its volumes (Drivers); a driver
// the simulated cluster does not provision (a static volume of another
// driver) is taken as one that applies fsGroup.
func (r *Runtime) ownership(ctx context.Context, ns, claim string) Ownership {
	pvc, err := r.cp.Client.CoreV1().PersistentVolumeClaims(ns).Get(ctx, claim, metav1.GetOptions{})
	if err != nil || pvc.Spec.VolumeName == "" {
		return fsGroupRoot
	}
	pv, err := r.cp.Client.CoreV1().PersistentVolumes().Get(ctx, pvc.Spec.VolumeName, metav1.GetOptions{})
	switch {
	case err != nil:
		return fsGroupRoot
	case pv.Spec.NFS != nil:
		return Drivers[nfsSubdir].Root
	case pv.Spec.CSI != nil:
		if d, ok := Drivers[pv.Spec.CSI.Driver]; ok {
			return d.Root
		}
	}
	return fsGroupRoot
}

// projected is a ConfigMap's or Secret's keys as the files of a volume.
func projected(data map[string]string, binary map[string][]byte, items []corev1.KeyToPath) map[string][]byte {
	all := map[string][]byte{}
	for k, v := range data {
		all[k] = []byte(v)
	}
	for k, v := range binary {
		all[k] = v
	}
	if len(items) == 0 {
		return all
	}
	out := map[string][]byte{}
	for _, it := range items {
		if v, ok := all[it.Key]; ok {
			out[it.Path] = v
		}
	}
	return out
}

func (r *Runtime) claimDir(ns, claim string) string {
	return filepath.Join(r.dir, "claims", ns, claim)
}

func (r *Runtime) binDir() string    { return filepath.Join(r.dir, "bin") }
func (r *Runtime) socketDir() string { return filepath.Join(r.dir, "sim") }

// socketPath is where the runtime listens on the host.
func (r *Runtime) socketPath() string {
	return filepath.Join(r.socketDir(), filepath.Base(standin.Socket))
}

// mountWait bounds how long a volume waits for its ConfigMap or Secret.
const mountWait = time.Minute

// untilFound gets an object a volume needs, waiting while it does not
// exist yet, as the kubelet retries a mount: objects applied together
// arrive in any order. An optional one is not waited for.
func untilFound[T any](ctx context.Context, get func() (T, error), optional *bool) (T, error) {
	deadline := time.Now().Add(mountWait)
	for {
		o, err := get()
		if err == nil || !apierrors.IsNotFound(err) || (optional != nil && *optional) || time.Now().After(deadline) {
			return o, err
		}
		select {
		case <-ctx.Done():
			return o, err
		case <-time.After(200 * time.Millisecond):
		}
	}
}
