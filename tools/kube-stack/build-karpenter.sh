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
tool=karpenter
mod="$here/karpenter"
require=sigs.k8s.io/karpenter
go_min=1.26.5
# shellcheck source=gotool.sh
source "$here/gotool.sh" "$@"
crd_dir="$cache_root/$KUBE_VERSION/etc/karpenter-crds"

gotool_build sigs.k8s.io/karpenter/kwok "-s -w"

if [[ "$(cat "$crd_dir/.stamp" 2>/dev/null)" != "$version" ]]; then
  src="$(cd "$mod" && go mod download -json "sigs.k8s.io/karpenter@$version" |
    sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
  rm -rf "$crd_dir.tmp"
  mkdir -p "$crd_dir.tmp"
  cp "$src"/kwok/charts/crds/karpenter.sh_*.yaml "$src"/kwok/apis/crds/karpenter.kwok.sh_*.yaml \
    "$crd_dir.tmp/"
  chmod u+w "$crd_dir.tmp"/*.yaml
  echo "$version" >"$crd_dir.tmp/.stamp"
  rm -rf "$crd_dir"
  mv "$crd_dir.tmp" "$crd_dir"
  log "wrote CRDs of $version to $crd_dir"
fi
log "binary in $bin_dir"
