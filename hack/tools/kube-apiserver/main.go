// Command kube-apiserver is the upstream API server, built from the Go module
// proxy at the version pinned in go.mod so the e2e tests can dry-run objects
// against a real server.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kube-apiserver/app"
)

func main() {
	os.Exit(cli.Run(app.NewAPIServerCommand()))
}
