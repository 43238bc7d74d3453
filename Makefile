# rubricforge: build rubric corpora for rubric-reward RL, audit them, score rollouts against them.
GO      ?= go
BIN     ?= bin
PKGS    := ./...
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X main.version=$(VERSION)
# staticcheck and errcheck run through the Go toolchain at pinned versions: nothing to install by hand.
STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2
ERRCHECK    ?= github.com/kisielk/errcheck@v1.30.0

# -trimpath: builds, vet, staticcheck and the tests' binaries do not depend on
# the directory the tree is in, so a fresh clone (CI's) takes every compiled
# package it shares with an earlier build from the Go build cache instead of
# compiling the module again (the checks before go test: 79 s -> 10 s, the
# race test binaries: 119 s -> 53 s). Test results are still re-run when
# anything a test reads changed; GOFLAGS=-count=1 re-runs all of them.
# The nested modules' checks (interop, manifests) run with it too (their
# vet and race test binary from a fresh clone: 36 -> 11 and 40 -> 8 CPU
# seconds); on a machine whose cache holds their dependencies (arrow-go, the
# Kubernetes API) built only without it, the first run compiles those again
# with the race detector (minutes, once).
export GOFLAGS := -trimpath $(GOFLAGS)

# The race detector's runtime sleeps a second before every race-built process
# exits (its atexit_sleep_ms, 1000 by default), to let goroutines still running
# report a race: about 70 test binaries and the test processes they start, each
# holding one of go test's slots idle for that second (go test -race -run '^$$'
# ./...: 55 s -> 33 s of wall, the same CPU). Without the sleep, a race only
# between goroutines still running after a binary's last test has returned
# goes unreported; races while a test runs fail that test as before. GORACE
# from the environment comes after this and wins; on the command line it
# replaces it: make test GORACE=atexit_sleep_ms=1000.
export GORACE := atexit_sleep_ms=0 $(GORACE)

# The tests' processes collect garbage when the heap has grown by 200% since
# the last collection, not Go's default 100%: the race detector makes every
# collection dear, and pipeline's tests take 15% less CPU (74-79 -> 62 CPU
# seconds) for 437 MiB of peak memory, was 334. Tests that measure the heap
# collect first (runtime.GC), so they measure the same. Only the test targets
# set it (benchmarks measure memory as a user's run has it); a GOGC in the
# environment wins.
TEST_TARGETS := test test-race test-interop test-manifests test-shims test-browser-step test-long test-browser
$(TEST_TARGETS): export GOGC ?= 200

.DEFAULT_GOAL := help

.PHONY: help build image test test-race test-interop test-manifests test-shims test-browser-step test-long test-browser bench bench-refine sweep-refine bench-scale bench-scale-grounded bench-scale-batch bench-discrim bench-review bench-prefix demo demo-grounded cover fuzz clean

help: ## list the targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z_-]+:.*## / {printf "  %-12s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

build: ## build the commands of cmd/ (distill, validate, rewardd) and the SIMULATED endpoint (simllm) into ./bin
	@if [ ! -x $(BIN)/distill ]; then \
	  echo "== build: a first build downloads the Go modules it needs when they are not in $$($(GO) env GOMODCACHE) (19 modules, 86 MB; 270 MB unpacked)"; \
	  echo "   and compiles them (240 MB of build cache): minutes on a 2-core machine, the \"go: downloading\" lines below; later builds take seconds"; \
	fi
	@mkdir -p $(BIN)
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN)/ ./cmd/...
	$(GO) build -o $(BIN)/simllm ./examples/simllm

# The container image of the Kubernetes manifests: distill, validate and rewardd
# on a slim Debian with /bin/sh, tagged with the version (git describe), never
# :latest. e.g. make image IMAGE=registry.example.com/team/rubricforge
IMAGE   ?= rubricforge
DOCKER  ?= docker
image: ## build the container image $(IMAGE):$(VERSION) from the Dockerfile (needs docker or podman: DOCKER=podman)
	$(DOCKER) build --build-arg VERSION=$(VERSION) -t $(IMAGE):$(VERSION) .
	@echo "built $(IMAGE):$(VERSION); push it, then pin it in examples/k8s (docs/scale-out.md, The image)"

# The review page's browser test (cmd/validate) drives a headless Chromium:
# make test checks for one before anything runs. RF_SKIP_BROWSER=1 runs the
# rest, the browser test skipped, and ends in a failure that says so. The
# test takes the first of BROWSERS on PATH: Chromium's headless shell first
# (half the CPU of the full browser: 47 -> 22 CPU-s for the test), or the
# one RF_BROWSER names (make test-browser RF_BROWSER=chromium).
export RF_SKIP_BROWSER RF_BROWSER
BROWSERS := chromium-headless-shell chrome-headless-shell chromium chromium-browser google-chrome

test: ## gofmt check, go vet, staticcheck, errcheck, then at once: every test with the race detector, the arrow-go interop check, the Kubernetes manifest check, the trainer shim tests (python3), the review page in Chromium (or RF_SKIP_BROWSER=1)
	@if [ -z "$(RF_SKIP_BROWSER)" ] && ! for b in $(BROWSERS); do command -v $$b >/dev/null 2>&1 && exit 0; done; then \
	  echo "make test: no Chromium on PATH, and the review page's browser test (cmd/validate) needs one:"; \
	  echo "  Debian or Ubuntu: apt-get install -y chromium-headless-shell   (96 MB to download, 290 MB installed; .ci/run does it)"; \
	  echo "  macOS: brew install --cask chromium; elsewhere: Chromium or Google Chrome on PATH as one of: $(BROWSERS)"; \
	  echo "  or run everything else: make test RF_SKIP_BROWSER=1 (the browser test is skipped, and make test ends saying so, with exit 1)"; \
	  exit 1; \
	fi
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$unformatted" ]; then echo "gofmt needed:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet $(PKGS)
	$(GO) run $(STATICCHECK) $(PKGS)
	$(GO) run $(ERRCHECK) -ignoretests -exclude .ci/errcheck-excludes $(PKGS)
	@$(MAKE) --no-print-directory -k -j 5 test-race $(TEST_STEPS)
	@if [ -n "$(RF_SKIP_BROWSER)" ]; then \
	  echo "== NOT RUN: the review page's browser test (RF_SKIP_BROWSER is set); everything else passed, and make test fails so that this is not taken for a full pass"; \
	  exit 1; \
	fi

# make test runs the steps below at the same time as go test -race ./...,
# which keeps both cores busy for minutes while they mostly wait (Chromium,
# processes starting, links); each prints its output whole, after its label,
# when it ends (.ci/step), and a failing one fails make test (-k: the others
# still run to their end and show their output). Ctrl-C stops them all: they
# are in make's process group. Their -timeout is 10m (5m when they ran
# alone): they share the cores with go test, and at load 39 the browser
# test took 265 s and the manifests 242 s.
TEST_STEPS := test-interop test-manifests test-shims $(if $(RF_SKIP_BROWSER),,test-browser-step)
STEP := sh .ci/step

# go test runs the test binaries in the order the packages are named, two at a
# time on two cores; the ones that take longest come first so that the last
# minute is not one large package running alone (the others follow from PKGS,
# each once).
SLOW_PKGS := ./pipeline ./cmd/distill ./corpus ./audit ./cmd/rewardd/internal/server ./cmd/validate ./plan ./workers ./refine ./internal/sim

test-race:
	$(GO) test -race -timeout 12m $(SLOW_PKGS) $(PKGS)

# go vet runs every analyzer go test's own vet runs, so the tests skip theirs (-vet=off).
test-interop:
	@$(STEP) "interop: shards and exports read back with apache/arrow-go (nested module internal/interoptest)" \
	  'cd internal/interoptest && $(GO) vet ./... && $(GO) test -vet=off -race -timeout 10m ./...'

test-manifests:
	@$(STEP) "manifests: examples/k8s decoded strictly into the Kubernetes API types (nested module examples/k8s/k8stest)" \
	  'cd examples/k8s/k8stest && $(GO) vet ./... && $(GO) test -vet=off -race -timeout 10m ./...'

# -B: no __pycache__ in the tree, whose files would change testbin's key of
# the sources (and build every command again) for the go tests running then.
test-shims:
	@if ! command -v python3 >/dev/null 2>&1; then echo "== trainer shim tests NOT RUN: python3 is not installed"; \
	elif [ ! -d cmd/rewardd ]; then \
	  $(STEP) "trainer shims: examples/trainers/rubric_reward.py and verifiers_rubric.py (python3 unittest); the end-to-end test NOT RUN: it needs cmd/rewardd, which is not in this tree" \
	    'python3 -B -m unittest examples/trainers/test_rubric_reward.py examples/trainers/test_verifiers_rubric.py'; \
	else \
	  $(STEP) "trainer shims: examples/trainers/rubric_reward.py and verifiers_rubric.py, and rewardd end to end (python3 unittest)" \
	    'python3 -B -m unittest examples/trainers/test_rubric_reward.py examples/trainers/test_verifiers_rubric.py && GO="$(GO)" python3 -B -m unittest examples/trainers/test_rewardd_e2e.py'; \
	fi

test-browser-step:
	@$(STEP) "browser: the review page in a real headless Chromium (cmd/validate, build tag browser)" '$(BROWSER_VET) && $(BROWSER_TEST)'

test-long: ## every test in its long form (RUBRICFORGE_TEST_LONG=1: the exhaustive sweeps make test runs a cover of), with the race detector
	RUBRICFORGE_TEST_LONG=1 $(GO) test -race -timeout 40m $(PKGS)

BROWSER_VET  = $(GO) vet -tags browser ./cmd/validate
BROWSER_TEST = $(GO) test -vet=off -race -tags browser -timeout 10m -run TestReviewPageInBrowser ./cmd/validate

test-browser: ## the review page in a real headless Chromium (build tag browser; about half a minute; make test runs it with the other steps)
	$(BROWSER_VET)
	$(BROWSER_TEST)

bench: ## benchmarks: answer equivalence, pipeline, llm faults and rate limits, cache, corpus, reward, audit
	$(GO) test -run '^$$' -bench . -benchmem -timeout 20m $(PKGS)

# bench-refine size and directory (the synthetic corpus is kept there for the next run);
# e.g. make bench-refine REFINE_RECORDS=10000
REFINE_RECORDS ?= 100000
REFINE_DIR     ?= runs/bench-refine

bench-refine: build ## distill refine on a synthetic 100K records x 8 rollouts x 10 items corpus: wall, CPU, peak RSS, load (targets 60 s, 512 MiB; not in make test)
	rm -rf $(REFINE_DIR)/refined
	$(GO) run ./internal/bench/discrim -bin $(BIN) -records $(REFINE_RECORDS) -dir $(REFINE_DIR) -run 'distill refine {corpus} --out {work}/refined'

sweep-refine: ## planted defects distill refine finds and gains it claims, over 100 synthetic corpora a kind (~3 min; not in make test)
	$(GO) run ./internal/bench/refinesweep -seeds 100 -records 80

# bench-scale sizes; e.g. make bench-scale SCALE_PROBLEMS=5000 SCALE_KILL=5000 (SCALE_KILL=0: no kill)
SCALE_PROBLEMS ?= 10000,100000
SCALE_KILL     ?= 10000
SCALE_FLAGS    ?=

bench-scale: build ## distill run at 10K and 100K problems on the simulated endpoint: efficiency, peak RSS, resume, kill at 50% (~15 min; not in make test)
	$(GO) run ./internal/bench/scale -bin $(BIN) -problems $(SCALE_PROBLEMS) -kill-size $(SCALE_KILL) $(SCALE_FLAGS)

bench-scale-grounded: build ## the grounded style at 100K one-passage documents: analyze, synthesize, enrich, judge (~15 min; not in make test)
	$(GO) run ./internal/bench/scale -style grounded -bin $(BIN) -problems 100000 -kill-size 100000 $(SCALE_FLAGS)

# bench-scale-batch sizes; e.g. make bench-scale-batch BATCH_PROBLEMS=10000 BATCH_KILL=10000
BATCH_PROBLEMS ?= 100000
BATCH_KILL     ?= 100000

bench-scale-batch: build ## every stage in batch mode at 100K problems on the simulated Batch API: peak RSS, phase times, kill and resume (~10 min; not in make test)
	$(GO) run ./internal/bench/scale -mode batch -bin $(BIN) -problems $(BATCH_PROBLEMS) -kill-size $(BATCH_KILL) $(SCALE_FLAGS)

# bench-discrim size; e.g. make bench-discrim DISCRIM_RECORDS=10000 DISCRIM_FLAGS='-dir /tmp/db -keep'
DISCRIM_RECORDS ?= 100000
DISCRIM_FLAGS   ?=

bench-prefix: build ## what a judge server's prefix cache shares of the judge requests in each layout, cached tokens and warm-first latency, on the demo corpora (simulated; ~1 min; not in make test)
	$(GO) run ./internal/bench/prefix -bin $(BIN)

bench-discrim: build ## validate (discrimination section included) on a synthetic 100K x 8 rollouts x 10 items corpus: wall, CPU, peak RSS (~3 min; not in make test)
	$(GO) run ./internal/bench/discrim -bin $(BIN) -records $(DISCRIM_RECORDS) $(DISCRIM_FLAGS)

# bench-review size; e.g. make bench-review REVIEW_RECORDS=10000 REVIEW_FLAGS='-dir /tmp/rb -keep'
REVIEW_RECORDS ?= 100000
REVIEW_FLAGS   ?=

bench-review: build ## validate review on a synthetic 100K-record corpus in headless Chromium: start, peak RSS, key to screen and to the log (~5 min; not in make test)
	$(GO) run ./internal/bench/review -bin $(BIN) -records $(REVIEW_RECORDS) $(REVIEW_FLAGS)

demo: build ## run distill on the example problems against the simulated endpoint
	@bash examples/demo.sh

demo-grounded: build ## run the grounded style on examples/documents against the simulated endpoint
	@CONFIG=examples/demo-grounded.yaml OUT=runs/demo-grounded bash examples/demo.sh

cover: ## test coverage summary (writes cover.out)
	$(GO) test -coverprofile=cover.out $(PKGS)
	$(GO) tool cover -func=cover.out | tail -1

fuzz: ## run every fuzz target of every package for FUZZTIME each (default 20s)
	@for pkg in $$($(GO) list ./...); do \
	  for f in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
	    $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $${FUZZTIME:-20s} $$pkg || exit 1; \
	  done; \
	done

clean: ## remove build output
	rm -rf $(BIN) cover.out
