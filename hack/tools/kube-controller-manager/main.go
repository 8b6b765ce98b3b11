// Command kube-controller-manager is the upstream controller manager (Job,
// garbage collector, node lifecycle, ...), built from the Go module proxy at
// the version pinned in go.mod, for the simulated cluster the e2e tests run
// workloads on.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kube-controller-manager/app"
)

func main() {
	os.Exit(cli.Run(app.NewControllerManagerCommand()))
}
