# peernode — the two commands are `make run` and `make test`; each does the
# whole set-up on a fresh Debian 12 machine (see README.md).
SWIFT      ?= swift
ARGS       ?=
BUILD_LOG  := .build/build.log
FUZZ_SECONDS ?= 180
FUZZ_SMOKE_SECONDS ?= 10
# Tests run at once in `make test` (docs/DECISIONS.md, "Tests in parallel").
TEST_WIDTH ?= 4
BENCH_SECONDS ?= 3
BENCH_RUNS ?= 3
BENCH_ENVELOPES ?= 100000
BENCH_DISCOVERY_RUNS ?= 7
BENCH_RELAY_MESSAGES ?= 20000
BENCH_RELAY_STORE ?= 1000000
BENCH_IDLE_SECONDS ?= 30
BENCH_FILE_LAN_MIB ?= 128
BENCH_FILE_MIB ?= 256
# nodes authors messages mesh-messages for `peernode-bench overlay`.
BENCH_SCALE ?= 1000 10000 1000000 30
BENCH_OVERLAY_NODES ?= 12 24 32 64
SOAK_CYCLES ?= 100
SOAK_FLOOD_SECONDS ?= 60
SOAK_LAB_SECONDS ?= 180

.PHONY: run test bench fuzz soak build build-release setup setup-test setup-bench clean

## run: install what is missing, build, start a node (pass options with ARGS="...").
run: build-release
	.build/release/peernode $(ARGS)

## test: install what is missing (packages for the tests too), build, run every test.
test: setup-test
	@mkdir -p .build
	@echo "== build (warnings fail the build check)"
	@$(SWIFT) build --build-tests 2>&1 | tee $(BUILD_LOG) | grep -E 'warning:|error:' || true
	@if grep -q 'error:' $(BUILD_LOG); then echo "build failed"; exit 1; fi
	@if grep -v 'Compiling\|Building\|Build complete\|Write \|Emitting\|Linking\|Planning' $(BUILD_LOG) | grep -q 'warning:'; then \
	  echo "the build printed warnings (see above): a clean build prints none"; exit 1; fi
	@echo "== fuzz (short run of each target; make fuzz runs longer)"
	@scripts/fuzz.sh $(FUZZ_SMOKE_SECONDS)
	@echo "== tests"
	@# What the build and the fuzz runs wrote goes to the disk first: tests
	@# that fsync (every node does) otherwise queue behind that writeback.
	@sync
	@# In parallel, TEST_WIDTH tests at a time: many tests start real node
	@# processes, and with no bound (every waiting test lets another start)
	@# dozens of nodes shared 2 cores and missed their start-up timeouts.
	@# docs/DECISIONS.md, "Tests in parallel", says why the width is 4.
	$(SWIFT) test --skip-build --experimental-maximum-parallelization-width $(TEST_WIDTH)

## bench: build optimised and print the benchmark figures.
bench: setup-bench
	$(SWIFT) build -c release --product peernode-bench
	.build/release/peernode-bench
	@# The whole-LAN simulation (docs/SCALE.md): 1,000 nodes, 10,000 authors, 1,000,000 messages, beside the full mesh.
	.build/release/peernode-bench overlay $(BENCH_SCALE)
	@# Replication's decisions per envelope as the LAN's authors grow (docs/SCALE.md, "The forwarding path").
	for authors in 10 1000 10000; do .build/release/peernode-bench push $$authors 6; done
	for authors in 10 1000 10000; do rm -rf .build/bench-post-deps; .build/release/peernode-bench post-deps .build/bench-post-deps $$authors; done
	for authors in 10 1000 10000; do rm -rf .build/bench-peer-clocks; .build/release/peernode-bench peer-clocks .build/bench-peer-clocks $$authors; done
	scripts/bench-websocket.sh $(BENCH_SECONDS) $(BENCH_RUNS)
	$(SWIFT) build -c release --product peernode
	python3 scripts/bench-gossip.py .build/release/peernode .build/release/peernode-bench $(BENCH_ENVELOPES)
	@# Catch-up at the receiver alone (docs/SCALE.md): a lean sender leaves the cores to the node measured.
	python3 scripts/bench-catchup.py .build/release/peernode .build/release/peernode-bench $(BENCH_ENVELOPES)
	@# One hop on a LAN with many authors (docs/SCALE.md): per-message work must not grow with them.
	for authors in 10 1000 10000; do python3 scripts/bench-authors.py .build/release/peernode .build/release/peernode-bench $$authors; done
	@# A relay and 20 real nodes linked to it, with many authors (docs/SCALE.md): memory per link, CPU while idle.
	for authors in 10 10000; do python3 scripts/bench-relay-authors.py .build/release/peernode .build/release/peernode-bench $$authors 20; done
	@# Many real nodes on this host by loopback multicast (docs/SCALE.md): links, envelopes per message, memory, a quarter killed.
	python3 scripts/bench-overlay.py .build/release/peernode $(BENCH_OVERLAY_NODES)
	python3 scripts/bench-relay.py .build/release/peernode .build/release/peernode-bench $(BENCH_RELAY_MESSAGES) 50 $(BENCH_RELAY_STORE)
	@# Files (issue 39): one source beside curl from nginx and cat, four sources, CPU per MB, a relay serving 8.
	python3 scripts/bench-files.py .build/release/peernode $(BENCH_FILE_MIB)
	@# Four sources against one where each source's link is the limit (a 200 Mbit and a gigabit port), in the namespace lab: needs root.
	for rate in 200 1000; do python3 scripts/bench-files-lan.py .build/release/peernode $(BENCH_FILE_LAN_MIB) $$rate; done
	@# Needs root for the namespace lab, as the lab tests do.
	python3 scripts/bench-discovery.py .build/release/peernode $(BENCH_DISCOVERY_RUNS) $(BENCH_IDLE_SECONDS)

## soak: the long form of the fault tests (docs/RELIABILITY.md); needs root
## for the tmpfs and tcpdump, as in CI. `make test` runs the short form.
soak: setup-test
	$(SWIFT) build
	python3 scripts/crash-loop.py .build/debug/peernode $(SOAK_CYCLES) node
	python3 scripts/crash-loop.py .build/debug/peernode $(SOAK_CYCLES) relay
	python3 scripts/file-crash-loop.py .build/debug/peernode $(SOAK_CYCLES) 256
	python3 scripts/relay-file-crash-loop.py .build/debug/peernode $(SOAK_CYCLES) 160
	python3 scripts/disk-full.py .build/debug/peernode
	python3 scripts/slowloris.py .build/debug/peernode 900
	python3 scripts/abuse.py .build/debug/peernode slow-consumer 2000
	python3 scripts/abuse.py .build/debug/peernode flood $(SOAK_FLOOD_SECONDS)
	python3 scripts/capture-check.py .build/debug/peernode
	python3 scripts/lab-soak.py .build/debug/peernode 8 $(SOAK_LAB_SECONDS)
	python3 scripts/bench-overlay.py .build/debug/peernode 64 --check

## fuzz: run every libFuzzer target for FUZZ_SECONDS each (default 180).
fuzz: setup
	scripts/fuzz.sh $(FUZZ_SECONDS)

build-release: setup
	$(SWIFT) build -c release --product peernode

build: setup
	$(SWIFT) build

setup:
	@scripts/setup-system.sh run

setup-test:
	@scripts/setup-system.sh test
	@scripts/setup-peers.sh

setup-bench:
	@scripts/setup-system.sh bench
	@scripts/setup-peers.sh

clean:
	rm -rf .build
