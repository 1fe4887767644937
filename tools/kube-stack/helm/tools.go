//go:build tools

// Package tools pins the helm command (helm.sh/helm/v3/cmd/helm) built by ../build-helm.sh,
// so that go mod tidy keeps its dependencies in go.mod and go.sum. It is never compiled.
package tools

import (
	_ "helm.sh/helm/v3/cmd/helm"
)
