"""The profile workload's working memory: the NumPy reference's estimate
(``NumpyProfile.memory_need``) against the peak tracemalloc sees on generated databases of
several shapes -- from the loaded database and from the database's name alone, as the run's
check reads it before anything is generated -- and on the pipeline where few sequences or all of
them pass (a database of the model's homologs), an OpenCL backend's on a CPU device against
its resident peak, and a cell past ``--memory-limit`` refused with
one line before its database is generated or its model loaded."""
from __future__ import annotations

import os

import numpy as np
import pytest

from hmmbench.memory_peak import in_own_process, traced_peak
from hmmbench.profile import datasets as pds
from hmmbench.profile.job import ProfileSearch
from hmmbench.profile.model import SequenceSet
from hmmbench.profile.reference import NumpyProfile
from hmmbench.profile.shape import ProfileShape
from helpers.gpu_memory import gpu_device_peak
from helpers.hostile_world import PROFILE_RUN, refused, world  # noqa: F401 - world is a fixture

pyhmmer = pytest.importorskip("pyhmmer", reason="pyhmmer not installed (pip install pyhmmer)")

#: (residues, model, kind): a wide int filter batch, few long-padded sequences whose code
#: matrix's building (per residue) outweighs the DP rows (vf at M = 100) or does not (M = 400),
#: float64 DPs whose rows outweigh the padded codes, and the pipeline where few pass its MSV
#: filter (its later stages' slices of survivors never outweigh the MSV filter's batches), also
#: on a small database at M = 1500, where one survivor's Forward tables outweigh them
SHAPES = [(200_000, "random-M50", "ssv"), (20_000, "random-M100", "vf"),
          (20_000, "random-M400", "vf"), (20_000, "random-M1500", "viterbi"),
          (20_000, "random-M1500", "forward"), (200_000, "query-M400", "pipeline"),
          (20_000, "query-M1500", "pipeline")]


@pytest.mark.parametrize("residues,model_name,kind", SHAPES)
def test_reference_estimate_within_one_and_a_half_of_the_peak(residues, model_name, kind):
    seqs = pds.resolve_database(f"proteins-{residues}").load()
    model, hmm = pds.resolve_model(model_name).load()
    backend = NumpyProfile()
    job = ProfileSearch(model, seqs, kind, hmm)
    peak = traced_peak(lambda: backend.run(job))
    for shape in (ProfileShape.of(seqs, model.M, kind),
                  ProfileShape.generated(residues, model.M, kind)):
        estimate = backend.memory_need(shape).host
        assert peak <= estimate <= 1.5 * peak, (shape, peak, estimate)


def emitted_homologs(hmm, n: int, seed: int = 7) -> SequenceSet:
    """``n`` sequences emitted by the model (pyhmmer's HMM.emit_sequence): homologs that pass
    every stage of its pipeline."""
    rng = pyhmmer.easel.Randomness(seed)
    return SequenceSet.from_pyhmmer(pyhmmer.easel.DigitalSequenceBlock(
        hmm.alphabet, [hmm.emit_sequence(rng) for _ in range(n)]))


@pytest.fixture(scope="module")
def homologs():
    """query-M400 and 120 of its homologs: every one reaches Forward, in several slices."""
    model, hmm = pds.resolve_model("query-M400").load()
    return model, hmm, emitted_homologs(hmm, 120)


def test_pipeline_estimate_where_everything_passes(homologs):
    """A database of homologs, every sequence past Forward: the pipeline's later stages score
    their survivors in slices no larger than the MSV filter's batches, so it peaks within the
    estimate that a database where few pass is estimated by (and within 1.5x of it)."""
    model, hmm, seqs = homologs
    backend = NumpyProfile()
    job = ProfileSearch(model, seqs, "pipeline", hmm)
    runs = []
    peak = traced_peak(lambda: runs.append(backend.run(job)))
    assert runs[0].info["pass_counts"]["fwd"] == len(seqs)
    estimate = backend.memory_need(ProfileShape.of(seqs, model.M, "pipeline")).host
    assert peak <= estimate <= 1.5 * peak, (peak, estimate)


def test_pipeline_scores_in_slices_as_in_one_call(homologs):
    """The Forward scores of survivors cut into slices: bit for bit one call's over all of
    them; the pass counts HMMER's (the bias and Viterbi filters sliced too)."""
    from cpu_reference.profile import generic as pg
    from hmmbench.profile import pipeline as pl, reference_memory as rm
    model, hmm, seqs = homologs
    budget = rm.most_batch_need(ProfileShape.of(seqs, model.M, "msv"), "msv")
    assert len(rm.survivor_slices(np.sort(seqs.lengths), model.M, budget, "forward")) > 1
    counts, stage, fwd = pl.run_stages(model, seqs)
    assert counts.as_dict() == pl.pyhmmer_pass_counts(hmm, seqs.to_pyhmmer()).as_dict()
    reached = np.flatnonzero(stage >= 2)
    assert reached.size == len(seqs)
    assert fwd[reached].tobytes() == pg.generic_forward(model, seqs.subset(reached)).tobytes()


@pytest.mark.parametrize("residues,M,kind", [(2_000_000, 400, "vf"), (2_000_000, 1500, "ssv"),
                                             (500_000, 400, "viterbi")])
def test_padded_batch_from_the_name_follows_the_batches(residues, M, kind):
    """The reference's widest batch (sequences x its longest) from the database's name alone,
    against the batches cpu_reference cuts from the generated lengths: several batches, the
    last full one wider than the short one of the longest sequences."""
    from cpu_reference.profile.filters import length_batches
    from hmmbench.profile.reference_memory import FILTER_BATCH_CELLS, GENERIC_BATCH_CELLS
    cells = GENERIC_BATCH_CELLS if kind == "viterbi" else FILTER_BATCH_CELLS
    seqs = pds.resolve_database(f"proteins-{residues}").load()
    lengths = seqs.lengths
    real = [(len(i), int(lengths[i].sum()), len(i) * int(lengths[i].max()))
            for i in length_batches(lengths, M, cells)]
    widest = max(padded for _, _, padded in real)
    shape = ProfileShape.generated(residues, M, kind)
    assert shape.sequences > cells // M                 # more than one batch
    padded = shape.padded_batch(cells // M)
    assert widest / 1.5 <= padded <= 1.5 * widest, (widest, padded)
    # the batches' residues and cells (building the codes costs per residue and per cell): a
    # loaded database's exactly; from the name, the costliest batch's building at or above
    # the real one's and within 1.5x of it
    from hmmbench.profile.reference_memory import PADDED_CELL_BYTES, PADDED_RESIDUE_BYTES
    assert ProfileShape.of(seqs, M, kind).batches(cells // M) == real
    real_cost, named_cost = (max(PADDED_RESIDUE_BYTES * r + PADDED_CELL_BYTES * p
                                 for _, r, p in batches)
                             for batches in (real, shape.batches(cells // M)))
    assert real_cost <= named_cost <= 1.5 * real_cost, (real, shape.batches(cells // M))


def test_generated_shape_follows_the_generator():
    """The name's shape: sequences and residues as generated; the longest sequence near the
    generated one (the estimate's padded width)."""
    seqs = pds.resolve_database("proteins-200000").load()
    shape = ProfileShape.generated(200_000, 100, "ssv")
    assert abs(shape.sequences - len(seqs)) <= 0.1 * len(seqs)
    assert shape.residues == 200_000
    assert 0.8 * seqs.lengths.max() <= shape.max_length <= 1.5 * seqs.lengths.max()


def test_profile_cell_refused_before_its_database_is_generated(world, capsys, monkeypatch):
    """Past --memory-limit: one line naming the estimate, the limit, the backend and the
    database; exit 2, no file -- and the database never generated, the model never loaded."""
    called = []
    monkeypatch.setattr(pds, "generate_proteins", lambda *a, **k: called.append(a))
    line = refused(world, capsys, PROFILE_RUN + ["-d", "proteins-2e7", "--model", "random-M400",
                                                 "--memory-limit", "16M", "--json", "out.json"],
                   "proteins-2e7", "'profile-numpy'", "(estimate)", "--memory-limit 16.0 MiB")
    assert "MiB of memory" in line or "GiB of memory" in line
    assert not called and not (world / "out.json").exists()


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="needs Linux's /proc")
def test_opencl_cpu_estimate_within_one_and_a_half_of_the_resident_peak():
    """One call in a process of its own: the growth of the peak resident size (VmHWM) from
    before the backend exists to the end of its first call (the runtime, its kernel builds, the
    layout and buffers), against the estimate from the database's name."""
    env = dict(os.environ)
    # the runtime the constant was fit on, by its platform ("Intel" alone names PoCL on a Xeon)
    env.setdefault("HMMBENCH_OPENCL_DEVICE", "Intel(R) OpenCL")
    env["PYOPENCL_NO_CACHE"] = "1"                      # kernels built afresh, as on a new machine
    r = in_own_process("profile", "profile-opencl-task", "proteins-200000/random-M400/ssv",
                       "resident", env=env, timeout=300)
    if "unavailable" in r or r["gpu"]:
        pytest.skip(f"no OpenCL CPU device: {r.get('unavailable', 'a GPU')}")
    assert r["hwm"] <= r["named"] <= 1.5 * r["hwm"], r


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="needs Linux's /proc")
@pytest.mark.parametrize("residues", [2_000_000, 20_000_000])
def test_pyhmmer_estimate_within_one_and_a_half_of_the_resident_peak(residues):
    """pyhmmer's memory is C's (tracemalloc does not see it): its estimate against the growth
    of the resident peak over one call, in a process of its own (at 20M residues the per-residue
    part dominates: an estimate too low per residue shows there)."""
    r = in_own_process("profile", "profile-pyhmmer", f"proteins-{residues}/random-M400/ssv",
                       "resident", timeout=300)
    if "unavailable" in r:
        pytest.skip(r["unavailable"])
    assert r["hwm"] <= r["named"] <= 1.5 * r["hwm"], r


@pytest.mark.parametrize("backend,cell", [
    ("profile-cuda-task", "proteins-2000000/random-M400/ssv"),
    ("profile-cuda-warp", "proteins-2000000/random-M400/ssv"),
    ("profile-cuda-warp", "proteins-200000/query-M400/pipeline"),
    ("profile-cuda-warp",
     "proteins-2000000/random-M400:1+random-M400:2+random-M400:3+random-M400:4/msv"),
    ("profile-cuda-ganesan", "proteins-200000/random-M400/viterbi"),
    ("profile-opencl-task", "proteins-2000000/random-M400/ssv")])
def test_gpu_device_estimate_within_one_and_a_half_of_the_device_peak(backend, cell):
    """On a GPU (OpenCL: NVIDIA's), in a process of its own: the most the device's free memory
    fell over the first call, against the device estimate from the database's name (a filter,
    a pipeline, a batch of four models, the generic kernel)."""
    env = dict(os.environ, HMMBENCH_OPENCL_DEVICE="NVIDIA")
    r = gpu_device_peak("profile", backend, cell, env)
    assert r["gpu"], r
    assert r["device_peak"] <= r["named_device"] <= 1.5 * r["device_peak"], r


def test_cuda_estimate_budgets_the_host_side(world, capsys):
    """The CUDA profile backends' host need: the driver and kernel builds, the uploads'
    page-locked staging and arena, and per-sequence arrays -- not a copy of the database (its residues
    are uploaded in place) -- checked before anything is allocated, GPU or not."""
    from hmmbench.apis import cuda
    from hmmbench.profile.device.cuda import CudaGenericProfile, CudaProfile
    from hmmbench.profile.device.cuda_resident import UPLOAD_BUFFERS, UPLOAD_CHUNK
    from hmmbench.profile.device.cuda_uploads import FIRST_BYTES
    shape = ProfileShape.generated(20_000_000, 400, "ssv")
    floor = cuda.HOST_RUNTIME_BYTES + UPLOAD_BUFFERS * UPLOAD_CHUNK + FIRST_BYTES
    for backend in (CudaProfile("profile-cuda-task", "inter-task", warp=False),
                    CudaGenericProfile()):
        need = backend.memory_need(shape)
        assert floor < need.host < floor + shape.nbytes / 2, need
    line = refused(world, capsys, ["run", "--workload", "profile", "-b", "profile-cuda-task",
                                   "--kind", "ssv", "-d", "proteins-2e4", "--model",
                                   "random-M400", "--memory-limit", "256M", "--json",
                                   "out.json"],
                   "proteins-2e4", "'profile-cuda-task'", "(estimate)",
                   "--memory-limit 256.0 MiB")
    assert "MiB of memory" in line


def test_a_cell_the_run_refuses_is_measured_as_unavailable():
    """A pipeline cell with an uncalibrated model: the run's refusal, not a traceback."""
    from hmmbench.memory_peak import measure
    r = measure("profile", "profile-numpy", "proteins-20000/random-M50/pipeline", "traced")
    assert "calibration" in r["unavailable"], r
