# Makefile for dm and registryd. `make run` serves registry-example at
# http://127.0.0.1:8080; `make test` runs everything CI runs.
GO        ?= go
BIN       := bin
ADDR      ?= 127.0.0.1:8080
FUZZTIME  ?= 10s
BENCHTIME ?= 1s

.PHONY: all build run test vet fmt-check unit fuzz bench bench-http bench-e2e clean

all: build

build:
	$(GO) build -o $(BIN)/ ./cmd/registryd ./cmd/dm

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
# fails the run (and every later `go test` replays it).
FUZZ_TARGETS := \
	./internal/resolve:FuzzParse \
	./internal/expand:FuzzParseConfig \
	./internal/expand:FuzzFastYAML \
	./internal/expand:FuzzEmitYAML \
	./internal/expand/openshift:FuzzSubstitute \
	./internal/expand/openshift:FuzzParse \
	./internal/expand/schema:FuzzParse

fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do \
	  pkg=$${t%%:*}; fn=$${t##*:}; echo "fuzz $$fn ($$pkg, $(FUZZTIME))"; \
	  $(GO) test -run '^$$' -fuzz "^$$fn$$" -fuzztime $(FUZZTIME) $$pkg; \
	done

bench:
	$(GO) test -run '^$$' -bench . -benchmem -benchtime $(BENCHTIME) ./internal/...

bench-http: build
	./scripts/bench-http.sh

bench-e2e: build
	./scripts/bench-e2e.sh

clean:
	rm -rf $(BIN)
