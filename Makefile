# `make setup` builds a virtualenv in .venv (hmmbench, its extras, two CPU OpenCL devices); then
# `. .venv/bin/activate` puts `hmmbench` on PATH. `make test` (the test suite) and `make bench`
# (every backend this machine can run, on the small real set) set up first.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# tiny, 10s and 1m ship inside the package; further real sets (the GATK and GKL files the tests
# use) are read from beside the checkout (never committed); override to point elsewhere.
HMMBENCH_DATA_PATH ?= $(abspath ../shared/data/pairhmm)
export HMMBENCH_DATA_PATH
# Python writes its bytecode caches (an environment that sets PYTHONDONTWRITEBYTECODE would have
# every test process, Dask worker and CLI call compile hmmbench, the tests and, after pip's
# --no-compile below, the venv's imports from source again)
export PYTHONDONTWRITEBYTECODE :=
# `hmmbench run` arguments for `make bench`, e.g. BENCH_ARGS="--dataset 1m --backend 'cuda-*'".
BENCH_ARGS ?= --dataset tiny
# `make test`: two pytest-xdist workers, each test file whole on one (module fixtures and the
# order inside a file hold), handed out in collection order (tests/conftest.py puts the slowest
# files first); the 25 slowest tests listed at the end.
PYTEST_ARGS ?= -n 2 --dist loadfile --no-loadscope-reorder --durations=25

.PHONY: setup test bench venv opencl-cpu clean results-index results-summary

setup: venv opencl-cpu

venv: $(VENV)/.installed

$(VENV)/.installed: setup.cfg pyproject.toml
	$(PYTHON) -m venv $(VENV)
	@# --no-compile: what is imported is compiled (and cached) then, not every file of every package
	$(BIN)/python -m pip install -q --no-compile -e '.[test,opencl,plot,dask]'
	@# PyCUDA only where a CUDA toolkit and driver exist; its absence is reported by `hmmbench list`.
	@if command -v nvidia-smi >/dev/null 2>&1 && command -v nvcc >/dev/null 2>&1; then \
	    $(BIN)/python -m pip install -q --no-compile -e '.[cuda]' || echo "make: pycuda not installed; cuda backends will say why"; \
	    $(BIN)/python -m pip install -q --no-compile -e '.[dask-cuda]' || echo "make: dask-cuda not installed; --cluster local starts CPU worker processes"; fi
	touch $@

opencl-cpu: venv
	bash scripts/install_opencl_cpu.sh $(VENV)

test: setup
	HMMBENCH_VENV=$(VENV) . scripts/opencl_env.sh && $(BIN)/python -m pytest -q $(PYTEST_ARGS)

bench: setup
	HMMBENCH_VENV=$(VENV) . scripts/opencl_env.sh && $(BIN)/hmmbench run $(BENCH_ARGS)

# results/index.html: one self-contained page of every committed result file (generated, git-ignored).
results-index: venv
	$(BIN)/hmmbench report results/*/*.json --html results/index.html --quiet

# results/SUMMARY.md, the tables of every committed result file (tests/report/test_summary.py checks it)
results-summary: venv
	$(BIN)/hmmbench report --summary results/ > results/SUMMARY.md.tmp
	mv results/SUMMARY.md.tmp results/SUMMARY.md

clean:
	rm -rf $(VENV) build *.egg-info
