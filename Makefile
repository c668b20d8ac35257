# gpupool top-level Makefile (GNU make). Thin wrapper around CMake/CTest.

SHELL := /bin/bash
NPROC := $(shell nproc 2>/dev/null || echo 2)

# Keep the nested CMake-generated makefiles from printing Entering/Leaving lines.
MAKEFLAGS += --no-print-directory

# Property tests read GP_PROPERTY_SEQUENCES from the environment
# (e.g. `make test GP_PROPERTY_SEQUENCES=100000`); unset by default.
ifdef GP_PROPERTY_SEQUENCES
export GP_PROPERTY_SEQUENCES
endif

.DEFAULT_GOAL := build
.PHONY: deps build build-asan test coverage demo bench install clean

deps:
	./scripts/install-deps.sh

build: deps
	cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo
	cmake --build build -j$(NPROC)

build-asan: deps
	cmake -S . -B build-asan -DGP_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug
	cmake --build build-asan -j$(NPROC)

test: deps build build-asan
	ctest --test-dir build --output-on-failure -j2
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
	UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	ctest --test-dir build-asan --output-on-failure -j2

# The plain suite again in build-cov with gcov counters; lines and branches
# per src/ folder in build-cov/coverage/summary.txt (scripts/coverage.sh).
# Only this target installs gcovr.
coverage: deps
	./scripts/install-deps.sh coverage
	./scripts/coverage.sh

# DEMO_ONCE=1 exits when the story is told; without it gpupoold stays up.
demo: deps build
	DEMO_ONCE=$(DEMO_ONCE) ./scripts/demo.sh

bench: deps build
	@set -e; found=0; \
	for f in build/bin/bench_*; do \
	  [ -x "$$f" ] || continue; found=1; \
	  echo "== $$f"; "$$f" || exit 1; \
	done; \
	[ $$found -eq 1 ] || echo "no benchmarks in build/bin"; \
	echo "== bench/agent/run"; ./bench/agent/run; \
	echo "== bench/agent/container"; ./bench/agent/container; \
	echo "== bench/metrics/run"; ./bench/metrics/run; \
	echo "== bench/restart/run"; ./bench/restart/run; \
	echo "== bench/capacity/run"; ./bench/capacity/run; \
	echo "== bench/ha/run"; rc=0; ./bench/ha/run || rc=$$?; [ $$rc -eq 0 ] || [ $$rc -eq 77 ]

# PREFIX=/usr/local by default: binaries in bin/, man pages in share/man.
install: build
	cmake --install build --prefix $(or $(PREFIX),/usr/local)

clean:
	rm -rf build build-asan build-cov
