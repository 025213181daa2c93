#!/usr/bin/env bash
# The body of `make test` and `make test-short`.
#
#   hack/test.sh full    set up what the tests need (kube-apiserver,
#                        kube-controller-manager, kubectl and etcd built into
#                        .testenv/bin; Chromium from Debian), then gofmt,
#                        every test with -race, and beside the tests at
#                        nice 19 go vet and the fuzz targets
#   hack/test.sh short   go vet, gofmt and the tests with -short: no
#                        apiserver, no browser, no fuzzing
#
# Every step runs even when one before it failed, so that one run shows
# everything that is wrong; hack/testsum counts tests, subtests and checks
# and prints the closing line "N passed, M failed, K skipped" last. A suite
# that cannot run fails (kubetest and the browser tests fail without their
# programs unless -short), and so does a set-up step.
# FUZZ_TARGETS (from the Makefile) lists pkg:FuzzName:budget.
set -uo pipefail
cd "$(dirname "$0")/.."

mode="${1:-full}"
GO="${GO:-go}"
out=".testenv/results"
mkdir -p "$out"
tally="$out/tally.json"
rm -f "$tally"
sum="$out/testsum"
status=0
start=$SECONDS
step() { echo "== $1 (at $(( (SECONDS - start) / 60 ))m$(( (SECONDS - start) % 60 ))s)"; }

if ! "$GO" build -o "$sum" ./hack/testsum; then
  echo "make test: could not build hack/testsum" >&2
  echo "0 passed, 1 failed, 0 skipped"
  exit 1
fi

check() { # NAME COMMAND...: a step that is not a Go test
  local name="$1"; shift
  step "$name"
  if "$@"; then
    "$sum" -tally "$tally" -check "$name"
  else
    status=1
    "$sum" -tally "$tally" -check "$name" -failed -detail "exit $?"
  fi
}

gotest() { # go test arguments: its JSON goes through testsum
  "$GO" test -json "$@" 2>&1 | "$sum" -tally "$tally" || status=1
}

fmt_check() {
  local bad
  bad=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './.testenv/*'))
  if [ -n "$bad" ]; then
    echo "gofmt would change:"; echo "$bad"
    return 1
  fi
}

# A set-up step that fails stops the run before any test: the tests it
# would serve cannot run, and running the rest would hide that.
setup_failed() {
  echo "make test: $1" >&2
  "$sum" -tally "$tally" -check "set-up" -failed -detail "$1"
  "$sum" -tally "$tally" -summary
  exit 1
}

as_root() { [ "$(id -u)" = 0 ]; }

# python_has_dmref_modules: some python3 the differential test tries
# (DM_PYTHON, python3 on PATH, Debian's) has jinja2 and yaml.
python_has_dmref_modules() {
  local py
  for py in "${DM_PYTHON:-}" "$(command -v python3 2>/dev/null)" /usr/bin/python3; do
    [ -n "$py" ] && [ -x "$py" ] && "$py" -c 'import jinja2, yaml' >/dev/null 2>&1 && return 0
  done
  return 1
}

apt_install() { # PACKAGE...
  step "apt-get install $*"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq && apt-get install -y -qq --no-install-recommends "$@"
}

setup() {
  # patch: the catalog's diffs are applied with GNU patch; openssl makes
  # the key pairs the signature tests sign with, as a user would.
  for tool in git gcc patch openssl; do
    command -v "$tool" >/dev/null 2>&1 && continue
    # gcc: the race detector needs cgo.
    pkg="$tool"; [ "$tool" = gcc ] && pkg=build-essential
    if as_root; then
      apt_install "$pkg" || setup_failed "apt-get install $pkg failed"
    else
      setup_failed "$tool is missing: run \`sudo apt-get install -y $pkg\`, then make test again"
    fi
  done
  step "testenv"
  ./hack/kube/build.sh "$PWD/.testenv/bin" kube-apiserver kube-controller-manager etcd kubectl helm oras ||
    setup_failed "building kube-apiserver, kube-controller-manager, etcd, kubectl, helm and oras into .testenv/bin failed (make testenv)"
  # The differential test of the template engines (internal/expand
  # TestDMDiff) runs DM's expansion code, scripts/dmref, on a python3
  # with jinja2 and PyYAML.
  if ! python_has_dmref_modules; then
    if as_root; then
      apt_install python3 python3-jinja2 python3-yaml || setup_failed "apt-get install python3-jinja2 python3-yaml failed"
    else
      setup_failed "the differential test of the template engines needs python3 with jinja2 and PyYAML: run \`sudo apt-get install -y python3-jinja2 python3-yaml\`, then make test again (or set DM_PYTHON to a python3 that has them)"
    fi
  fi
  if ! command -v chromium >/dev/null 2>&1 && [ ! -x /usr/bin/chromium ]; then
    if as_root; then
      apt_install chromium || setup_failed "apt-get install chromium failed"
    else
      setup_failed "the catalog's browser tests need Chromium: run \`sudo apt-get install -y chromium\`, then make test again (or make test-short, which leaves them out)"
    fi
  fi
}

# What runs beside the tests (start_beside) writes into $beside: for step N,
# N.name (the step's header), N.kind (check or test), N.out (its output,
# go test -json for a test) and N.rc (its exit status, once it ended).
beside="$out/beside"
beside_pid=""

beside_step() { # N KIND NAME COMMAND...
  local n="$1" kind="$2" name="$3"; shift 3
  printf '%s\n' "$name" > "$beside/$n.name"
  echo "$kind" > "$beside/$n.kind"
  nice -n 19 "$@" > "$beside/$n.out" 2>&1
  echo $? > "$beside/$n.rc"
}

start_beside() {
  rm -rf "$beside"; mkdir -p "$beside"
  step "go vet and the fuzz targets: beside the tests, at nice 19"
  # A process group of its own (job control on while it starts), so that
  # an interrupted run stops it whole.
  set -m
  (
    beside_step 000 check "go vet" "$GO" vet ./...
    # Budgets are counts of executions, about six seconds each here: a
    # duration -fuzztime can fail at its deadline with a bare "context
    # deadline exceeded" (go.dev/issue/75804). FUZZTIME=30s overrides them.
    i=1
    for t in ${FUZZ_TARGETS:-}; do
      pkg="${t%%:*}"; rest="${t#*:}"; fn="${rest%%:*}"; budget="${FUZZTIME:-${rest#*:}}"
      beside_step "$(printf %03d "$i")" test "fuzz $fn ($pkg, $budget)" \
        "$GO" test -json -run '^$' -fuzz "^$fn\$" -fuzztime "$budget" "$pkg"
      i=$((i + 1))
    done
  ) &
  beside_pid=$!
  set +m
  trap 'kill -TERM -- "-$beside_pid" 2>/dev/null' EXIT
}

# finish_beside waits for what start_beside runs and counts it, in order.
finish_beside() {
  step "waiting for go vet and the fuzz targets"
  wait "$beside_pid"
  trap - EXIT
  local f n name rc
  for f in "$beside"/*.name; do
    n="${f%.name}"; name="$(cat "$f")"; rc="$(cat "$n.rc" 2>/dev/null || echo 1)"
    echo "== $name (ran beside the tests)"
    if [ "$(cat "$n.kind")" = check ]; then
      cat "$n.out"
      if [ "$rc" = 0 ]; then
        "$sum" -tally "$tally" -check "$name"
      else
        status=1
        "$sum" -tally "$tally" -check "$name" -failed -detail "exit $rc"
      fi
    else
      "$sum" -tally "$tally" < "$n.out" || status=1
    fi
  done
}

case "$mode" in
full)
  setup
  # The tests find the programs here, whatever directory they run in.
  export DM_KUBE_BIN="$PWD/.testenv/bin"
  check "gofmt" fmt_check
  # make generate rewrites the generated files: it runs before the tests
  # compile them.
  check "generated code (make generate-check)" make -s generate-check
  # go vet and the fuzz targets only read the tree: they run beside the
  # tests, at the lowest CPU priority, so that they take the CPU the
  # tests leave idle (the tests wait on apiservers, processes and
  # deadlines a good part of the time) and barely slow the tests, whose
  # deadlines were set for a machine without them. Fuzz budgets are
  # counts of executions, not durations, so being starved for a while
  # changes when a target ends, not what it does. Their output is kept
  # and counted once the tests are done.
  start_beside
  step "go test -race ./..."
  gotest -race -count=1 -timeout 30m ./...
  # The memory limits of the sandbox's workers cannot be set under the
  # race detector (its allocator reserves terabytes of address space):
  # those tests are built without -race, and run here. Without cgo too, as
  # make build builds registryd: the workers are this test binary, and in a
  # cgo build each of their threads is a pthread whose 8 MiB stack counts
  # toward the address-space limit (docs/isolation.md).
  step "go test ./internal/sandbox (memory limits, without -race or cgo)"
  CGO_ENABLED=0 gotest -count=1 -run '^TestMemory' ./internal/sandbox
  finish_beside
  step "done"
  "$sum" -tally "$tally" -summary || status=1
  ;;
short)
  check "go vet" "$GO" vet ./...
  check "gofmt" fmt_check
  step "go test -short -race ./..."
  gotest -short -race -count=1 ./...
  step "done"
  "$sum" -tally "$tally" -summary \
    -left-out "the kube-apiserver and controller suites, the Chromium tests, the built-binary contract and hostile-template suites, the sandbox memory limits, the generated-code check, fuzzing (make test runs them all)" || status=1
  ;;
*)
  echo "usage: hack/test.sh full|short" >&2
  exit 2
  ;;
esac
exit "$status"
