# Nereid - plain Makefile.  `make` builds the library and the CLI;
# `make test` runs every test (installing its own Python test dependencies
# into build/venv); `make asan` runs the suite under ASan and UBSan.

CC      ?= cc
PYTHON  ?= python3
BUILD   ?= build
OPT     ?= -O2
WERROR  ?= -Werror
WARN    := -Wall -Wextra -Wshadow -Wmissing-prototypes -Wstrict-prototypes $(WERROR)
CFLAGS  ?=
CFLAGS  += -std=c11 -D_GNU_SOURCE $(OPT) -g -fPIC $(WARN) -Iinclude -Isrc $(SAN)
LDLIBS  += -lm -lpthread -ldl

SRCS    := $(sort $(wildcard src/*.c))
OBJS    := $(SRCS:src/%.c=$(BUILD)/obj/%.o)
DEFS    := $(wildcard src/*.def) $(wildcard src/*.h) include/nereid.h
CTESTS  := $(sort $(wildcard tests/c/test_*.c))
CTESTBINS := $(CTESTS:tests/c/%.c=$(BUILD)/tests/%)

PYEXT_SUFFIX := $(shell $(PYTHON) -c "import sysconfig; print(sysconfig.get_config_var('EXT_SUFFIX'))" 2>/dev/null)
PYINC   := $(shell $(PYTHON) -c "import sysconfig; print(sysconfig.get_paths()['include'])" 2>/dev/null)
PYEXT   := python/nereid/_C$(PYEXT_SUFFIX)
VENV    := $(BUILD)/venv
VPY     := $(VENV)/bin/python


.PHONY: asan-py
.PHONY: test-sim
.PHONY: gpu-test all lib cli pyext test test-c test-lit test-errors test-py test-compat asan fuzz valgrind clean venv demo check-determinism
.PHONY: examples run-examples test-aot

all: $(BUILD)/libnereid.a $(BUILD)/libnereid.so $(BUILD)/nereid

$(BUILD)/obj/%.o: src/%.c $(DEFS) | $(BUILD)/obj
	$(CC) $(CFLAGS) -c $< -o $@

$(BUILD)/obj $(BUILD)/tests:
	mkdir -p $@

$(BUILD)/libnereid.a: $(OBJS)
	rm -f $@
	ar rcs $@ $^

$(BUILD)/libnereid.so: $(OBJS)
	$(CC) $(CFLAGS) -shared -o $@ $^ $(LDLIBS)

$(BUILD)/nereid: tools/nereid.c $(BUILD)/libnereid.a
	$(CC) $(CFLAGS) -o $@ $< $(BUILD)/libnereid.a $(LDLIBS)

$(BUILD)/tests/%: tests/c/%.c $(BUILD)/libnereid.a | $(BUILD)/tests
	$(CC) $(CFLAGS) -o $@ $< $(BUILD)/libnereid.a $(LDLIBS)

# The CUDA runtime smoke test; needs a GPU to run (build/tests/rt_smoke [ptx [device]]).
# test_cuda_rt includes it and runs it against a driver double.
$(BUILD)/tests/rt_smoke: tests/gpu/rt_smoke.c $(BUILD)/libnereid.a | $(BUILD)/tests
	$(CC) $(CFLAGS) -o $@ $< $(BUILD)/libnereid.a $(LDLIBS)
$(BUILD)/tests/test_cuda_rt: tests/gpu/rt_smoke.c
$(BUILD)/tests/test_ptx: $(wildcard tests/c/test_ptx*.h)

# The Python extension, built in place so that `python/` is importable.
pyext: $(PYEXT)
$(PYEXT): python/nereid/_C.c $(OBJS)
	$(CC) $(CFLAGS) -Wno-missing-prototypes -I$(PYINC) -shared -o $@ $< $(OBJS) $(LDLIBS)

venv: $(VENV)/.ok
$(VENV)/.ok: tests/requirements.txt
	$(PYTHON) -m venv $(VENV)
	$(VPY) -m pip install -q --disable-pip-version-check -r tests/requirements.txt
	touch $@

test: all pyext venv
	@$(MAKE) --no-print-directory test-c test-lit test-errors test-py test-compat check-determinism test-aot

test-c: $(CTESTBINS)
	@set -e; for t in $(CTESTBINS); do echo "== $$t"; $$t; done

test-lit: all venv
	PATH="$(CURDIR)/$(BUILD):$(CURDIR)/$(VENV)/bin:$$PATH" $(VENV)/bin/lit -sv tests/lit

test-errors: all
	$(PYTHON) tests/golden.py --nereid $(BUILD)/nereid tests/errors tests/golden

test-py: pyext venv
	@command -v ptxas >/dev/null || test -x /usr/local/cuda/bin/ptxas || echo 'ptxas not found: the PTX of the corpus is not assembled'
	NEREID_VERIFY_EACH=1 NEREID_TEST_PTXAS=1 PYTHONPATH=$(CURDIR)/python $(VPY) -m pytest -q -x tests/python

# The compatibility suite (tests/compat, docs/compat.md): Triton-style kernels
# (RMSNorm, RoPE, SwiGLU, cross-entropy, paged attention, fused MoE) under the
# same device modes as tests/python (NEREID_TEST_DEVICE, NEREID_TEST_PTXAS).
test-compat: pyext venv
	NEREID_VERIFY_EACH=1 NEREID_TEST_PTXAS=1 PYTHONPATH=$(CURDIR)/python $(VPY) -m pytest -q -x tests/compat

# The end-to-end suite with every launch also run on the CPU PTX simulator
# (tools/ptxsim) for sm_90 and sm_80 and compared with the interpreter.
test-sim: pyext venv
	NEREID_TEST_DEVICE=sim PYTHONPATH=$(CURDIR)/python $(VPY) -m pytest -q -x -p no:cacheprovider tests/python
	NEREID_TEST_DEVICE=sim PYTHONPATH=$(CURDIR)/python $(VPY) -m pytest -q -x -p no:cacheprovider tests/compat

check-determinism: all
	$(PYTHON) tests/determinism.py --nereid $(BUILD)/nereid examples

# Sanitizers: a separate build tree, then the C, lit and golden suites.
asan:
	$(MAKE) BUILD=build-asan OPT=-O1 SAN="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all" all $(patsubst $(BUILD)/%,build-asan/%,$(CTESTBINS))
	ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 $(MAKE) BUILD=build-asan SAN="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all" OPT=-O1 test-c test-errors
	ASAN_OPTIONS=detect_leaks=1 BUILD=build-asan SAN="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all" tests/aot/run.sh
	$(MAKE) venv
	ASAN_OPTIONS=detect_leaks=1 PATH="$(CURDIR)/build-asan:$(CURDIR)/$(VENV)/bin:$$PATH" $(VENV)/bin/lit -sv tests/lit
	$(MAKE) asan-py

# The Python end-to-end suite against an extension built with the sanitizers
# (a copy of the package in build-asan/python; Python itself leaks, so leak
# detection is off there).
ASAN_CC := $(shell command -v gcc || echo $(CC))
asan-py: venv
	rm -rf build-asan/python && mkdir -p build-asan/python && cp -r python/nereid build-asan/python/
	rm -f build-asan/python/nereid/_C*.so
	$(ASAN_CC) -std=c11 -D_GNU_SOURCE -O1 -g -fPIC -fsanitize=address,undefined -fno-omit-frame-pointer \
	    -fno-sanitize-recover=all -Iinclude -Isrc -I$(PYINC) -shared -o build-asan/python/nereid/_C$(PYEXT_SUFFIX) \
	    python/nereid/_C.c $(SRCS) $(LDLIBS)
	LD_PRELOAD="$$($(ASAN_CC) -print-file-name=libasan.so) $$($(ASAN_CC) -print-file-name=libubsan.so)" \
	    ASAN_OPTIONS=detect_leaks=0 NEREID_VERIFY_EACH=1 NEREID_TEST_PYTHONPATH=$(CURDIR)/build-asan/python \
	    PYTHONPATH=$(CURDIR)/build-asan/python $(VPY) -m pytest -q -x -p no:cacheprovider tests/python

# libFuzzer targets for the front end (clang): the parser alone, then
# parsing + lowering + the block pipeline, FUZZ_SECONDS each (600 by default).
FUZZ_SECONDS ?= 600
FUZZ_CC := clang -std=c11 -D_GNU_SOURCE -g -O1 -fsanitize=fuzzer,address,undefined -Iinclude -Isrc
FUZZ_RUN = -max_total_time=$(FUZZ_SECONDS) -timeout=10 -rss_limit_mb=2048 -dict=tests/fuzz/python.dict
fuzz:
	mkdir -p build-fuzz/corpus
	$(FUZZ_CC) -o build-fuzz/fuzz_frontend tests/fuzz/fuzz_frontend.c $(SRCS) -lm -lpthread -ldl
	$(FUZZ_CC) -o build-fuzz/fuzz_sema tests/fuzz/fuzz_sema.c $(SRCS) -lm -lpthread -ldl
	cp -n tests/fuzz/seeds/* examples/*.py tests/lit/lower/*.py tests/errors/*.py build-fuzz/corpus/ 2>/dev/null || true
	build-fuzz/fuzz_frontend $(FUZZ_RUN) build-fuzz/corpus
	build-fuzz/fuzz_sema $(FUZZ_RUN) build-fuzz/corpus

valgrind: $(CTESTBINS) $(BUILD)/nereid
	@set -e; for t in $(CTESTBINS); do valgrind -q --error-exitcode=1 --leak-check=full $$t >/dev/null; echo "valgrind ok: $$t"; done

# On a machine with an NVIDIA GPU: the end-to-end suite on the GPU, each
# launch checked against the interpreter (tests/python/gpu_mode.py), and the
# driver smoke test.  Uses the system Python that has torch.
GPU_PYTHON ?= python3
GPU_TEST_JOBS ?= 1
# run a second time on Hopper with NEREID_DISABLE_HOPPER=1: the mma.sync path of every dot
MMA_TESTS := tests/python/test_dot_edges.py tests/python/test_e2e.py tests/python/test_gpu_edges.py
gpu-test: all pyext build/tests/rt_smoke
	build/tests/rt_smoke
	$(MAKE) run-examples
	tools/gpu_pytest.sh $(GPU_TEST_JOBS) $(GPU_PYTHON) $(BUILD)/gpu_pytest
	NEREID_DISABLE_HOPPER=1 tools/gpu_pytest.sh $(GPU_TEST_JOBS) $(GPU_PYTHON) $(BUILD)/gpu_pytest_mma $(MMA_TESTS)

demo: all pyext venv
	PYTHONPATH=$(CURDIR)/python $(VPY) examples/demo.py

clean:
	rm -rf $(BUILD) build-asan build-fuzz python/nereid/_C*.so

# The GPU benchmarks against Triton and torch (needs a GPU, torch and Triton;
# see docs/benchmarks.md).  BENCH_ARGS: e.g. --quick, --only softmax, --json.
.PHONY: bench
bench: all pyext
	$(PYTHON) bench/run.py $(BENCH_ARGS)

# The C floor of a launch (bench/launch.py runs it): needs cuda.h and libcuda.
CUDA_HOME ?= /usr/local/cuda
BENCH_CUDA_LIB := $(firstword $(wildcard $(CUDA_HOME)/lib64/stubs/libcuda.so \
                                         $(CUDA_HOME)/targets/$(shell uname -m)-linux/lib/stubs/libcuda.so))
$(BUILD)/bench/launch_floor: bench/launch_floor.c $(BUILD)/libnereid.a
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -O2 -Wall -Wextra $(if $(WERROR),-Werror) -Iinclude -I$(CUDA_HOME)/include -o $@ $< \
	    $(BUILD)/libnereid.a $(if $(BENCH_CUDA_LIB),-L$(dir $(BENCH_CUDA_LIB)) -lcuda,-l:libcuda.so.1) -lm -lpthread -ldl

# Ahead-of-time compilation.  `make examples` builds the C examples
# (examples/c: kernels compiled by `nereid aot`, plain C99 programs linked
# with libcuda alone) into build/examples; `make run-examples` runs them on
# the GPU, each checking its results against the CPU.  `make test-aot` checks
# the generated C without a GPU: strict C99 builds, links against the
# driver's stub library, and runs against a fake driver (tests/aot).
EXAMPLES_MAKE = $(MAKE) -C examples/c NEREID=$(CURDIR)/$(BUILD)/nereid OUT=$(CURDIR)/$(BUILD)/examples \
                NEREID_INC=$(CURDIR)/include NEREID_LIB=$(CURDIR)/$(BUILD)/libnereid.a WERROR=$(WERROR)
examples: all
	$(EXAMPLES_MAKE)

run-examples: examples
	$(EXAMPLES_MAKE) run

test-aot: all
	CC=$(CC) BUILD=$(BUILD) tests/aot/run.sh
