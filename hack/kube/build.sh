#!/usr/bin/env bash
# build.sh [DIR [PROGRAM...]] builds the cluster programs from this tools
# module into DIR (default .testenv/bin of the repository). PROGRAMs are
# among kube-apiserver, kube-controller-manager, etcd (the default set: what
# the tests run), kubectl (for people and make bench-deploy), helm (from
# the tools module hack/helm, for the chart parity test) and oras (from
# hack/oras, for the OCI interoperability test). Each is
# built once: a stamp beside it records the Kubernetes version, the hash of
# go.sum, the Go version and the flags, and a later run finding the same
# stamp does nothing for it. Everything comes from the Go module proxy; no
# system package is needed.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
dir="${1:-$root/.testenv/bin}"
shift || true
want=("$@")
[ ${#want[@]} -gt 0 ] || want=(kube-apiserver kube-controller-manager etcd)
mkdir -p "$dir"
dir="$(cd "$dir" && pwd)"

version="$(awk '$1 == "k8s.io/kubernetes" { print $2 } $1 == "require" && $2 == "k8s.io/kubernetes" { print $3 }' "$here/go.mod")"
if [ -z "$version" ]; then
  echo "build.sh: no k8s.io/kubernetes requirement in $here/go.mod" >&2
  exit 1
fi
# Compiled without DWARF (the binaries are stripped anyway) and with the
# compiler collecting garbage less often: less work for a cold build.
gcflags="all=-dwarf=false"
export GOGC="${GOGC:-400}"
stamp="$version $(sha256sum "$here/go.sum" | cut -d' ' -f1) $(go env GOVERSION) $gcflags"

# helm's stamp also carries its own module's go.sum, and
# kube-controller-manager's the program that trims it.
stamp_of() {
  case "$1" in
  helm) echo "$stamp $(sha256sum "$here/../helm/go.sum" | cut -d' ' -f1)" ;;
  oras) echo "$stamp $(sha256sum "$here/../oras/go.sum" | cut -d' ' -f1)" ;;
  kube-controller-manager) echo "$stamp $(sha256sum "$here/trimkcm/main.go" | cut -d' ' -f1)" ;;
  *) echo "$stamp" ;;
  esac
}

pkgs=()
todo=()
for b in "${want[@]}"; do
  case "$b" in
  kube-apiserver | kubectl) pkg="k8s.io/kubernetes/cmd/$b" ;;
  # Kubernetes' own, built without the controllers that need nodes,
  # volumes, a cloud or a metrics server (trimkcm says which and why):
  # 286 fewer packages to compile.
  kube-controller-manager) pkg="./kube-controller-manager" ;;
  etcd) pkg="" ;; # built on its own below
  helm) pkg="" ;; # from hack/helm, below: for the chart parity test
  oras) pkg="" ;; # from hack/oras, below: for the OCI interoperability test
  *) echo "build.sh: unknown program $b" >&2; exit 2 ;;
  esac
  if [ -x "$dir/$b" ] && [ "$(cat "$dir/.stamp-$b" 2>/dev/null)" = "$(stamp_of "$b")" ]; then
    continue
  fi
  todo+=("$b")
  [ -z "$pkg" ] || pkgs+=("$pkg")
done
if [ ${#todo[@]} -eq 0 ]; then
  echo "testenv: ${want[*]} ($version) already in $dir"
  exit 0
fi

minor="${version#v1.}"; minor="${minor%%.*}"
# The proxy's checksum database has no entries for some staging modules
# (and the proxy serves endpointslice, kube-controller-manager and
# kube-scheduler only up to v0.31.13, which go.mod's replace pins); go.sum
# pins every hash, so skipping the database for them is safe.
export GONOSUMDB="k8s.io/cluster-bootstrap,k8s.io/dynamic-resource-allocation,k8s.io/kube-aggregator,k8s.io/pod-security-admission,k8s.io/endpointslice,k8s.io/kube-controller-manager,k8s.io/kube-scheduler${GONOSUMDB:+,$GONOSUMDB}"
export GOFLAGS="-mod=readonly"
export CGO_ENABLED=0
ldflags="-s -w"
for kv in "gitVersion=$version" gitMajor=1 "gitMinor=$minor" gitTreeState=clean; do
  ldflags="$ldflags -X k8s.io/component-base/version.$kv"
done
echo "testenv: building ${todo[*]} ($version) into $dir (minutes when cold)"
cd "$here"
# Built into a temporary directory and moved into place, so that an
# interrupted build never leaves a half-written binary that looks current.
tmp="$(mktemp -d "$dir/.build.XXXXXX")"
thp=/sys/kernel/mm/transparent_hugepage/enabled
thp_was=""
cleanup() {
  rm -rf "$tmp"
  if [ -n "$thp_was" ]; then
    echo "$thp_was" > "$thp" && echo "testenv: transparent huge pages back to $thp_was"
  fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM
# A cold build is mostly the compiler's fresh heaps, which the Go runtime
# leaves to the kernel's 4 KiB pages unless transparent huge pages are
# "always"; on a virtual machine each such page fault is dear (on the
# project's 2-core one a cold build takes half the time with them). Run
# as root, the build turns them on for itself and restores the setting
# after; otherwise it says how. Only a build that changed the setting
# restores it, so two builds at once never leave it changed.
# DM_TESTENV_THP=keep leaves the setting alone.
if [ -r "$thp" ] && ! grep -q '\[always\]' "$thp" && [ "${DM_TESTENV_THP:-}" != keep ]; then
  current="$(sed -n 's/.*\[\(.*\)\].*/\1/p' "$thp")"
  if [ "$(id -u)" -eq 0 ] && [ -w "$thp" ] && echo always > "$thp" 2>/dev/null; then
    thp_was="$current"
    echo "testenv: transparent huge pages set to always for this build (they were $current; DM_TESTENV_THP=keep leaves them)"
  else
    echo "testenv: transparent huge pages are $current; a cold build takes about half the time with them on: echo always | sudo tee $thp (and back to $current after)"
  fi
fi
# etcd and helm build beside Kubernetes, not after it: they share almost
# no packages, and the tail of Kubernetes' build (its largest packages,
# then the links) leaves a core idle that their compile fills.
pids=()
for b in "${todo[@]}"; do
  if [ "$b" = etcd ]; then
    # etcd's main package is its server module's root, which go build
    # would name v3.
    go build -trimpath -gcflags "$gcflags" -ldflags "-s -w" -o "$tmp/etcd" go.etcd.io/etcd/server/v3 &
    pids+=($!)
  fi
  if [ "$b" = helm ]; then
    # Its own module, so Helm's requirements never move kube-apiserver's;
    # the Kubernetes version it reports offline is set as Helm's releases do.
    (cd "$here/../helm" && go build -trimpath -gcflags "$gcflags" -ldflags "-s -w -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMinor=$minor" -o "$tmp/helm" helm.sh/helm/v3/cmd/helm) &
    pids+=($!)
  fi
  if [ "$b" = oras ]; then
    # Its own module too: oras's requirements never move the main module's.
    (cd "$here/../oras" && go build -trimpath -gcflags "$gcflags" -ldflags "-s -w" -o "$tmp/oras" oras.land/oras/cmd/oras) &
    pids+=($!)
  fi
done
status=0
overlay=()
if [[ " ${todo[*]} " == *" kube-controller-manager "* ]]; then
  go run ./trimkcm "$tmp/kcm"
  overlay=(-overlay "$tmp/kcm/overlay.json")
fi
if [ ${#pkgs[@]} -gt 0 ]; then
  go build -trimpath "${overlay[@]}" -gcflags "$gcflags" -ldflags "$ldflags" -o "$tmp/" "${pkgs[@]}" || status=$?
fi
for pid in "${pids[@]}"; do
  wait "$pid" || status=$?
done
[ "$status" -eq 0 ] || exit "$status"
for b in "${todo[@]}"; do
  rm -f "$dir/.stamp-$b"
  mv -f "$tmp/$b" "$dir/$b"
  # Captured whole, not piped into head: under pipefail a program still
  # writing when head exits dies of SIGPIPE and fails the build.
  case "$b" in
  kubectl) v="$("$dir/$b" version --client)" ;;
  helm) v="$("$dir/$b" version --short)" ;;
  oras) v="oras $("$dir/$b" version)" ;;
  *) v="$("$dir/$b" --version)" ;;
  esac
  echo "${v%%$'\n'*}"
  stamp_of "$b" > "$dir/.stamp-$b"
done
