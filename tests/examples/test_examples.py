"""Every example under examples/ runs as its README says, and does what it claims."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
OWN_BACKEND = EXAMPLES / "own_backend"


def environment(tmp: Path, *extra_paths) -> dict:
    """This checkout first on the path (then ``extra_paths``), a cache of the test's own."""
    env = dict(os.environ, HMMBENCH_CACHE_DIR=str(tmp / "cache"), COLUMNS="120")
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), *map(str, extra_paths),
                                         env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return env


def hmmbench(env: dict, *args, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "hmmbench", *args], env=env, cwd=cwd,
                          capture_output=True, text=True, timeout=300)


def runs_by_backend(path: Path) -> dict:
    return {r["backend"]: r for r in json.loads(path.read_text())["runs"]}


# ------------------------------------------------------------------------------------------------
# examples/own_backend: an installable package registering two backends through entry points
# ------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def example_site(tmp_path_factory) -> Path:
    """The example package pip-installed into a folder of its own (built from a copy, so the
    build leaves nothing in the checkout)."""
    tmp = tmp_path_factory.mktemp("own_backend")
    source = shutil.copytree(OWN_BACKEND, tmp / "source",
                             ignore=shutil.ignore_patterns("__pycache__", "*.egg-info", "build"))
    site = tmp / "site"
    out = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps",
                          "--no-build-isolation", "--target", str(site), str(source)],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert (site / "hmmbench_example_backend" / "forward.cu").is_file()   # shipped as data
    return site


def test_own_backend_is_listed_runs_and_matches_the_reference(example_site, tmp_path):
    env = environment(tmp_path, example_site)
    listing = hmmbench(env, "list")
    assert listing.returncode == 0, listing.stderr
    assert "example-numpy" in listing.stdout and "example-cuda" in listing.stdout

    out = tmp_path / "run.json"
    run = hmmbench(env, "run", "-d", "tiny", "-b", "example-numpy", "-b", "example-cuda",
                   "--repeat", "1", "--json", str(out))
    assert run.returncode == 0, run.stdout + run.stderr
    runs = runs_by_backend(out)
    cpu = runs["example-numpy"]
    assert cpu["status"] == "ok", cpu["reason"]
    assert cpu["n_checked"] == cpu["pairs"] == 332          # every pair of tiny checked
    assert cpu["max_abs_err"] <= cpu["tolerance"]
    assert cpu["repeats"] == 1 and cpu["timing_s"]["kernel"] > 0

    from hmmbench.apis.cuda import unavailable_reason
    gpu, reason = runs["example-cuda"], unavailable_reason()
    if reason is None:                                     # a CUDA machine: checked like the CPU
        assert gpu["status"] == "ok", gpu["reason"]
    else:
        assert gpu["status"] == "unavailable" and gpu["reason"] == reason


def test_own_backend_numpy_lanes_recompute_underflows_themselves(monkeypatch):
    """A pair far below float32's range goes through the package's own float64 pass and still
    matches the reference (one short, well-matched pair beside it stays float32)."""
    from cpu_reference.pairhmm.forward import forward_log10
    from hmmbench.pairhmm.model import Batch, Read, pack
    monkeypatch.syspath_prepend(str(OWN_BACKEND))
    from hmmbench_example_backend import ExampleNumpy

    def read(bases: str, gap_q: str) -> Read:
        n = len(bases)
        return Read(bases.encode(), b"I" * n, b"N" * n, b"N" * n, gap_q.encode() * n)

    pairs = pack([Batch([read("ACGTTGCAAC", "+")], [b"GGACGTTGCAACTT"]),
                  Batch([read("A" * 60, "I")], [b"C" * 60])])
    done = ExampleNumpy().run(pairs)
    ref = forward_log10(pairs, "float64")
    assert done.n_fallback == 1
    assert ref[1] < -150                               # really out of float32's range
    np.testing.assert_allclose(done.log10, ref, rtol=0, atol=1e-4)


#: forward.cu built for the host: each CUDA thread of the launch becomes one loop iteration.
HOST_HARNESS = """
#include <math.h>
struct Index { int x; };
static Index blockIdx = {0}, blockDim = {1}, threadIdx = {0};
#define __global__
#include "forward.cu"
extern "C" void forward_on_host(int n_pairs, const int* read_len, const long long* read_start,
    const int* hap_len, const long long* hap_start, const long long* scratch_start,
    const unsigned char* read_bases, const float* probs, const unsigned char* hap_bases,
    float* scratch, float* sums) {
    for (int p = 0; p < n_pairs; ++p) {
        threadIdx.x = p;
        forward_one_thread_per_pair(n_pairs, read_len, read_start, hap_len, hap_start,
                                    scratch_start, read_bases, probs, hap_bases, scratch, sums);
    }
}
"""


def test_own_backend_kernel_compiles_and_its_source_computes_the_reference(tmp_path,
                                                                        monkeypatch):
    """nvcc builds forward.cu for sm_90; the same source built for the host, fed by the CUDA
    backend's own host layout, matches the reference on tiny (no GPU needed)."""
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc not found")
    package = OWN_BACKEND / "hmmbench_example_backend"
    out = subprocess.run(["nvcc", "-cubin", "-arch=sm_90", "-O3", "-Xptxas", "-v",
                          str(package / "forward.cu"), "-o", str(tmp_path / "forward.cubin")],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "forward_one_thread_per_pair" in out.stderr        # ptxas -v names the kernel

    (tmp_path / "harness.cpp").write_text(HOST_HARNESS)
    library = tmp_path / "libforward.so"
    out = subprocess.run(["nvcc", "-x", "c++", "-shared", "-Xcompiler", "-fPIC", "-O2",
                          f"-I{package}", str(tmp_path / "harness.cpp"), "-o", str(library)],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr

    import ctypes
    from cpu_reference.pairhmm import finish_float32
    from cpu_reference.pairhmm.forward import forward_log10
    from hmmbench.pairhmm.datasets import resolve
    monkeypatch.syspath_prepend(str(OWN_BACKEND))
    from hmmbench_example_backend.backend import kernel_arguments

    pairs = resolve("tiny").load()
    arrays, scratch_floats = kernel_arguments(pairs)
    scratch = np.zeros(scratch_floats, np.float32)
    sums = np.full(pairs.n_pairs, np.nan, np.float32)
    pointer = [a.ctypes.data_as(ctypes.c_void_p) for a in (*arrays, scratch, sums)]
    ctypes.CDLL(str(library)).forward_on_host(ctypes.c_int(pairs.n_pairs), *pointer)
    log10, redo = finish_float32(pairs, sums)
    assert len(redo) == 0                                     # every pair computed in float32
    np.testing.assert_allclose(log10, forward_log10(pairs, "float64"), rtol=0, atol=1e-4)


# ------------------------------------------------------------------------------------------------
# examples/custom_dataset.py: a block-format file written from Python, benchmarked by path
# ------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def custom_dataset(tmp_path_factory) -> tuple:
    """(the folder the example wrote into, its output): my_pairs.in and its result file."""
    tmp = tmp_path_factory.mktemp("custom_dataset")
    out = subprocess.run([sys.executable, str(EXAMPLES / "custom_dataset.py"), str(tmp)],
                         env=environment(tmp), capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    return tmp, out


def test_custom_dataset_is_written_loaded_and_cross_checked(custom_dataset):
    tmp_path, out = custom_dataset
    from hmmbench.pairhmm.datasets.blockfmt import load_block
    written = load_block(tmp_path / "my_pairs.in")            # valid block format
    run = runs_by_backend(tmp_path / "my_pairs.json")["numpy-f32"]
    assert run["dataset"] == "my_pairs.in" and run["pairs"] == written.n_pairs == 25
    assert run["status"] == "ok" and run["n_checked"] == 25
    assert run["n_fallback"] == 1              # the pair written to fall out of float32's range
    assert "numpy-f32 ok, 25 pairs" in out.stdout


# ------------------------------------------------------------------------------------------------
# examples/read_results_pandas.py: result files as a DataFrame and a pivot
# ------------------------------------------------------------------------------------------------
def test_read_results_pandas_on_the_committed_files(monkeypatch):
    files = sorted((REPO / "results" / "h200").glob("*.json"))
    assert files, "no committed results/h200/*.json"
    monkeypatch.syspath_prepend(str(EXAMPLES))
    import read_results_pandas as example
    frame = example.load_runs(files)
    n_runs = sum(len(json.loads(f.read_text())["runs"]) for f in files)
    assert len(frame) == n_runs                               # one row per run
    assert list(frame.columns) == ["file", "dataset", "backend", "device", "gcups_kernel",
                                   "gcups_total", "status"]
    best = frame[(frame.status == "ok") & (frame.dataset == "1m")]
    assert not best.empty, "the committed files have no ok run on 1m to pivot"
    out = subprocess.run([sys.executable, str(EXAMPLES / "read_results_pandas.py")],
                         env=environment(REPO), capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert f"{n_runs} runs from {len(files)} files" in out.stdout
    fastest = best.loc[best.gcups_kernel.idxmax()]
    # the pivot puts the fastest backend on 1m first, with its GCUPS
    first_row = out.stdout.split("best GCUPS (kernel) per backend and dataset\n")[1].splitlines()[2]
    assert first_row.split()[0] == fastest.backend
    assert f"{fastest.gcups_kernel:.3g}" in first_row


def test_read_results_pandas_on_a_fresh_file(custom_dataset):
    """The result file the custom-dataset example just wrote."""
    tmp_path, _ = custom_dataset
    fresh = tmp_path / "my_pairs.json"
    out = subprocess.run([sys.executable, str(EXAMPLES / "read_results_pandas.py"), str(fresh),
                          "--datasets", "my_pairs.in"],
                         env=environment(tmp_path), capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "1 runs from 1 files" in out.stdout
    table = out.stdout.split("per backend and dataset\n")[1].splitlines()
    assert table[0].split() == ["dataset", "my_pairs.in"]
    shown = {line.split()[0]: line.split()[1] for line in table[2:]}
    assert shown == {b: f"{r['gcups_kernel']:.3g}" for b, r in runs_by_backend(fresh).items()}


# ------------------------------------------------------------------------------------------------
# examples/ci/regression-gate.yml: the workflow's hmmbench commands, run here on tiny
# ------------------------------------------------------------------------------------------------
def gate_commands(workflow: dict) -> list:
    """The ``hmmbench`` lines of the workflow's steps, in order."""
    return [line.strip() for step in workflow["jobs"]["gate"]["steps"]
            for line in step.get("run", "").splitlines() if line.strip().startswith("hmmbench ")]


def test_regression_gate_workflow_runs_and_gates(tmp_path):
    import yaml
    workflow = yaml.safe_load((EXAMPLES / "ci" / "regression-gate.yml").read_text())
    assert workflow.get("on", workflow.get(True)) == {"pull_request": None}   # YAML 1.1: on = True
    steps = workflow["jobs"]["gate"]["steps"]
    assert steps[0]["uses"].startswith("actions/checkout@")
    assert any("pip\" install" in s.get("run", "") for s in steps)    # both commits installed
    commands = gate_commands(workflow)
    assert [c.split()[1] for c in commands] == ["run", "run", "compare"]

    # The same lines through bash, hmmbench from this environment, on tiny with the NumPy backend.
    summary = tmp_path / "summary.md"
    env = environment(tmp_path)
    env.update({k: str(v) for k, v in workflow["env"].items()})
    env.update(DATASET="tiny", BACKEND="numpy", GITHUB_STEP_SUMMARY=str(summary),
               PATH=os.pathsep.join([str(Path(sys.executable).parent), env["PATH"]]))

    def step(line: str, **overrides) -> subprocess.CompletedProcess:
        return subprocess.run(["bash", "-c", line], cwd=tmp_path, env={**env, **overrides},
                              capture_output=True, text=True, timeout=300)

    for line in commands[:2]:
        done = step(line)
        assert done.returncode == 0, done.stdout + done.stderr
    base, cand = (runs_by_backend(tmp_path / f)["numpy"] for f in ("baseline.json",
                                                                     "candidate.json"))
    assert base["status"] == cand["status"] == "ok"
    assert base["repeats"] == cand["repeats"] == int(workflow["env"]["REPEAT"])

    # Same code twice: nothing fails (a threshold no timing noise of this machine reaches).
    passed = step(commands[2], MAX_SLOWDOWN="1000")
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert "numpy" in summary.read_text()

    # A candidate whose every sample is three times the baseline's slowest (beyond the threshold
    # and beyond any noise of this machine) fails the gate at the workflow's threshold.
    slowest = {k: max(v) for k, v in base["samples_s"].items()}
    doc = json.loads((tmp_path / "candidate.json").read_text())
    for run in doc["runs"]:
        run["samples_s"] = {k: [3 * slowest[k] * (1 + i / 100) for i in range(len(v))]
                            for k, v in run["samples_s"].items()}
        run["timing_s"] = {k: float(np.median(v)) for k, v in run["samples_s"].items()}
        run["timing_min_s"] = {k: min(v) for k, v in run["samples_s"].items()}
        run["timing_max_s"] = {k: max(v) for k, v in run["samples_s"].items()}
    (tmp_path / "candidate.json").write_text(json.dumps(doc))
    summary.write_text("")
    failed = step(commands[2])
    assert failed.returncode == 1, failed.stdout + failed.stderr + summary.read_text()
    assert "slower" in summary.read_text()
