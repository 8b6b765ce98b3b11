// Command kube-scheduler is the upstream scheduler, built from the Go module
// proxy at the version pinned in go.mod, for the simulated cluster the e2e
// tests run workloads on.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"
)

func main() {
	os.Exit(cli.Run(app.NewSchedulerCommand()))
}
