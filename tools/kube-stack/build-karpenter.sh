#!/usr/bin/env bash
# Build Karpenter's controller with its kwok cloud provider (the main package
# sigs.k8s.io/karpenter/kwok, pinned by the wrapper module karpenter/go.mod) from Go modules
# through the configured Go module proxy, into the test stack's cache directory:
#
#   ${JOINER_KUBE_STACK_CACHE:-$HOME/.cache/joiner/kube-stack}/<KUBE_VERSION>/bin/karpenter
#   ${JOINER_KUBE_STACK_CACHE:-$HOME/.cache/joiner/kube-stack}/<KUBE_VERSION>/etc/karpenter-crds/
#
# The CRDs (karpenter.sh NodePool, NodeClaim, NodeOverlay and karpenter.kwok.sh KWOKNodeClass)
# are copied from the same module version. A stamp (hash of the wrapper module, the flags and
# the Go version) makes a warm run cost nothing; the binary is written under a temporary name
# and renamed. Kept apart from build.sh so the stack's own e2e tests do not wait for it.
#
# Usage: build-karpenter.sh [--print-bin-dir]
# Environment: JOINER_KUBE_STACK_CACHE, GOMODCACHE/GOCACHE/GOPROXY as for go.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=versions.env
source "$here/versions.env"
mod="$here/karpenter"
karpenter_version="$(sed -n 's/^require sigs.k8s.io\/karpenter \(v[^ ]*\)$/\1/p' "$mod/go.mod")"

cache_root="${JOINER_KUBE_STACK_CACHE:-$HOME/.cache/joiner/kube-stack}"
bin_dir="$cache_root/$KUBE_VERSION/bin"
crd_dir="$cache_root/$KUBE_VERSION/etc/karpenter-crds"

if [[ "${1-}" == "--print-bin-dir" ]]; then
  echo "$bin_dir"
  exit 0
elif [[ $# -gt 0 ]]; then
  echo "usage: build-karpenter.sh [--print-bin-dir]" >&2
  exit 2
fi

log() { echo "karpenter: $*" >&2; }
[[ -n "$karpenter_version" ]] || { log "no 'require sigs.k8s.io/karpenter vX' in $mod/go.mod"; exit 1; }
command -v go >/dev/null || { log "go is not on PATH (Go >= 1.26.5 is needed)"; exit 1; }

export CGO_ENABLED=0
export GOFLAGS="${GOFLAGS:+$GOFLAGS }-mod=mod -buildvcs=false"
ldflags="-s -w"
want="$(cat "$mod/go.mod" "$mod/go.sum" "$mod"/*.go <(echo "$ldflags" "$(go env GOVERSION)") |
  sha256sum | cut -d' ' -f1)"

mkdir -p "$bin_dir"
if [[ -x "$bin_dir/karpenter" && "$(cat "$bin_dir/.karpenter.stamp" 2>/dev/null)" == "$want" ]]; then
  log "karpenter $karpenter_version: up to date"
else
  tmp="$(mktemp -d "$bin_dir/.build-karpenter.XXXXXX")"
  trap 'rm -rf "$tmp"' EXIT
  log "building karpenter $karpenter_version (sigs.k8s.io/karpenter/kwok)"
  start=$SECONDS
  (cd "$mod" && go build -trimpath -ldflags "$ldflags" -o "$tmp/karpenter" sigs.k8s.io/karpenter/kwok)
  mv -f "$tmp/karpenter" "$bin_dir/karpenter"
  echo "$want" >"$bin_dir/.karpenter.stamp"
  log "built karpenter in $((SECONDS - start)) s"
fi

if [[ "$(cat "$crd_dir/.stamp" 2>/dev/null)" != "$karpenter_version" ]]; then
  src="$(cd "$mod" && go mod download -json "sigs.k8s.io/karpenter@$karpenter_version" |
    sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
  rm -rf "$crd_dir.tmp"
  mkdir -p "$crd_dir.tmp"
  cp "$src"/kwok/charts/crds/karpenter.sh_*.yaml "$src"/kwok/apis/crds/karpenter.kwok.sh_*.yaml \
    "$crd_dir.tmp/"
  chmod u+w "$crd_dir.tmp"/*.yaml
  echo "$karpenter_version" >"$crd_dir.tmp/.stamp"
  rm -rf "$crd_dir"
  mv "$crd_dir.tmp" "$crd_dir"
  log "wrote CRDs of $karpenter_version to $crd_dir"
fi
log "binary in $bin_dir"
