# Shared by build-helm.sh, build-karpenter.sh, build-prometheus.sh and build-ksm.sh (sourced,
# with the script's arguments): build Go main packages from a wrapper module into the test
# stack's cache,
#
#   ${JOINER_KUBE_STACK_CACHE:-$HOME/.cache/joiner/kube-stack}/<KUBE_VERSION>/bin/<tool>
#
# with a stamp (hash of the wrapper module, the link flags, the build tags and the Go version)
# so a warm run costs nothing; the binary is written under a temporary name and renamed.
#
# The sourcing script sets:
#   tool     the binary's name (helm, karpenter, prometheus, kube-state-metrics); a script
#            building two binaries from one module sets it again before the second build
#   mod      the wrapper module's directory
#   require  the module path whose version the wrapper's go.mod pins
#   go_min   the Go version to name when go is missing
# This file then runs preamble.sh (cache_root, bin_dir, log, --print-bin-dir, go on PATH,
# the build environment), sets version, and defines gotool_build PACKAGE LDFLAGS [TAGS].

log_name=$tool
# shellcheck source=preamble.sh
source "$(dirname "${BASH_SOURCE[0]}")/preamble.sh" "$@"

version="$(sed -n "s|^require $require \(v[^ ]*\)\$|\1|p" "$mod/go.mod")"
[[ -n "$version" ]] || { log "no 'require $require vX' in $mod/go.mod"; exit 1; }

# gotool_build PACKAGE LDFLAGS [TAGS]: build PACKAGE (with the comma-separated build TAGS) as
# $bin_dir/$tool unless its stamp is current.
gotool_build() {
  local pkg=$1 ldflags=$2 tags=${3-} want start
  want="$(cat "$mod/go.mod" "$mod/go.sum" "$mod"/*.go \
    <(echo "$ldflags" "$(go env GOVERSION)" ${tags:+"tags=$tags"}) |
    sha256sum | cut -d' ' -f1)"
  mkdir -p "$bin_dir"
  if [[ -x "$bin_dir/$tool" && "$(cat "$bin_dir/.$tool.stamp" 2>/dev/null)" == "$want" ]]; then
    log "$tool $version: up to date"
    return 0
  fi
  gotool_tmp="$(mktemp -d "$bin_dir/.build-$tool.XXXXXX")"
  trap 'rm -rf "$gotool_tmp"' EXIT
  log "building $tool $version ($pkg${tags:+, tags $tags})"
  start=$SECONDS
  (cd "$mod" && go build -trimpath -ldflags "$ldflags" -tags "$tags" -o "$gotool_tmp/$tool" "$pkg")
  mv -f "$gotool_tmp/$tool" "$bin_dir/$tool"
  rm -rf "$gotool_tmp"
  echo "$want" >"$bin_dir/.$tool.stamp"
  log "built $tool in $((SECONDS - start)) s"
}
