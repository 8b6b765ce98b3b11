package cluster

import (
	"context"
	_ "embed"
	"fmt"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Cluster is a control plane that reconciles for real: the scheduler, the
// controller manager and the operators the chart's modes use run as
// processes, kwok plays the kubelets, and this package plays what runs in
// the containers (Runtime), the storage driver (Provisioner) and the Ray
// dashboard's job API.
type Cluster struct {
	*ControlPlane
	Runtime *Runtime
	kubectl string
	cancel  context.CancelFunc
}

//go:embed kwok-stages.yaml
var kwokStages []byte

// Start brings up the whole cluster: control plane, CRDs, controllers,
// kwok, operators, and the in-process parts. It takes ~20 s on two cores.
func Start(t Tools) (*Cluster, error) {
	cp, err := StartControlPlane(t)
	if err != nil {
		return nil, err
	}
	c := &Cluster{ControlPlane: cp, kubectl: t.Kubectl}
	if err := c.start(t); err != nil {
		c.Stop()
		return nil, err
	}
	return c, nil
}

func (c *Cluster) start(t Tools) error {
	ctx, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	crds, err := LoadCRDs()
	if err != nil {
		return err
	}
	ops, err := c.newOperators()
	if err != nil {
		return err
	}
	if err := c.InstallCRDs(ctx, ops.crds(crds)); err != nil {
		return err
	}
	k := c.Kubeconfig
	ports, err := freePorts(2)
	if err != nil {
		return err
	}
	delegated := []string{"--kubeconfig", k, "--authentication-kubeconfig", k, "--authorization-kubeconfig", k, "--leader-elect=false", "--bind-address", "127.0.0.1"}
	if err := c.spawn("kube-controller-manager", t.ControllerManager, nil, append(delegated,
		"--secure-port", fmt.Sprint(ports[0]),
		"--service-account-private-key-file", c.keyFile,
		"--controllers", "*",
		"--v", "1")...); err != nil {
		return err
	}
	if err := c.spawn("kube-scheduler", t.Scheduler, nil, append(delegated,
		"--secure-port", fmt.Sprint(ports[1]), "--v", "1")...); err != nil {
		return err
	}
	stages := filepath.Join(c.Dir, "kwok-stages.yaml")
	if err := os.WriteFile(stages, kwokStages, 0o644); err != nil {
		return err
	}
	kwokDir, err := ModuleDir("sigs.k8s.io/kwok", "v0.8.0")
	if err != nil {
		return err
	}
	nodeStages := filepath.Join(kwokDir, "kustomize", "stage", "node")
	if err := c.spawn("kwok", t.Kwok, []string{"KWOK_WORKDIR=" + filepath.Join(c.Dir, "kwok"), "HOME=" + c.Dir},
		"--kubeconfig", k, "--config", stages,
		"--config", filepath.Join(nodeStages, "fast"), "--config", filepath.Join(nodeStages, "heartbeat-with-lease")); err != nil {
		return err
	}
	dashboard, err := c.startRayDashboard(ctx)
	if err != nil {
		return err
	}
	// KubeRay reaches each Ray head's dashboard by its Service DNS name;
	// the proxy answers for all of them (see raydashboard.go).
	if err := c.spawn("kuberay", t.KubeRay, []string{"HTTP_PROXY=http://" + dashboard, "NO_PROXY=127.0.0.1,localhost"},
		"--kubeconfig", k, "--enable-leader-election=false", "--metrics-addr=0", "--health-probe-bind-address=0",
		"--batch-scheduler=volcano", "--log-stdout-encoder=console"); err != nil {
		return err
	}
	if err := c.spawn("training-operator", t.TrainingOperator, nil,
		"--kubeconfig", k, "--enable-scheme=pytorchjob", "--metrics-bind-address=0", "--health-probe-bind-address=0"); err != nil {
		return err
	}
	if err := c.spawn("mpi-operator", t.MPIOperator, []string{"KUBECONFIG=" + k},
		"--kubeConfig", k, "--lock-namespace", "kube-system", "--kube-api-qps", "50", "--kube-api-burst", "100"); err != nil {
		return err
	}
	// Volcano's scheduler also builds a client from $KUBECONFIG at start.
	if err := c.spawn("volcano-scheduler", t.VolcanoScheduler, []string{"KUBECONFIG=" + k, "HOME=" + c.Dir},
		"--kubeconfig", k, "--leader-elect=false", "--schedule-period", "200ms"); err != nil {
		return err
	}
	for _, dc := range DeviceClasses() {
		if _, err := c.Client.ResourceV1().DeviceClasses().Create(ctx, dc, metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	for _, sc := range StorageClasses() {
		if _, err := c.Client.StorageV1().StorageClasses().Create(ctx, sc, metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	if c.Runtime, err = newRuntime(ctx, c.ControlPlane, filepath.Join(c.Dir, "runtime")); err != nil {
		return err
	}
	c.Runtime.sidecar = t.RoutingSidecar
	go c.Runtime.run(ctx)
	go runProvisioner(ctx, c.Client)
	// JobSet, LWS, Kueue and Trainer, with their webhooks (operators.go).
	if err := ops.start(ctx, c, t); err != nil {
		return err
	}
	return c.waitComponents(ctx, 90*time.Second)
}

// waitComponents waits until the controllers act: the default
// ServiceAccount of a new namespace appears (controller manager).
func (c *Cluster) waitComponents(ctx context.Context, timeout time.Duration) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "sim-ready"}}
	if _, err := c.Client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		return err
	}
	deadline := time.Now().Add(timeout)
	for {
		if err := c.Exited(); err != nil {
			return err
		}
		if _, err := c.Client.CoreV1().ServiceAccounts("sim-ready").Get(ctx, "default", metav1.GetOptions{}); err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("kube-controller-manager did not create a ServiceAccount in %v:\n%s", timeout, c.LogTail("kube-controller-manager", 3000))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// Stop stops the in-process parts, then every process.
func (c *Cluster) Stop() {
	if c.cancel != nil {
		c.cancel()
	}
	if c.Runtime != nil {
		c.Runtime.nets.close()
	}
	c.ControlPlane.Stop()
}
