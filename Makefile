# kvtopo — every target installs what is missing first (see `deps`).
SHELL := /bin/bash
BUILD ?= build
ASAN_BUILD ?= build-asan
FUZZ_BUILD ?= build-fuzz
COVERAGE_BUILD ?= build-coverage
# Seconds each fuzz target runs under `make fuzz`; `make test` runs a short smoke of each.
FUZZ_SECONDS ?= 600
FUZZ_SMOKE_SECONDS ?= 15
FUZZ_TARGETS := config_plan launch_plan workload runtime vllm_config gguf_plan
# The project's own builds treat warnings as errors; a plain `cmake` or `pip install .` does not.
WERROR ?= ON
JOBS ?= $(shell nproc)
# Debug information in the test and ASan trees: line tables (-g1) are what a failing test's
# backtrace and a sanitizer report need, and compile a quarter faster than full -g; set
# DEBUG_INFO=-g for a debugger's view of locals (a fresh build directory takes it). Debug
# information does not change the code GCC generates.
DEBUG_INFO ?= -g1
PYTHON ?= $(shell python3 -c 'import sys; print(sys.executable)')
DEBIAN_PACKAGES := cmake ninja-build g++ libgtest-dev libgmock-dev libbenchmark-dev \
  nlohmann-json3-dev libcli11-dev libfmt-dev libxxhash-dev libyaml-dev pybind11-dev python3-dev clang-format \
  openmpi-bin libopenmpi-dev
# The libFuzzer builds' compiler and runtime (`make fuzz`, `make fuzz-smoke`), installed by them.
FUZZ_PACKAGES := clang-14 libclang-rt-14-dev llvm-14
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
# Installs the Debian packages of $(1) that are missing.
install_missing = @missing=""; for p in $(1); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $$missing; \
	fi

.PHONY: deps deps-fuzz build build-asan build-fuzz run test test-python \
  fuzz fuzz-smoke bench coverage format clean

deps:
	$(call install_missing,$(DEBIAN_PACKAGES))

deps-fuzz: deps
	$(call install_missing,$(FUZZ_PACKAGES))

# The test tree is a user's Release build (-DCMAKE_BUILD_TYPE=Release: -O3, NDEBUG) with line
# tables added: the suites, the Python module and the benchmarks run on the code a user's
# Release build runs. A tree an earlier Makefile configured as RelWithDebInfo is configured
# again by `make build`.
configure_build = cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DPython_EXECUTABLE=$(PYTHON) -DCMAKE_CXX_FLAGS_RELEASE="-O3 -DNDEBUG $(DEBUG_INFO)" \
  -DKVTOPO_WERROR=$(WERROR)

$(BUILD)/build.ninja: | deps
	$(configure_build)

build: deps $(BUILD)/build.ninja
	@grep -q '^CMAKE_BUILD_TYPE:STRING=Release$$' $(BUILD)/CMakeCache.txt || $(configure_build)
	cmake --build $(BUILD) -j $(JOBS)

$(ASAN_BUILD)/build.ninja: | deps
	cmake -S . -B $(ASAN_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="$(DEBUG_INFO)" \
	  -DKVTOPO_SANITIZE=ON \
	  -DKVTOPO_BUILD_BENCH=OFF -DKVTOPO_BUILD_PYTHON=OFF -DKVTOPO_WERROR=$(WERROR)

build-asan: deps $(ASAN_BUILD)/build.ninja
	cmake --build $(ASAN_BUILD) -j $(JOBS) --target kvtopo_tests kvtopo

# libFuzzer targets (clang, ASan + UBSan) in their own build dir; not needed by any other build.
# Warnings are left to the GCC builds (-Werror there); clang's extra ones do not stop fuzzing.
$(FUZZ_BUILD)/build.ninja: | deps-fuzz
	CXX=clang++-14 cmake -S . -B $(FUZZ_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only" -DKVTOPO_FUZZ=ON

build-fuzz: deps-fuzz $(FUZZ_BUILD)/build.ninja
	cmake --build $(FUZZ_BUILD) -j $(JOBS) --target $(addprefix kvtopo_fuzz_,$(FUZZ_TARGETS))

# Each target in turn for FUZZ_SECONDS, from the checked-in seeds (fuzz/corpus/<target>); new
# inputs go to $(FUZZ_BUILD)/corpus/<target>, crashes to $(FUZZ_BUILD)/artifacts/<target>/.
fuzz: build-fuzz
	@for t in $(FUZZ_TARGETS); do \
	  mkdir -p $(FUZZ_BUILD)/corpus/$$t $(FUZZ_BUILD)/artifacts/$$t && \
	  echo "fuzz $$t: $(FUZZ_SECONDS) s" && \
	  ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
	  ./$(FUZZ_BUILD)/kvtopo_fuzz_$$t $(FUZZ_BUILD)/corpus/$$t fuzz/corpus/$$t \
	    $$( [ -s fuzz/dict/$$t.dict ] && echo -dict=fuzz/dict/$$t.dict ) -max_total_time=$(FUZZ_SECONDS) -timeout=10 -rss_limit_mb=2048 \
	    -max_len=4096 -print_final_stats=1 -artifact_prefix=$(FUZZ_BUILD)/artifacts/$$t/ \
	    > $(FUZZ_BUILD)/fuzz-$$t.log 2>&1; rc=$$?; \
	  grep -E "^stat::(number_of_executed_units|average_exec_per_sec|new_units_added)|^Done" \
	    $(FUZZ_BUILD)/fuzz-$$t.log; \
	  if [ $$rc -ne 0 ]; then tail -n 60 $(FUZZ_BUILD)/fuzz-$$t.log; exit 1; fi; \
	done

fuzz-smoke:
	$(MAKE) --no-print-directory fuzz FUZZ_SECONDS=$(FUZZ_SMOKE_SECONDS)

run: build
	./$(BUILD)/kvtopo plan

# Every test in the test tree (a Release build) and under ASan/UBSan (the fuzz corpora replay
# there too, tests/fuzz/corpus_test.cc) and the Python suite. The libFuzzer
# smoke (`make fuzz-smoke`, a clang build of its own) is not part of it: CI's 25-minute budget.
# Under ASan the test binary runs as $(JOBS) shards, one process each (GoogleTest's sharding),
# rather than one process per test through ctest: the same tests under the same sanitizers,
# without ASan's start-up cost 450 times (253 s through ctest, 76 s sharded, on 2 cores). A
# shard that fails prints its log.
test: build build-asan
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)
	@cd $(ASAN_BUILD) && pids=""; \
	for i in $$(seq 0 $$(($(JOBS) - 1))); do \
	  KVTOPO_TEST=1 GTEST_TOTAL_SHARDS=$(JOBS) GTEST_SHARD_INDEX=$$i ASAN_OPTIONS=detect_leaks=1 \
	    UBSAN_OPTIONS=print_stacktrace=1 ./kvtopo_tests > asan-shard-$$i.log 2>&1 & \
	  pids="$$pids $$!"; \
	done; \
	rc=0; i=0; for p in $$pids; do \
	  if ! wait $$p; then rc=1; cat asan-shard-$$i.log; fi; \
	  echo "ASan/UBSan shard $$i: $$(grep -h '^\[  PASSED  \]' asan-shard-$$i.log)"; i=$$((i + 1)); \
	done; \
	exit $$rc
	$(MAKE) --no-print-directory test-python

# The Python module's unittest suite against the module built in $(BUILD) (no install needed).
test-python: build
	PYTHONPATH=$(CURDIR)/$(BUILD)/python KVTOPO_BUILD_DIR=$(CURDIR)/$(BUILD) \
	  $(PYTHON) -m unittest discover -s tests/python -v

bench: build
	./scripts/bench.sh $(BUILD)

# Line coverage of the library, the CLI and the Python module by the whole suite (ctest, then
# the Python tests): a Debug --coverage tree of its own, its counters reset each run;
# scripts/coverage.py prints per file the lines no test ran (COVERAGE_MISSED=suffixes lists
# them). Not part of `make test`: its tree is a third build.
$(COVERAGE_BUILD)/build.ninja: | deps
	cmake -S . -B $(COVERAGE_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Debug \
	  -DCMAKE_CXX_FLAGS=--coverage -DCMAKE_EXE_LINKER_FLAGS=--coverage \
	  -DCMAKE_SHARED_LINKER_FLAGS=--coverage -DKVTOPO_BUILD_BENCH=OFF -DKVTOPO_WERROR=OFF

coverage: deps $(COVERAGE_BUILD)/build.ninja
	find $(COVERAGE_BUILD) -name '*.gcda' -delete
	cmake --build $(COVERAGE_BUILD) -j $(JOBS)
	find $(COVERAGE_BUILD) -name '*.gcda' -delete
	cd $(COVERAGE_BUILD) && ctest -j $(JOBS) --output-on-failure > ctest.log || (tail -n 40 ctest.log; exit 1)
	PYTHONPATH=$(abspath $(COVERAGE_BUILD))/python KVTOPO_BUILD_DIR=$(abspath $(COVERAGE_BUILD)) \
	  $(PYTHON) -m unittest discover -s tests/python
	$(PYTHON) scripts/coverage.py $(COVERAGE_BUILD) $(if $(COVERAGE_MISSED),--missed $(COVERAGE_MISSED))

format: deps
	find include src tools tests bench python -name '*.h' -o -name '*.cc' | xargs clang-format -i

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(FUZZ_BUILD) $(COVERAGE_BUILD) build-release build-wheel
