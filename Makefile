# edge-agent — the two commands a newcomer runs: `make demo` and `make test`.
# Every recipe runs under `bash -eo pipefail`, and loops over modules stop at
# the first failure, so no target reports success when a command in it failed.
SHELL       := bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

MODULES     := transport connector starter dist e2e bench
GO          ?= go
VERSION     ?= $(shell cat VERSION)
COMMIT      ?= $(shell git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
BUILD_DATE  ?= $(shell date -u +%Y-%m-%dT%H:%M:%SZ)
CLI_PKG     := github.com/edge-agent/edge-agent/starter/internal/cli
LDFLAGS     := -s -w -X $(CLI_PKG).Version=$(VERSION) -X $(CLI_PKG).Commit=$(COMMIT) -X $(CLI_PKG).BuildDate=$(BUILD_DATE)
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2
TEST_FLAGS  ?= -race -count=1 -timeout 25m
BENCH_COUNT ?= 3

.PHONY: help build test test-unit test-purego test-standalone test-windows test-cross lint fmt bench bench-e2e bench-edge bench-flash bench-processing bench-relay demo dist clean

help: ## list the targets
	@grep -hE '^[a-z0-9-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-16s %s\n", $$1, $$2}'

build: ## build bin/edge-agent, bin/edgesocket-receiver and bin/opamp-devserver
	mkdir -p bin
	cd starter && CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o ../bin/edge-agent ./cmd/edge-agent
	cd transport && CGO_ENABLED=0 $(GO) build -trimpath -ldflags '-s -w -X main.version=$(VERSION)' -o ../bin/edgesocket-receiver ./cmd/edgesocket-receiver
	cd starter && CGO_ENABLED=0 $(GO) build -trimpath -ldflags '-s -w' -o ../bin/opamp-devserver ./cmd/opamp-devserver

test: prometheus test-standalone test-windows test-unit test-purego ## run every test of every module (race detector on), e2e included

test-unit:
	for m in $(MODULES); do echo "== go test $$m"; (cd $$m && $(GO) vet ./... && $(GO) test $(TEST_FLAGS) ./...); done

# The modules with assembly, and their tests with the purego tag, which
# turns every .s off so that the Go paths (the ones arm64 ships) are tested
# on amd64 too. The check fails on a .s file that the tag does not turn off.
ASM_MODULES := $(sort $(foreach f,$(shell find $(MODULES) -name '*.s'),$(firstword $(subst /, ,$(f)))))

test-purego: ## vet and test the modules with assembly with -tags purego (Go paths only)
	for m in $(ASM_MODULES); do echo "== purego $$m"; (cd $$m && \
		if $(GO) list -tags purego -f '{{.ImportPath}} {{.SFiles}}' ./... | grep -v ' \[\]$$'; then \
			echo "$$m: the packages above still assemble with -tags purego" >&2; exit 1; fi && \
		$(GO) vet -tags purego ./... && $(GO) test -tags purego -count=1 -timeout 12m ./...); done

# A real Prometheus for the monitoring tests (dist/monitoring, e2e): prometheus
# and promtool built from the Go module proxy at a pinned version into
# build/prometheus, once; a new PROMETHEUS_VERSION builds them again. The e2e
# tests fail without them under CI=true and skip, saying so, elsewhere.
PROMETHEUS_VERSION := v0.316.0
PROMETHEUS_DIR     := build/prometheus
.PHONY: prometheus

prometheus: ## build prometheus and promtool (pinned) into build/prometheus for the monitoring tests
	if [ "$$(cat $(PROMETHEUS_DIR)/VERSION 2>/dev/null)" != "$(PROMETHEUS_VERSION)" ]; then \
		echo "== building prometheus and promtool $(PROMETHEUS_VERSION) into $(PROMETHEUS_DIR) (once)"; \
		start=$$(date +%s); rm -rf $(PROMETHEUS_DIR); mkdir -p $(PROMETHEUS_DIR); \
		GOWORK=off GOBIN=$(abspath $(PROMETHEUS_DIR)) CGO_ENABLED=0 $(GO) install -trimpath \
			github.com/prometheus/prometheus/cmd/prometheus@$(PROMETHEUS_VERSION) \
			github.com/prometheus/prometheus/cmd/promtool@$(PROMETHEUS_VERSION); \
		echo "$(PROMETHEUS_VERSION)" > $(PROMETHEUS_DIR)/VERSION; \
		echo "== prometheus and promtool built in $$(( $$(date +%s) - start )) s"; \
	fi

# transport is a product of its own: it must build and test without the
# workspace, importing nothing from starter or connector.
test-standalone:
	cd transport && GOWORK=off $(GO) build ./... && GOWORK=off $(GO) mod verify >/dev/null
	if (cd transport && GOWORK=off $(GO) list -deps ./...) | grep -E 'edge-agent/(starter|connector)'; then \
		echo "transport must not import starter or connector" >&2; exit 1; fi

# The agent ships for Windows too: every module, tests included, must build
# and vet there. Nothing runs; the Windows-only code is checked by the compiler.
test-windows: ## cross-compile and vet every module for GOOS=windows
	for m in $(MODULES); do echo "== windows $$m"; (cd $$m && GOOS=windows GOARCH=amd64 $(GO) build ./... && GOOS=windows GOARCH=amd64 $(GO) vet ./...); done

# Every shipped CPU's code can run its tests too: the unit tests of
# transport, connector and starter, built as shipped (CGO_ENABLED=0) for
# each of CROSS_ARCHES and run under user-mode qemu (qemu-<cpu>-static,
# Debian package qemu-user-static) through go test -exec: no binfmt
# handler is needed. -short, and no -race (it needs cgo). A test that
# starts its own binary again (the WAL's damage check, with -tags emulated)
# starts it through EDGE_AGENT_TEST_EMULATOR. Not here: e2e (built
# binaries, external tools, root and fuse), dist (systemd, package installs
# into a Debian root), bench (figures, not verdicts). CI runs arm64 and
# armv7 (the 64-bit and the 32-bit ARM builds); the others take
# CROSS_ARCHES='386 riscv64 armv6 ppc64le s390x'. Every module of every
# arch runs; the target fails at the end, naming those that failed.
# Without qemu it fails under CI=true and skips, saying so, elsewhere.
CROSS_ARCHES  ?= arm64 armv7
CROSS_MODULES := transport connector starter

test-cross: ## run the unit tests of transport, connector and starter for each of CROSS_ARCHES (arm64 armv7), under qemu
	start=$$(date +%s); failed=; \
	for arch in $(CROSS_ARCHES); do \
		goarm=; case $$arch in \
		arm64) goarch=arm64 qemu=qemu-aarch64-static ;; \
		armv6|armv7) goarch=arm goarm=$${arch#armv} qemu=qemu-arm-static ;; \
		386) goarch=386 qemu=qemu-i386-static ;; \
		riscv64|ppc64le|s390x) goarch=$$arch qemu=qemu-$$arch-static ;; \
		*) echo "test-cross: unknown arch $$arch (arm64 armv6 armv7 386 riscv64 ppc64le s390x)" >&2; exit 1 ;; \
		esac; \
		if ! command -v $$qemu >/dev/null; then \
			if [ "$${CI:-}" = true ]; then echo "test-cross: $$qemu is required under CI (Debian: qemu-user-static)" >&2; exit 1; fi; \
			echo "SKIP: test-cross: $$qemu not installed (Debian: qemu-user-static); the $$arch tests did not run"; continue; \
		fi; \
		archstart=$$(date +%s); \
		for m in $(CROSS_MODULES); do echo "== $$arch under qemu: $$m"; (cd $$m && \
			GOOS=linux GOARCH=$$goarch GOARM=$$goarm CGO_ENABLED=0 EDGE_AGENT_TEST_EMULATOR=$$qemu \
			$(GO) test -tags emulated -short -count=1 -timeout 12m -exec $$qemu ./...) || failed="$$failed $$arch:$$m"; done; \
		echo "== $$arch tests took $$(( $$(date +%s) - archstart )) s"; \
	done; \
	echo "== test-cross ($(CROSS_ARCHES)) took $$(( $$(date +%s) - start )) s"; \
	if [ -n "$$failed" ]; then echo "test-cross: tests failed in$$failed" >&2; exit 1; fi

lint: ## gofmt check, go vet and staticcheck on every module
	unformatted=$$(gofmt -l $(MODULES)); if [ -n "$$unformatted" ]; then echo "gofmt would change:"; echo "$$unformatted"; exit 1; fi
	for m in $(MODULES); do echo "== lint $$m"; (cd $$m && $(GO) vet ./... && $(GO) run $(STATICCHECK) ./...); done

fmt: ## gofmt every module in place
	gofmt -w $(MODULES)

bench: ## print the benchmark figures (codec, client pipelining, reader, WAL, end to end)
	for m in transport connector starter; do echo "== bench $$m"; (cd $$m && $(GO) test -run '^$$' -bench . -benchmem -count $(BENCH_COUNT) -timeout 30m ./...); done

# The end-to-end figures of docs/performance.md (Linux; takes a while):
# N lines per run (RTT_N for the 20/100 ms rows, BACKLOG_N for the
# backlog drain), RUNS runs of each of CONFIGS (comma-separated; see
# `go run ./cmd/bench-e2e -h` in bench/); PPROF=DIR saves a CPU profile of
# each run there. Empty values take the defaults.
bench-e2e: build ## run the built agent end to end (RAW, nosync, in-flight 1, PACKET, 20/100 ms RTT, backlog drain, bare bbolt)
	cd bench && N='$(N)' RUNS='$(RUNS)' CONFIGS='$(CONFIGS)' RTT_N='$(RTT_N)' BACKLOG_N='$(BACKLOG_N)' PPROF='$(PPROF)' \
		$(GO) run ./cmd/bench-e2e -agent ../bin/edge-agent

# The edge-conditions table of docs/performance.md (Linux, strace; about
# 15 min at the defaults): fsync delayed 3.5/10/30 ms by strace's fault
# injection, a 20/100/600 ms round trip through the RTT proxy, the engine
# model against its minimal pipelined client, then raw-fsync with the
# agent and its sink on one core (taskset -c 0). N, RUNS, RTT_N as above.
EDGE_CONFIGS := fsync3.5,fsync10,fsync30,rtt20,rtt100,rtt600,rtt20-packet,rtt100-packet,rtt600-packet,model-min,model
bench-edge: build ## run the agent under edge conditions: slow fsync, long round trips, the engine's pace, one core
	cd bench && $(GO) build -o ../bin/bench-e2e ./cmd/bench-e2e
	cd bench && N='$(or $(N),300000)' RUNS='$(RUNS)' RTT_N='$(RTT_N)' ../bin/bench-e2e -agent ../bin/edge-agent -configs '$(EDGE_CONFIGS)'
	cd bench && N='$(or $(N),300000)' RUNS='$(RUNS)' taskset -c 0 ../bin/bench-e2e -agent ../bin/edge-agent -configs raw-fsync

# The relay figures of docs/fleet.md (Linux; ~40 s): COLLECTORS simulated
# collectors (the transport client library, pipelined) → the built agent
# with an edgesocket input, queue.fsync on → a sink, for DURATION after a
# warm-up; RELAY_FLAGS passes more (`go run ./cmd/bench-relay -h` in bench/).
bench-relay: build ## print the relay's lines/s, CPU-s per 1M lines, peak RSS, RSS per connection and fairness at 1,000 collectors
	cd bench && $(GO) run ./cmd/bench-relay -agent ../bin/edge-agent -collectors '$(or $(COLLECTORS),1000)' -duration '$(or $(DURATION),30s)' $(RELAY_FLAGS)

# The write-amplification table of docs/performance.md (Linux; ~5 min):
# disk bytes the agent writes per input byte at FLASH_RATES lines/s
# (comma-separated; max = N lines as fast as it goes), FLASH_WINDOW each.
bench-processing: build ## print the typical processor chain's CPU-s per 1M lines next to the same lines without processors (edge-agent process)
	cd bench && $(GO) run ./cmd/bench-processing -agent ../bin/edge-agent -n '$(or $(N),1000000)' -runs '$(or $(RUNS),3)'

# The OpenTelemetry Collector for the peers table: built with its builder
# from bench/peers/otelcol-builder.yaml at the pinned release into
# build/otelcol, once; a new OTELCOL_VERSION (or manifest) builds it again.
OTELCOL_VERSION := v0.165.0
OTELCOL_DIR     := build/otelcol
.PHONY: otelcol bench-peers bench-peers-edge

otelcol: ## build the OpenTelemetry Collector (pinned; filelog, file_storage, otlphttp, transform, filter, redaction, attributes) into build/otelcol
	stamp="$(OTELCOL_VERSION) $$(sha256sum bench/peers/otelcol-builder.yaml | cut -c1-16)"; \
	if [ "$$(cat $(OTELCOL_DIR)/VERSION 2>/dev/null)" != "$$stamp" ]; then \
		echo "== building the OpenTelemetry Collector $(OTELCOL_VERSION) into $(OTELCOL_DIR) (once; minutes)"; \
		start=$$(date +%s); rm -rf $(OTELCOL_DIR); mkdir -p $(OTELCOL_DIR); \
		GOWORK=off GOBIN=$(abspath $(OTELCOL_DIR))/tools $(GO) install go.opentelemetry.io/collector/cmd/builder@$(OTELCOL_VERSION) && \
		sed 's|OUTPUT_PATH|$(abspath $(OTELCOL_DIR))/src|' bench/peers/otelcol-builder.yaml > $(OTELCOL_DIR)/manifest.yaml && \
		GOWORK=off CGO_ENABLED=0 $(OTELCOL_DIR)/tools/builder --config $(OTELCOL_DIR)/manifest.yaml && \
		cp $(OTELCOL_DIR)/src/otelcol-peers $(OTELCOL_DIR)/otelcol-peers && \
		echo "$$stamp" > $(OTELCOL_DIR)/VERSION && \
		echo "== the OpenTelemetry Collector built in $$(( $$(date +%s) - start )) s"; \
	fi

# The peers table of docs/performance.md (Linux; about 7 min at the
# defaults): N generated JSON lines through the agent and the collector,
# both durable, plain and with the typical chain, RUNS runs each; ROWS
# picks rows (`go run ./cmd/bench-peers -h` in bench/).
bench-peers: build otelcol ## print the agent beside the OpenTelemetry Collector, plain and with the typical processor chain
	cd bench && $(GO) run ./cmd/bench-peers -agent ../bin/edge-agent -otelcol ../$(OTELCOL_DIR)/otelcol-peers \
		-n '$(or $(N),300000)' -runs '$(or $(RUNS),3)' $(if $(ROWS),-rows '$(ROWS)')

# The same two peers plain with every fsync delayed 10 and 30 ms (strace;
# about 4 min at the defaults: the collector syncs often).
PEERS_EDGE_ROWS := agent-plain-fsync10,otel-plain-fsync10,agent-plain-fsync30,otel-plain-fsync30
bench-peers-edge: build otelcol ## print the agent beside the OpenTelemetry Collector with fsync delayed 10 and 30 ms
	cd bench && $(GO) run ./cmd/bench-peers -agent ../bin/edge-agent -otelcol ../$(OTELCOL_DIR)/otelcol-peers \
		-n '$(or $(N),20000)' -runs '$(or $(RUNS),3)' -rows '$(or $(ROWS),$(PEERS_EDGE_ROWS))'

bench-flash: build ## print the agent's disk writes per input byte at 1, 10, 100, 10,000 lines/s and full speed
	cd bench && N='$(N)' FLASH_RATES='$(FLASH_RATES)' FLASH_WINDOW='$(FLASH_WINDOW)' \
		$(GO) run ./cmd/bench-e2e -flash -agent ../bin/edge-agent

demo: build ## run the agent end to end on a local demo (receiver + agent + generated log)
	./scripts/demo.sh

# The release key: RELEASE_KEY_FILE, or the environment mkdist reads
# (EDGE_AGENT_RELEASE_KEY_FILE, EDGE_AGENT_RELEASE_KEY); without any, a
# throwaway key kept in build/THROWAWAY-local-build.key signs, and mkdist
# says so.
RELEASE_KEY_FILE ?=

dist: ## build the signed release (tarballs and .deb/.rpm for every linux CPU, windows zip, SBOMs, SHA256SUMS) into build/dist
	start=$$(date +%s); \
	cd dist && $(GO) run ./cmd/mkdist -root .. -version $(VERSION) $(if $(RELEASE_KEY_FILE),-key $(abspath $(RELEASE_KEY_FILE))); \
	echo "== make dist took $$(( $$(date +%s) - start )) s"

clean: ## remove build output
	rm -rf bin build
