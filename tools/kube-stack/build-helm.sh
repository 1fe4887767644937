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
# shellcheck source=versions.env
source "$here/versions.env"
mod="$here/helm"
helm_version="$(sed -n 's/^require helm.sh\/helm\/v3 \(v[^ ]*\)$/\1/p' "$mod/go.mod")"

cache_root="${JOINER_KUBE_STACK_CACHE:-$HOME/.cache/joiner/kube-stack}"
bin_dir="$cache_root/$KUBE_VERSION/bin"

if [[ "${1-}" == "--print-bin-dir" ]]; then
  echo "$bin_dir"
  exit 0
elif [[ $# -gt 0 ]]; then
  echo "usage: build-helm.sh [--print-bin-dir]" >&2
  exit 2
fi

log() { echo "helm: $*" >&2; }
[[ -n "$helm_version" ]] || { log "no 'require helm.sh/helm/v3 vX' in $mod/go.mod"; exit 1; }
command -v go >/dev/null || { log "go is not on PATH (Go >= 1.26 is needed)"; exit 1; }

export CGO_ENABLED=0
export GOFLAGS="${GOFLAGS:+$GOFLAGS }-mod=mod -buildvcs=false"
# Helm reports its version from these variables (helm version, and the chart's
# .Capabilities.HelmVersion); a plain module build would leave them empty.
ldflags="-s -w -X helm.sh/helm/v3/internal/version.version=$helm_version"
ldflags+=" -X helm.sh/helm/v3/internal/version.gitTreeState=clean"
want="$(cat "$mod/go.mod" "$mod/go.sum" "$mod"/*.go <(echo "$ldflags" "$(go env GOVERSION)") |
  sha256sum | cut -d' ' -f1)"

mkdir -p "$bin_dir"
if [[ -x "$bin_dir/helm" && "$(cat "$bin_dir/.helm.stamp" 2>/dev/null)" == "$want" ]]; then
  log "helm $helm_version: up to date"
else
  tmp="$(mktemp -d "$bin_dir/.build-helm.XXXXXX")"
  trap 'rm -rf "$tmp"' EXIT
  log "building helm $helm_version (helm.sh/helm/v3/cmd/helm)"
  start=$SECONDS
  (cd "$mod" && go build -trimpath -ldflags "$ldflags" -o "$tmp/helm" helm.sh/helm/v3/cmd/helm)
  mv -f "$tmp/helm" "$bin_dir/helm"
  echo "$want" >"$bin_dir/.helm.stamp"
  log "built helm in $((SECONDS - start)) s"
fi
log "binary in $bin_dir"
