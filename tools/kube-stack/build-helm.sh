#!/usr/bin/env bash
# Build Helm (helm.sh/helm/v3/cmd/helm, pinned by the wrapper module helm/go.mod) from Go
# modules through the configured Go module proxy, into the test stack's cache directory:
#
#   ${JOINER_KUBE_STACK_CACHE:-$HOME/.cache/joiner/kube-stack}/<KUBE_VERSION>/bin/helm
#
# Used by `make chart-check` (helm lint, helm template of deploy/chart) and the chart's e2e
# test. A stamp (hash of the wrapper module, the flags and the Go version) makes a warm run
# cost nothing; the binary is written under a temporary name and renamed. Kept apart from
# build.sh so the stack's own e2e tests do not wait for it.
#
# Usage: build-helm.sh [--print-bin-dir]
# Environment: JOINER_KUBE_STACK_CACHE, GOMODCACHE/GOCACHE/GOPROXY as for go.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
tool=helm
mod="$here/helm"
require=helm.sh/helm/v3
go_min=1.26
# shellcheck source=gotool.sh
source "$here/gotool.sh" "$@"

# Helm reports its version from these variables (helm version, and the chart's
# .Capabilities.HelmVersion); a plain module build would leave them empty.
ldflags="-s -w -X helm.sh/helm/v3/internal/version.version=$version"
ldflags+=" -X helm.sh/helm/v3/internal/version.gitTreeState=clean"
gotool_build helm.sh/helm/v3/cmd/helm "$ldflags"
log "binary in $bin_dir"
