package cluster

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"syscall"

	"k8s.io/apimachinery/pkg/types"
)

// Pod networking for the scenarios whose programs talk over the network
// (Scenario.Network): the servers answer HTTP on their pod's address, an
// endpoint picker scrapes and routes to them, a routing sidecar reaches
// its own pod's server at localhost and another pod's by its address. Each
// such pod gets a network namespace of its own, as a CNI plugin gives it:
// a loopback of its own and an eth0 with the pod's IP (kwok's, from
// podCIDR) on one bridge with every other pod. The bridge lives in a
// network namespace of the cluster's, which forwards between the pods and
// the host (where the tests, the pickers and the API server run) over a
// veth pair; the host routes podCIDR there. Nothing outlives the test
// binary: each namespace is held by a process that dies with it, and a
// namespace's interfaces, and the host's route through them, go with it.

const (
	podCIDR  = "10.244.0.0/16" // kwok-stages.yaml's cidr
	podPrefx = 16
	bridgeIP = "10.244.255.254" // the pods' gateway: far from the addresses kwok hands out first
	uplinkIP = "169.254.244.1"  // the host's end of the veth pair to the cluster's namespace
	simIP    = "169.254.244.2"  // the cluster namespace's end
)

// podNetworks are the network namespaces of the cluster and its pods.
type podNetworks struct {
	once   sync.Once
	err    error
	sim    *exec.Cmd // holds the cluster's namespace
	mu     sync.Mutex
	pods   map[types.UID]*exec.Cmd // hold the pods' namespaces
	closed bool
}

// holdNamespace starts a process in a new network namespace, which lives
// as long as it does; the namespace's path is /proc/PID/ns/net.
func holdNamespace() (*exec.Cmd, string, error) {
	cmd := exec.Command("sleep", "infinity")
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNET}
	if err := startOwned(cmd); err != nil {
		return nil, "", fmt.Errorf("a network namespace (is this root?): %w", err)
	}
	return cmd, fmt.Sprintf("/proc/%d/ns/net", cmd.Process.Pid), nil
}

// ip runs iproute2's ip (or another command) in a network namespace ("":
// the host's).
func ip(netns string, args ...string) error {
	argv := append([]string{"ip"}, args...)
	if netns != "" {
		argv = append([]string{"nsenter", "--net=" + netns}, argv...)
	}
	out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s: %v: %s", strings.Join(argv, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// up makes the cluster's namespace, its bridge and the host's route to
// the pods, once.
func (n *podNetworks) up() error {
	n.once.Do(func() { n.err = n.setUp() })
	return n.err
}

func (n *podNetworks) setUp() error {
	sim, ns, err := holdNamespace()
	if err != nil {
		return err
	}
	n.sim = sim
	host := fmt.Sprintf("llmsim%d", sim.Process.Pid%1000000000)
	if len(host) > 15 {
		host = host[:15]
	}
	steps := [][]string{
		{ns, "link", "set", "lo", "up"},
		{ns, "link", "add", "br0", "type", "bridge"},
		{ns, "addr", "add", fmt.Sprintf("%s/%d", bridgeIP, podPrefx), "dev", "br0"},
		{ns, "link", "set", "br0", "up"},
		{"", "link", "add", host, "type", "veth", "peer", "name", "up0", "netns", fmt.Sprint(sim.Process.Pid)},
		{"", "addr", "add", uplinkIP + "/30", "dev", host},
		{"", "link", "set", host, "up"},
		{ns, "addr", "add", simIP + "/30", "dev", "up0"},
		{ns, "link", "set", "up0", "up"},
		{"", "route", "add", podCIDR, "via", simIP, "dev", host},
	}
	for _, s := range steps {
		if err := ip(s[0], s[1:]...); err != nil {
			if s[1] == "route" {
				return fmt.Errorf("%v (another simulated cluster's pod network may be up on this machine: ip route show %s)", err, podCIDR)
			}
			return err
		}
	}
	// The cluster's namespace routes between the pods and the host; the
	// setting is the namespace's own, not the host's.
	if out, err := exec.Command("nsenter", "--net="+ns, "sysctl", "-qw", "net.ipv4.ip_forward=1").CombinedOutput(); err != nil {
		return fmt.Errorf("forwarding in the cluster's network namespace: %v: %s", err, out)
	}
	return nil
}

// add gives a pod a network namespace with its IP, and returns its path.
func (n *podNetworks) add(uid types.UID, podIP string) (string, error) {
	if err := n.up(); err != nil {
		return "", err
	}
	holder, ns, err := holdNamespace()
	if err != nil {
		return "", err
	}
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		holder.Process.Kill()
		return "", fmt.Errorf("the cluster is stopping")
	}
	if n.pods == nil {
		n.pods = map[types.UID]*exec.Cmd{}
	}
	n.pods[uid] = holder
	n.mu.Unlock()
	sum := sha1.Sum([]byte(uid))
	veth := "p" + hex.EncodeToString(sum[:7]) // 15 characters at most
	sim := fmt.Sprintf("/proc/%d/ns/net", n.sim.Process.Pid)
	steps := [][]string{
		{sim, "link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", fmt.Sprint(holder.Process.Pid)},
		{sim, "link", "set", veth, "master", "br0", "up"},
		{ns, "link", "set", "lo", "up"},
		{ns, "addr", "add", fmt.Sprintf("%s/%d", podIP, podPrefx), "dev", "eth0"},
		{ns, "link", "set", "eth0", "up"},
		{ns, "route", "add", "default", "via", bridgeIP},
	}
	for _, s := range steps {
		if err := ip(s[0], s[1:]...); err != nil {
			n.remove(uid)
			return "", err
		}
	}
	return ns, nil
}

// remove ends a pod's namespace (its veth pair goes with it).
func (n *podNetworks) remove(uid types.UID) {
	n.mu.Lock()
	holder := n.pods[uid]
	delete(n.pods, uid)
	n.mu.Unlock()
	if holder != nil {
		holder.Process.Kill()
		holder.Wait()
	}
}

// close ends every namespace, the cluster's last.
func (n *podNetworks) close() {
	n.mu.Lock()
	n.closed = true
	pods := n.pods
	n.pods = nil
	n.mu.Unlock()
	for _, h := range pods {
		h.Process.Kill()
		h.Wait()
	}
	if n.sim != nil {
		n.sim.Process.Kill()
		n.sim.Wait()
	}
}
