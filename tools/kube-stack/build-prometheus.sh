#!/usr/bin/env bash
# Build Prometheus's server and promtool (github.com/prometheus/prometheus/cmd/prometheus and
# cmd/promtool, pinned by the wrapper module prometheus/go.mod) from Go modules through the
# configured Go module proxy, into the test stack's cache directory:
#
#   ${JOINER_KUBE_STACK_CACHE:-$HOME/.cache/joiner/kube-stack}/<KUBE_VERSION>/bin/prometheus
#   ${JOINER_KUBE_STACK_CACHE:-$HOME/.cache/joiner/kube-stack}/<KUBE_VERSION>/bin/promtool
#
# Built with the tag remove_all_sd (only static, file and HTTP service discovery: the tests
# scrape fixed targets) and without builtinassets (no web UI; the HTTP API is all the tests
# and the benchmark use). Each binary has its own stamp (hash of the wrapper module, the
# flags, the tags and the Go version), so a warm run costs nothing; a binary is written under
# a temporary name and renamed. Used by the import end-to-end tests and the import benchmark.
#
# Usage: build-prometheus.sh [--print-bin-dir]
# Environment: JOINER_KUBE_STACK_CACHE, GOMODCACHE/GOCACHE/GOPROXY as for go.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
tool=prometheus
mod="$here/prometheus"
require=github.com/prometheus/prometheus
go_min=1.26.7
# shellcheck source=gotool.sh
source "$here/gotool.sh" "$@"

# Module v0.MMmm.p is Prometheus MM/100 . MMmm%100 . p (v0.316.0 is 3.16.0), which it reports
# through prometheus/common's version variables (--version, /api/v1/status/buildinfo).
IFS=. read -r _ minor patch <<<"$version"
pv=github.com/prometheus/common/version
ldflags="-s -w -X $pv.Version=$((minor / 100)).$((minor % 100)).$patch -X $pv.Branch=HEAD"
tags=remove_all_sd

gotool_build github.com/prometheus/prometheus/cmd/prometheus "$ldflags" "$tags"
tool=promtool
gotool_build github.com/prometheus/prometheus/cmd/promtool "$ldflags" "$tags"
log "binaries in $bin_dir"
