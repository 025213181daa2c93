# Makefile for dm and registryd. `make run` serves registry-example at
# http://127.0.0.1:8080; `make test` sets up what the tests need and runs
# everything CI runs; `make test-short` runs what needs no set-up.
GO        ?= go
BIN       := bin
ADDR      ?= 127.0.0.1:8080
BENCHTIME ?= 1s

.PHONY: all build install run test test-short vet fmt-check generate generate-check generate-gcp refresh-gcp unit fuzz bench bench-catalog bench-http bench-e2e dmref clean testenv kubectl dev-cluster bench-deploy bench-scale bench-replicas bench-controller bench-chart bench-convert bench-tenancy bench-impact dm-samples dm-public screenshots dmdiff bench-rollout

all: build

# dm-helm renders, lints and downloads Helm charts for dm, and
# dm-helm-render only renders them offline, starting for less; dm finds
# them beside itself (dm does not link Helm: its start-up cost stays off
# commands without charts). The programs are built without cgo, as Helm's
# own releases are: static binaries start without the dynamic loader and
# libc (about 7 % less CPU for a chart's dm expand: docs/benchmarks.md, Helm
# charts), and all of them in one build share one set of compiled packages.
# None uses cgo. dm-sigstore verifies and makes signatures for dm, which
# links no Sigstore library either.
PROGRAMS = ./cmd/registryd ./cmd/dm ./cmd/dm-helm ./cmd/dm-helm-render ./cmd/dm-controller ./cmd/dm-sigstore

build:
	CGO_ENABLED=0 $(GO) build -buildvcs=auto -o $(BIN)/ $(PROGRAMS)

# Into $GOBIN (go env GOPATH/bin): dm, dm-helm, dm-helm-render and
# dm-sigstore side by side.
install:
	CGO_ENABLED=0 $(GO) install -buildvcs=auto $(PROGRAMS)

# make run builds what it runs: registryd and the two programs it renders
# and lints the example's Helm chart with; a first build compiles about
# 1,100 packages (docs/testing.md has the time it takes).
RUN_PROGRAMS = ./cmd/registryd ./cmd/dm-helm ./cmd/dm-helm-render

run:
	@test -x $(BIN)/registryd || echo "make run: building registryd, dm-helm and dm-helm-render into $(BIN)/ (a first build takes several minutes; later ones seconds)"
	CGO_ENABLED=0 $(GO) build -buildvcs=auto -o $(BIN)/ $(RUN_PROGRAMS)
	$(BIN)/registryd --addr $(ADDR) --registry-dir github.com/acme/templates=./registry-example

# hack/test.sh: builds .testenv/bin (kube-apiserver, kube-controller-manager,
# kubectl, etcd) if missing or outdated, installs Chromium with apt-get when
# run as root (else stops with the command to run), then gofmt,
# go test -race ./... and the sandbox's memory limits without -race, with
# go vet and the fuzz targets beside them at the lowest CPU priority; every
# test and subtest is counted from go test -json and the last line is
# "N passed, M failed, K skipped". A suite that cannot run fails it. It runs generate-check too: the controller's committed CRDs
# and deepcopy code must be what its Go types generate.
test:
	@FUZZ_TARGETS="$(FUZZ_TARGETS)" GO="$(GO)" ./hack/test.sh full

# No set-up: go vet, gofmt and go test -short -race ./... (no apiserver, no
# browser, no fuzzing); the last line says what it left out.
test-short:
	@GO="$(GO)" ./hack/test.sh short

vet:
	$(GO) vet ./...

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

# The controller's CRDs and deepcopy functions, generated from its Go types
# (internal/controller/api/v1alpha1) by controller-gen, pinned in the tools
# module hack/tools. generate-check fails when the committed files are stale.
CONTROLLER_GEN := $(CURDIR)/.testenv/bin/controller-gen
$(CONTROLLER_GEN): hack/tools/go.mod hack/tools/go.sum
	cd hack/tools && $(GO) build -o $(CONTROLLER_GEN) sigs.k8s.io/controller-tools/cmd/controller-gen

generate: $(CONTROLLER_GEN) generate-gcp
	$(CONTROLLER_GEN) object paths=./internal/controller/api/... crd:crdVersions=v1 output:crd:dir=./internal/controller/crds

generate-check: generate
	@git diff --exit-code -- internal/controller/crds internal/controller/api internal/gcp/zz_generated.go && \
	  test -z "$$(git status --porcelain -- internal/controller/crds internal/controller/api internal/gcp/zz_generated.go)" || \
	  { git status --short -- internal/controller/crds internal/controller/api internal/gcp/zz_generated.go; \
	    echo "generated files are stale: run make generate and commit them"; exit 1; }

# internal/gcp's tables (DM types -> Config Connector kinds, REST fields ->
# KCC fields) from internal/gcp/kinds.yaml and the inputs vendored under
# third_party/kcc and third_party/googleapis, offline; TestGeneratedUpToDate
# (hack/gcpgen) fails when the committed file is stale. refresh-gcp vendors
# the inputs again from KCC_DIR (Config Connector's crds/, servicemappings/
# and reference/ at the commit third_party/kcc/README.md names) and from
# google.golang.org/api through the module proxy, then generates.
KCC_DIR ?= ../shared/kcc
generate-gcp:
	$(GO) run ./hack/gcpgen

refresh-gcp:
	$(GO) run ./hack/gcpgen -refresh -kcc $(KCC_DIR)

unit:
	$(GO) test -race -count=1 ./...

# Each fuzz target runs briefly; a crash is saved under testdata/fuzz and
# fails the run (and every later `go test` replays it). Budgets are counts of
# executions, a smoke run of 1 to 15 seconds each on the idle 2-core machine
# (FuzzParseConfig's executions are the slowest, about 7 ms): make test runs
# them beside the tests, at nice 19, and must stay under ten minutes, so what
# they leave after the tests is its tail; the corpus each run finds stays in
# the Go cache for the next.
# Run `make fuzz FUZZTIME=500000x` to fuzz longer: a duration -fuzztime can fail at
# its deadline with a bare "context deadline exceeded" and no failing input
# (go.dev/issue/75804, fixed in Go 1.27). FUZZTIME=30s overrides them all.
FUZZ_TARGETS := \
	./internal/resolve:FuzzParse:20000x \
	./internal/fetch:FuzzDecodeTree:10000x \
	./internal/expand:FuzzParseConfig:2000x \
	./internal/expand:FuzzFastYAML:4000x \
	./internal/expand:FuzzEmitYAML:4000x \
	./internal/expand/starlark:FuzzPythonRewrites:10000x \
	./internal/expand:FuzzPyPercent:4000x \
	./internal/expand/jinja:FuzzJinjaTagNewlines:10000x \
	./internal/expand/jinja:FuzzJinjaTagLiterals:4000x \
	./internal/expand/starlark:FuzzPyYAMLDump:4000x \
	./internal/expand/pyyaml:FuzzDecode:10000x \
	./internal/expand/openshift:FuzzSubstitute:20000x \
	./internal/expand/openshift:FuzzParse:1000x \
	./internal/expand/schema:FuzzParse:10000x \
	./internal/expand/pyre:FuzzTranslate:10000x \
	./internal/deploy/driver:FuzzDecode:8000x \
	./internal/deploy/kube:FuzzExportParam:10000x \
	./internal/catalog:FuzzForm:2000x \
	./internal/kubereg:FuzzTokenCheck:10000x \
	./internal/sandbox:FuzzDecode:8000x \
	./internal/sandbox:FuzzSlotRecord:5000x \
	./internal/expand/helm:FuzzSortManifests:2000x \
	./internal/expand/value:FuzzMarshalYAML:5000x \
	./internal/server:FuzzParseScope:20000x \
	./internal/gcp:FuzzConvert:5000x \
	./internal/controller:FuzzRedaction:2000x \
	./internal/fetch/oci/artifact:FuzzParseManifest:10000x \
	./internal/fetch/oci/artifact:FuzzParseConfig:10000x \
	./internal/fetch/oci/artifact:FuzzUnpack:5000x \
	./internal/fetch/oci:FuzzParseURL:20000x \
	./internal/fetch/oci/artifact:FuzzParseReferrers:10000x \
	./internal/fetch/oci/artifact:FuzzParseSignatureManifest:10000x \
	./internal/signature:FuzzVerify:2000x

fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do \
	  pkg=$${t%%:*}; rest=$${t#*:}; fn=$${rest%%:*}; budget=$${FUZZTIME:-$${rest#*:}}; \
	  echo "fuzz $$fn ($$pkg, $$budget)"; \
	  $(GO) test -run '^$$' -fuzz "^$$fn$$" -fuzztime $$budget $$pkg; \
	done

bench:
	$(GO) test -run '^$$' -bench . -benchmem -benchtime $(BENCHTIME) ./internal/...
	$(GO) test -run '^$$' -bench DMExpandGitHub -benchtime 30x .

# The catalog's pages with 10,000 template versions loaded and every example
# tested: server time per page with its p50 and p95.
bench-catalog:
	$(GO) test -run '^$$' -bench BenchmarkPages -benchtime 300x ./internal/catalog

bench-http: build
	./scripts/bench-http.sh

bench-e2e: build
	./scripts/bench-e2e.sh

# registryd's serving stack at 10k, 100k and 1M generated template versions
# in one registry, then 100k and 1M spread over 10,000 registries: memory
# after indexing, index time, snapshot size, resolve p50/p99 over HTTP
# (docs/scaling.md). Each size is a process of its own; each resolve loop
# stops after 2,000 requests or 30 s. About 190 CPU-seconds: some 3 to 4
# minutes on 2 idle cores (13 minutes on the loaded machine of the figures).
bench-scale:
	$(GO) build -o $(BIN)/benchscale ./scripts/benchscale
	$(BIN)/benchscale -sizes 10000,100000,1000000
	$(BIN)/benchscale -sizes 100000,1000000 -registries 10000 -versions 5

# kube-apiserver, kube-controller-manager, etcd and kubectl for the cluster
# tests, `make dev-cluster` and `make bench-deploy`, built once from the
# tools module hack/kube (the main module never requires k8s.io/kubernetes)
# into .testenv/bin; a stamp makes a second run do nothing. kubectl is for
# the documentation's kubectl lines, which the README test runs, and for
# people; it shares most of its packages with the others. helm (from
# hack/helm) is for the chart parity test of internal/expand/helm, oras (from
# hack/oras) for the OCI interoperability test of internal/fetch/oci.
testenv:
	./hack/kube/build.sh $(CURDIR)/.testenv/bin kube-apiserver kube-controller-manager etcd kubectl helm oras

kubectl:
	./hack/kube/build.sh $(CURDIR)/.testenv/bin kubectl

# A local cluster (etcd + kube-apiserver, no kubelet) until Ctrl-C;
# DEVCLUSTER_FLAGS="-port 6443" fixes the port. It builds what it runs, and
# kubectl for people: a first build takes several minutes.
dev-cluster:
	./hack/kube/build.sh $(CURDIR)/.testenv/bin kube-apiserver etcd kubectl
	$(GO) build -o $(BIN)/ ./hack/devcluster
	$(BIN)/devcluster $(DEVCLUSTER_FLAGS)

# dm deploy vs kubectl apply --server-side of the same 100 ConfigMaps, whole
# processes, against one local apiserver (scripts/benchdeploy). RUNS=N.
RUNS ?= 5
bench-deploy: build testenv kubectl
	$(GO) run ./scripts/benchdeploy -dm $(BIN)/dm -runs $(RUNS)

# dm expand of the 30-object chart (dm and the dm-helm it starts) against
# helm template of it, CPU of whole processes, PAIRS runs of each in turn
# (scripts/benchchart; docs/benchmarks.md, Helm charts).
PAIRS ?= 15
bench-chart: build testenv
	$(GO) run ./scripts/benchchart -dm $(BIN)/dm -helm .testenv/bin/helm -pairs $(PAIRS)

# dm convert of a 100-resource Deployment Manager configuration
# (testdata/gcp/bench100) against dm expand -o json of it, whole processes,
# CPU of PAIRS runs of each in turn (docs/benchmarks.md, Leaving Deployment
# Manager).
bench-convert: build
	$(GO) run ./scripts/benchchart -pairs $(PAIRS) \
	  -a '$(BIN)/dm convert testdata/gcp/bench100/config.yaml --project acme' \
	  -b '$(BIN)/dm expand testdata/gcp/bench100/config.yaml -o json'

# dm impact over 1,000 instances of 10 distinct property sets in 10
# namespaces, applied as dm-controller applies them, against a local
# apiserver: the time of one preview (target under 10 s) and its
# expansions (exactly 10) (docs/benchmarks.md, dm impact). Setting up the
# fleet takes some minutes.
bench-impact: testenv
	$(GO) test -count=1 -run '^$$' -bench BenchmarkImpact -benchtime 3x -timeout 30m ./cmd/dm/

# Three registryd processes with --watch-registries against one local
# apiserver and the GitHub test server: push-to-all-replicas p95 over 20
# pushes, GitHub requests per push, example tests per version, idle
# apiserver requests per replica per minute (docs/benchmarks.md). About
# four minutes: two of them are measured idle minutes.
bench-replicas: testenv
	$(GO) test -count=1 -run '^$$' -bench BenchmarkReplicas -benchtime 1x -timeout 15m ./cmd/registryd/

# registryd with --watch-registries under its template's rights against a
# local apiserver: its RSS with 50 Registries of 1,000 versions each, and
# GET /v1/resolve of a namespace's registry with a bearer token (reviewed
# once, then cached) against an anonymous one of a ClusterRegistry, under
# wrk in turns; then its RSS before, with and after six Registries of
# 99,000 tree entries each, created and deleted (BenchmarkTenancyMemory)
# (docs/benchmarks.md, Multi-tenancy). About 8 minutes.
bench-tenancy: testenv
	$(GO) test -count=1 -run '^$$' -bench 'BenchmarkTenancy' -benchtime 1x -timeout 30m ./cmd/registryd/

# registryd under its template's rights against a local apiserver while 64
# connections flood it with made-up bearer tokens, from one address and
# from 64: the latency of legitimate first reads (a token never seen, 20 of
# them: FIRST_READS), target under a second (docs/benchmarks.md,
# Multi-tenancy). About a minute.
.PHONY: bench-auth
bench-auth: testenv
	$(GO) test -count=1 -run '^$$' -bench BenchmarkTokenFlood -benchtime 1x -timeout 15m ./cmd/registryd/

# dm-controller as a process against a test apiserver: 100 instances of a
# five-object template (create -> Ready, drift restored, a patch rolled
# out, the writes of an idle resync), then its RSS with
# DM_BENCH_INSTANCES (default 1000) instances (docs/benchmarks.md).
bench-controller: testenv
	$(GO) test -run '^$$' -bench BenchmarkController -benchtime 1x -timeout 40m ./cmd/dm-controller

# A patch rolled out to DM_BENCH_INSTANCES (default 1,000) instances in
# three waves by dm-controller (a TemplateRolloutPolicy), against the test
# apiserver: the apiserver writes per instance by resource, beside those
# of a patch no policy governs (docs/benchmarks.md).
bench-rollout: testenv
	$(GO) test -run '^$$' -bench BenchmarkRollout -benchtime 1x -timeout 90m ./cmd/dm-controller

# The public Deployment Manager samples nobody here wrote, converted and
# applied to a test apiserver holding Config Connector's CRDs under strict
# validation (internal/manifest/testdata/dmsamples.yaml names each file and
# its commit). The files are not in this repository: DM_SAMPLES_DIR names a
# checkout of GoogleCloudPlatform/deploymentmanager-samples, CFT_SAMPLES_DIR
# one of GoogleCloudPlatform/cloud-foundation-toolkit (cftsamples.yaml).
dm-samples: testenv
	DM_SAMPLES_DIR="$(DM_SAMPLES_DIR)" CFT_SAMPLES_DIR="$(CFT_SAMPLES_DIR)" $(GO) test -count=1 -tags dmsamples -run TestDMSamples -v ./internal/manifest

# dm-public converts and applies the public DM configurations of
# internal/manifest/testdata/dmpublic.yaml, read from DM_PUBLIC_DIR/OWNER/NAME
# (each repository checked out at the commit its entries name).
dm-public: testenv
	DM_PUBLIC_DIR="$(DM_PUBLIC_DIR)" $(GO) test -count=1 -tags dmsamples -run TestDMPublic -v ./internal/manifest

# dmref regenerates the DM corpus goldens with the Python reference
# (python3, jinja2, PyYAML; Debian: apt-get install python3-jinja2 python3-yaml).
dmref:
	python3 scripts/dmref/expand.py internal/expand/testdata/dmcorpus/*/

# Screenshots of every page kind of the catalog at 1280 and 420 px wide
# (headless Chromium over registry-example), for review: the test that
# takes them also fails on any page that scrolls sideways.
SCREENSHOTS_DIR ?= .cache/screenshots
screenshots:
	DM_ARTIFACTS="$(abspath $(SCREENSHOTS_DIR))" $(GO) test -count=1 -run '^TestBrowserWidths$$' ./internal/catalog
	@echo "screenshots of every page kind in $(SCREENSHOTS_DIR)"

# dmdiff runs the differential test of the template engines longer than
# make test does: DMDIFF_N generated and mutated templates (seed
# DMDIFF_SEED) through dm and scripts/dmref; each difference is minimized
# and, with DMDIFF_KEEP=DIR, written there as a corpus case.
# DMDIFF_ALL=1 also generates the constructs listed as known differences.
DMDIFF_N ?= 5000
DMDIFF_SEED ?= 1
dmdiff:
	DMDIFF_N=$(DMDIFF_N) DMDIFF_SEED=$(DMDIFF_SEED) $(GO) test -count=1 -timeout 0 -run '^TestDMDiff$$' -v ./internal/expand/

clean:
	rm -rf $(BIN)
