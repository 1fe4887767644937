//go:build tools

// Package tools pins kube-state-metrics (k8s.io/kube-state-metrics/v2) built by
// ../build-ksm.sh, so that go mod tidy keeps its dependencies in go.mod and go.sum. It is
// never compiled.
package tools

import (
	_ "k8s.io/kube-state-metrics/v2"
)
