//go:build tools

// Package tools pins Prometheus's server and promtool (github.com/prometheus/prometheus/cmd/...)
// built by ../build-prometheus.sh, so that go mod tidy keeps their dependencies in go.mod and
// go.sum. It is never compiled.
package tools

import (
	_ "github.com/prometheus/prometheus/cmd/prometheus"
	_ "github.com/prometheus/prometheus/cmd/promtool"
)
