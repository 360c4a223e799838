# Makefile - the two commands of README.md, wrapping CMake.
#
#   make run    install what is missing, build, start `ckube server` in ./ckube-data
#   make test   install what is missing, check formatting, build the whole tree
#               optimized (RelWithDebInfo, tests included, not run: the optimizer's
#               warnings are errors too), build the concurrency tests with
#               ThreadSanitizer and run them, build the programs and the libFuzzer
#               targets with clang and run each target briefly, then build with
#               ASan+UBSan and run every test; the output ends with ctest's
#               summary (after the list of skipped tests and why).
BUILD_DIR ?= build
REL_DIR   ?= build-rel
ASAN_DIR  ?= build-asan
TSAN_DIR  ?= build-tsan
FUZZ_DIR  ?= build-fuzz
DATA_DIR  ?= ./ckube-data
LISTEN    ?= 127.0.0.1:6443
JOBS      ?= $(shell nproc)
# the ASan+UBSan run's tests mostly wait (servers, kubectl, timers): twice the cores keeps them busy
TEST_JOBS ?= $(shell echo $$(( $$(nproc) * 2 )))
SOURCES    = $(shell find include lib cmd tests bench fuzz -name '*.[ch]' -o -name '*.cc' 2>/dev/null)

.PHONY: run test deps build format format-check release-build tsan-test fuzz-test asan-test clean

run: build
	$(BUILD_DIR)/cmd/ckube/ckube server --listen $(LISTEN) --data-dir $(DATA_DIR)

test: deps format-check release-build tsan-test fuzz-test asan-test

deps:
	@scripts/install-deps
	@scripts/install-js-client

build: deps
	@cmake -S . -B $(BUILD_DIR) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBUILD_TESTING=OFF >/dev/null
	@cmake --build $(BUILD_DIR) -j $(JOBS)

format:
	clang-format -i $(SOURCES)

format-check:
	@clang-format --dry-run --Werror $(SOURCES)
	@echo "format-check: $(words $(SOURCES)) files formatted"

# as users and benchmarks build it, with the tests: GCC reports some warnings
# (-Wformat-truncation, -Wmaybe-uninitialized) only when optimizing
release-build:
	@cmake -S . -B $(REL_DIR) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBUILD_TESTING=ON >/dev/null
	@cmake --build $(REL_DIR) -j $(JOBS)
	@echo "release-build: the whole tree builds optimized"

tsan-test:
	@cmake -S . -B $(TSAN_DIR) -DCKUBE_SANITIZE=thread -DCMAKE_BUILD_TYPE=Debug >/dev/null
	@cmake --build $(TSAN_DIR) --target concurrency-tests -j $(JOBS)
	scripts/ctest-skipped --test-dir $(TSAN_DIR) -L concurrency --output-on-failure -j $(JOBS)

fuzz-test:
	@CC=clang CXX=clang++ cmake -S . -B $(FUZZ_DIR) -DCKUBE_FUZZ=ON -DCMAKE_BUILD_TYPE=Debug >/dev/null
	@cmake --build $(FUZZ_DIR) --target fuzz-targets ckube featuregate-cli -j $(JOBS)
	scripts/ctest-skipped --test-dir $(FUZZ_DIR) -L fuzz --output-on-failure --no-tests=ignore -j $(JOBS)

asan-test:
	@cmake -S . -B $(ASAN_DIR) -DCKUBE_SANITIZE=address,undefined -DCMAKE_BUILD_TYPE=Debug >/dev/null
	@cmake --build $(ASAN_DIR) -j $(JOBS)
	scripts/ctest-skipped --test-dir $(ASAN_DIR) --output-on-failure -j $(TEST_JOBS)

clean:
	rm -rf $(BUILD_DIR) $(REL_DIR) $(ASAN_DIR) $(TSAN_DIR) $(FUZZ_DIR)
