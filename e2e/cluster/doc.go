// Package cluster runs llmrender's output on a simulated Kubernetes cluster
// built from real components: etcd, kube-apiserver, kube-scheduler,
// kube-controller-manager, the operators the modes use, and kwok for fake
// kubelets.
package cluster
