#!/usr/bin/env bash
# Build kube-state-metrics (the main package k8s.io/kube-state-metrics/v2, pinned by the
# wrapper module ksm/go.mod) from Go modules through the configured Go module proxy, into the
# test stack's cache directory:
#
#   ${JOINER_KUBE_STACK_CACHE:-$HOME/.cache/joiner/kube-stack}/<KUBE_VERSION>/bin/kube-state-metrics
#
# A stamp (hash of the wrapper module, the flags and the Go version) makes a warm run cost
# nothing; the binary is written under a temporary name and renamed. Used by the import
# end-to-end tests (tests/e2e/promstack.py runs it against the test stack's API server).
#
# Usage: build-ksm.sh [--print-bin-dir]
# Environment: JOINER_KUBE_STACK_CACHE, GOMODCACHE/GOCACHE/GOPROXY as for go.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
tool=kube-state-metrics
mod="$here/ksm"
require=k8s.io/kube-state-metrics/v2
go_min=1.26
# shellcheck source=gotool.sh
source "$here/gotool.sh" "$@"

# kube-state-metrics reports its version (--version, its build_info metric) from these, as
# its own Makefile sets them.
pv=github.com/prometheus/common/version
gotool_build k8s.io/kube-state-metrics/v2 "-s -w -X $pv.Version=$version -X $pv.Branch=HEAD"
log "binary in $bin_dir"
