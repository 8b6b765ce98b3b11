// Command kubectl is the upstream kubectl, built from the Go module proxy at
// the version pinned in go.mod, so the simulated cluster is applied to the
// way users apply: kubectl apply -f.
package main

import (
	"k8s.io/component-base/cli"
	"k8s.io/kubectl/pkg/cmd"
	"k8s.io/kubectl/pkg/cmd/util"
)

func main() {
	command := cmd.NewDefaultKubectlCommand()
	if err := cli.RunNoErrOutput(command); err != nil {
		util.CheckErr(err)
	}
}
