# kvtopo — every target installs what is missing first (see `deps`).
SHELL := /bin/bash
BUILD ?= build
ASAN_BUILD ?= build-asan
JOBS ?= $(shell nproc)
PYTHON ?= $(shell python3 -c 'import sys; print(sys.executable)')
DEBIAN_PACKAGES := cmake ninja-build g++ libgtest-dev libgmock-dev libbenchmark-dev \
  nlohmann-json3-dev libcli11-dev libfmt-dev libxxhash-dev pybind11-dev python3-dev clang-format \
  openmpi-bin libopenmpi-dev
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: deps build build-asan run test test-asan test-python bench format clean

deps:
	@missing=""; for p in $(DEBIAN_PACKAGES); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $$missing; \
	fi

$(BUILD)/build.ninja: | deps
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPython_EXECUTABLE=$(PYTHON)

build: deps $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS)

$(ASAN_BUILD)/build.ninja: | deps
	cmake -S . -B $(ASAN_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Debug -DKVTOPO_SANITIZE=ON \
	  -DKVTOPO_BUILD_BENCH=OFF -DKVTOPO_BUILD_PYTHON=OFF

build-asan: deps $(ASAN_BUILD)/build.ninja
	cmake --build $(ASAN_BUILD) -j $(JOBS) --target kvtopo_tests kvtopo

run: build
	./$(BUILD)/kvtopo plan

test: build build-asan
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)
	cd $(ASAN_BUILD) && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
	  ctest --output-on-failure -j $(JOBS)
	$(MAKE) --no-print-directory test-python

# The Python module's unittest suite against the module built in $(BUILD) (no install needed).
test-python: build
	PYTHONPATH=$(CURDIR)/$(BUILD)/python KVTOPO_BUILD_DIR=$(CURDIR)/$(BUILD) \
	  $(PYTHON) -m unittest discover -s tests/python -v

bench: build
	./scripts/bench.sh $(BUILD)

format: deps
	find include src tools tests bench python -name '*.h' -o -name '*.cc' | xargs clang-format -i

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) build-wheel
