#!/usr/bin/env bash
# Build the end-to-end test stack (kube-apiserver, kube-scheduler, kube-controller-manager,
# etcd, kwok) from Go modules through the configured Go module proxy, into a versioned cache
# directory outside the repository:
#
#   ${JOINER_KUBE_STACK_CACHE:-$HOME/.cache/joiner/kube-stack}/<KUBE_VERSION>/bin
#
# A binary whose stamp (hash of versions.env, its wrapper module and its flags) matches is
# not rebuilt, so a warm run takes about a second. Binaries are written under a temporary
# name and renamed, so an interrupted build leaves nothing half-written.
#
# Usage: build.sh [--print-bin-dir]
#   --print-bin-dir   print the bin directory and exit without building.
# Also writes kwok's default Stage documents to <KUBE_VERSION>/etc/kwok-stages.yaml.
# Environment: JOINER_KUBE_STACK_CACHE (cache root), GOMODCACHE/GOCACHE/GOPROXY as for go.
# Needs: go >= 1.26 (GOTOOLCHAIN is not changed; no toolchain is downloaded).
set -euo pipefail

log_name=kube-stack
go_min=1.26
# shellcheck source=preamble.sh
source "$(dirname "${BASH_SOURCE[0]}")/preamble.sh" "$@"

go_minor="$(go env GOVERSION | sed -n 's/^go1\.\([0-9]*\).*/\1/p')"
if [[ -z "$go_minor" || "$go_minor" -lt 26 ]]; then
  log "Go >= 1.26 is needed, found $(go env GOVERSION)"
  exit 1
fi

mkdir -p "$bin_dir"
work_tmp="$(mktemp -d "$bin_dir/.build.XXXXXX")"
trap 'rm -rf "$work_tmp"' EXIT

kube_minor="${KUBE_VERSION#v1.}"
kube_minor="${kube_minor%%.*}"
kube_ldflags="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  kube_ldflags+=" -X $pkg.gitVersion=$KUBE_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$kube_minor"
  kube_ldflags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
done
plain_ldflags="-s -w"

# stamp MODULE_DIR LDFLAGS: what a binary was built from.
stamp() {
  cat "$here/versions.env" "$1"/go.mod "$1"/go.sum "$1"/*.go <(echo "$2" "$(go env GOVERSION)") |
    sha256sum | cut -d' ' -f1
}

# build MODULE_DIR LDFLAGS NAME=PACKAGE...: build the missing or stale binaries of one module.
build() {
  local mod="$1" ldflags="$2" want
  shift 2
  want="$(stamp "$mod" "$ldflags")"
  local -a names=() pkgs=()
  local spec name
  for spec in "$@"; do
    name="${spec%%=*}"
    if [[ -x "$bin_dir/$name" && "$(cat "$bin_dir/.$name.stamp" 2>/dev/null)" == "$want" ]]; then
      log "$name: up to date"
    else
      names+=("$name")
      pkgs+=("${spec#*=}")
    fi
  done
  [[ ${#names[@]} -eq 0 ]] && return 0
  local tmp="$work_tmp/$(basename "$mod")"
  mkdir -p "$tmp"
  log "building ${names[*]} in $mod"
  local start=$SECONDS
  (cd "$mod" && go build -trimpath -ldflags "$ldflags" -o "$tmp/" "${pkgs[@]}")
  for name in "${names[@]}"; do
    [[ -x "$tmp/$name" ]] || { log "go build produced no $name"; exit 1; }
    mv -f "$tmp/$name" "$bin_dir/$name"
    echo "$want" >"$bin_dir/.$name.stamp"
  done
  log "built ${names[*]} in $((SECONDS - start)) s"
}

build "$here/kube" "$kube_ldflags" \
  kube-apiserver=k8s.io/kubernetes/cmd/kube-apiserver \
  kube-scheduler=k8s.io/kubernetes/cmd/kube-scheduler \
  kube-controller-manager=k8s.io/kubernetes/cmd/kube-controller-manager
build "$here/etcd" "$plain_ldflags" etcd=joiner.dev/tools/kube-stack/etcd
build "$here/kwok" "$plain_ldflags" kwok=sigs.k8s.io/kwok/cmd/kwok

# kwok's default stages (node-initialize, node heartbeat with Leases, pod ready, complete
# and delete), taken from the pinned kwok module as kwokctl does; a bare kwok has none.
stages="$cache_root/$KUBE_VERSION/etc/kwok-stages.yaml"
if [[ ! -s "$stages" || "$(cat "$stages.stamp" 2>/dev/null)" != "$KWOK_VERSION" ]]; then
  kwok_dir="$(cd "$here/kwok" && go mod download -json "sigs.k8s.io/kwok@$KWOK_VERSION" |
    sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
  mkdir -p "$(dirname "$stages")"
  for f in node/fast/node-initialize node/heartbeat-with-lease/node-heartbeat-with-lease \
    pod/fast/pod-ready pod/fast/pod-complete pod/fast/pod-delete; do
    echo "---"
    cat "$kwok_dir/kustomize/stage/$f.yaml"
  done >"$work_tmp/kwok-stages.yaml"
  mv -f "$work_tmp/kwok-stages.yaml" "$stages"
  echo "$KWOK_VERSION" >"$stages.stamp"
  log "wrote $stages"
fi

log "binaries in $bin_dir"
