# Makefile for dm and registryd. `make run` serves registry-example at
# http://127.0.0.1:8080; `make test` runs everything CI runs.
GO        ?= go
BIN       := bin
ADDR      ?= 127.0.0.1:8080
BENCHTIME ?= 1s

.PHONY: all build run test vet fmt-check unit fuzz bench bench-http bench-e2e clean

all: build

build:
	$(GO) build -buildvcs=auto -o $(BIN)/ ./cmd/registryd ./cmd/dm

run: build
	$(BIN)/registryd --addr $(ADDR) --registry-dir github.com/acme/templates=./registry-example

test: vet fmt-check unit fuzz

vet:
	$(GO) vet ./...

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

unit:
	$(GO) test -race -count=1 ./...

# Each fuzz target runs briefly; a crash is saved under testdata/fuzz and
# fails the run (and every later `go test` replays it). Budgets are counts of
# executions, about ten seconds each here: a duration -fuzztime can fail at
# its deadline with a bare "context deadline exceeded" and no failing input
# (go.dev/issue/75804, fixed in Go 1.27). FUZZTIME=30s overrides them all.
FUZZ_TARGETS := \
	./internal/resolve:FuzzParse:100000x \
	./internal/expand:FuzzParseConfig:30000x \
	./internal/expand:FuzzFastYAML:50000x \
	./internal/expand:FuzzEmitYAML:50000x \
	./internal/expand/openshift:FuzzSubstitute:100000x \
	./internal/expand/openshift:FuzzParse:3000x \
	./internal/expand/schema:FuzzParse:50000x \
	./internal/sandbox:FuzzDecode:100000x

fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do \
	  pkg=$${t%%:*}; rest=$${t#*:}; fn=$${rest%%:*}; budget=$${FUZZTIME:-$${rest#*:}}; \
	  echo "fuzz $$fn ($$pkg, $$budget)"; \
	  $(GO) test -run '^$$' -fuzz "^$$fn$$" -fuzztime $$budget $$pkg; \
	done

bench:
	$(GO) test -run '^$$' -bench . -benchmem -benchtime $(BENCHTIME) ./internal/...

bench-http: build
	./scripts/bench-http.sh

bench-e2e: build
	./scripts/bench-e2e.sh

clean:
	rm -rf $(BIN)
