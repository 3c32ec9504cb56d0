//go:build tools

// Tools module for kubelet and kube-proxy, the binaries of the local cluster's real node: their
// dependencies (the CRI streaming server, cAdvisor, ...) stay out of the operator's go.mod. Built
// here (make bin/k8s/kubelet bin/k8s/kube-proxy) at the operator's Kubernetes version.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-proxy"
	_ "k8s.io/kubernetes/cmd/kubelet"
)
