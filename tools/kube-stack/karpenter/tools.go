//go:build tools

// Package tools pins Karpenter's kwok-provider controller (sigs.k8s.io/karpenter/kwok) built by
// ../build.sh, so that go mod tidy keeps its dependencies in go.mod and go.sum. It is never
// compiled.
package tools

import (
	_ "sigs.k8s.io/karpenter/kwok"
)
