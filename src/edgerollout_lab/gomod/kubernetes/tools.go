//go:build tools

// Package tools pins the Kubernetes control-plane commands and the kubelet so that `go build` of them is
// reproducible: the staging modules are replaced by their published versions in go.mod.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubelet"
)
