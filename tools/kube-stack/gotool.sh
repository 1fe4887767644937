# Shared by build-helm.sh and build-karpenter.sh (sourced, with the script's arguments): build
# one Go main package from its wrapper module into the test stack's cache,
#
#   ${JOINER_KUBE_STACK_CACHE:-$HOME/.cache/joiner/kube-stack}/<KUBE_VERSION>/bin/<tool>
#
# with a stamp (hash of the wrapper module, the link flags and the Go version) so a warm run
# costs nothing; the binary is written under a temporary name and renamed.
#
# The sourcing script sets:
#   tool     the binary's name (helm, karpenter)
#   mod      the wrapper module's directory
#   require  the module path whose version the wrapper's go.mod pins
#   go_min   the Go version to name when go is missing
# This file then sets cache_root, bin_dir and version, defines log, answers --print-bin-dir
# (and refuses any other argument), and defines gotool_build PACKAGE LDFLAGS.

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=versions.env
source "$here/versions.env"

cache_root="${JOINER_KUBE_STACK_CACHE:-$HOME/.cache/joiner/kube-stack}"
bin_dir="$cache_root/$KUBE_VERSION/bin"

if [[ "${1-}" == "--print-bin-dir" ]]; then
  echo "$bin_dir"
  exit 0
elif [[ $# -gt 0 ]]; then
  echo "usage: $(basename "$0") [--print-bin-dir]" >&2
  exit 2
fi

log() { echo "$tool: $*" >&2; }
version="$(sed -n "s|^require $require \(v[^ ]*\)\$|\1|p" "$mod/go.mod")"
[[ -n "$version" ]] || { log "no 'require $require vX' in $mod/go.mod"; exit 1; }
command -v go >/dev/null || { log "go is not on PATH (Go >= $go_min is needed)"; exit 1; }

export CGO_ENABLED=0
export GOFLAGS="${GOFLAGS:+$GOFLAGS }-mod=mod -buildvcs=false"

# gotool_build PACKAGE LDFLAGS: build PACKAGE as $bin_dir/$tool unless its stamp is current.
gotool_build() {
  local pkg=$1 ldflags=$2 want start
  want="$(cat "$mod/go.mod" "$mod/go.sum" "$mod"/*.go <(echo "$ldflags" "$(go env GOVERSION)") |
    sha256sum | cut -d' ' -f1)"
  mkdir -p "$bin_dir"
  if [[ -x "$bin_dir/$tool" && "$(cat "$bin_dir/.$tool.stamp" 2>/dev/null)" == "$want" ]]; then
    log "$tool $version: up to date"
    return 0
  fi
  gotool_tmp="$(mktemp -d "$bin_dir/.build-$tool.XXXXXX")"
  trap 'rm -rf "$gotool_tmp"' EXIT
  log "building $tool $version ($pkg)"
  start=$SECONDS
  (cd "$mod" && go build -trimpath -ldflags "$ldflags" -o "$gotool_tmp/$tool" "$pkg")
  mv -f "$gotool_tmp/$tool" "$bin_dir/$tool"
  echo "$want" >"$bin_dir/.$tool.stamp"
  log "built $tool in $((SECONDS - start)) s"
}
