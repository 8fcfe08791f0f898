"""A backend's working memory: each family's estimate (``Backend.memory_need``) against the peak
measured while it runs -- tracemalloc for the NumPy references, the kernel's resident
high-water mark in a process of its own for the OpenCL backends on a CPU device (whose buffers
are host memory) -- on generated sets of several shapes and a real set of mixed lengths; a run
whose estimate is past the limit is refused with one line before anything is allocated; the
NumPy reference runs a large set in pieces of bounded memory with the same results."""
from __future__ import annotations

import os

import numpy as np
import pytest

from hmmbench import memory
from hmmbench.memory import MemoryLimit, MemoryNeed
from hmmbench.memory_peak import in_own_process, traced_peak
from hmmbench.pairhmm import reference
from hmmbench.pairhmm.datasets import synthetic
from hmmbench.pairhmm.datasets.synthetic import generate_fixed
from hmmbench.pairhmm.reference import NumpyBackend
from hmmbench.pairhmm.shape import PairShape
from helpers.hostile_world import RUN, refused, world  # noqa: F401 - world is a fixture
from helpers.gpu_memory import gpu_device_peak
from helpers.paths import REPO

#: (read length, haplotype length, pairs): short and long reads and haplotypes, few and many
#: pairs, a few MiB each; 300x8 falls back to float64 on every pair.
SHAPES = [(16, 16, 6000), (8, 300, 1000), (300, 8, 200), (64, 1024, 200)]


@pytest.mark.parametrize("r,h,n", SHAPES)
@pytest.mark.parametrize("name,precision", [("numpy", "float64"), ("numpy-f32", "float32")])
def test_numpy_estimate_within_one_and_a_half_of_the_peak(name, precision, r, h, n):
    pairs = generate_fixed(r, h, n, 1)
    backend = NumpyBackend(name, precision)
    estimate = backend.memory_need(PairShape.of(pairs)).host
    peak = traced_peak(lambda: backend.run(pairs))
    assert peak <= estimate <= 1.5 * peak, (peak, estimate)


@pytest.mark.parametrize("dataset", ["tiny"])
def test_numpy_estimate_on_mixed_lengths(dataset):
    """A real set of mixed lengths (the 10s set is measured by scripts/memory_ratio.py): every
    group budgeted with its predecessor's arrays; float32 also budgets the float64 recompute of
    pairs that may underflow (none does here), in pieces no larger than its own pass."""
    from hmmbench.pairhmm.datasets import resolve
    for name, precision in (("numpy", "float64"), ("numpy-f32", "float32")):
        pairs = resolve(dataset).load()             # fresh: a call computes its probabilities
        backend = NumpyBackend(name, precision)
        estimate = backend.memory_need(PairShape.of(pairs)).host
        peak = traced_peak(lambda: backend.run(pairs))
        assert peak <= estimate <= 1.5 * peak, (name, peak, estimate)


def test_numpy_runs_large_sets_in_pieces(monkeypatch):
    """Past PIECE_READ_BASES read positions the reference runs piece by piece: the same bits,
    the pieces said in its info, its memory that of one piece (and the estimate follows)."""
    pairs = generate_fixed(16, 16, 8000, 1)
    whole = NumpyBackend("numpy", "float64").run(pairs).log10
    monkeypatch.setattr(reference, "PIECE_READ_BASES", 4096)
    backend = NumpyBackend("numpy", "float64")
    ex = backend.run(pairs)
    assert ex.info["memory_pieces"] == -(-pairs.read_offsets[-1] // 4096)
    assert np.array_equal(ex.log10, whole)
    need = backend.memory_need(PairShape.of(pairs))
    assert f"in {ex.info['memory_pieces']} pieces" in need.note
    peak = traced_peak(lambda: backend.run(pairs))
    assert peak <= need.host <= 1.5 * peak, (peak, need.host)


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="needs Linux's /proc")
@pytest.mark.parametrize("backend,dataset", [
    ("opencl-inter-tile8", "shape-16x1024@8000"),       # row-vector scratch: 100 MB
    ("opencl-intra-naive", "tiny"),                     # mixed lengths, no scratch
])
def test_opencl_cpu_estimate_within_one_and_a_half_of_the_resident_peak(backend, dataset):
    """One call in a process of its own: the growth of the peak resident size (VmHWM) from
    before the backend exists to the end of its first call -- the runtime started, its kernels
    built, its layout and buffers -- against the estimate."""
    env = dict(os.environ)
    # the runtime the constants were fit on, by its platform ("Intel" alone names PoCL on a Xeon)
    env.setdefault("HMMBENCH_OPENCL_DEVICE", "Intel(R) OpenCL")
    # kernels built afresh, as on a new machine: the runtime budget is for that (with PyOpenCL's
    # binary cache hit, the build takes ~130 MiB less and the estimate errs high by as much)
    env["PYOPENCL_NO_CACHE"] = "1"
    r = in_own_process("pairhmm", backend, dataset, "resident", env=env, timeout=300)
    if "unavailable" in r or r["gpu"]:
        pytest.skip(f"no OpenCL CPU device: {r.get('unavailable', 'a GPU')}")
    assert r["device"] == 0                            # a CPU device's buffers are host memory
    assert r["hwm"] / 1.5 <= r["host"] <= 1.5 * r["hwm"], r


def test_refused_before_anything_is_allocated(world, capsys, monkeypatch):
    """Past --memory-limit: one line naming the estimate, the limit, the backend and the
    dataset; exit 2; no result file; the set never generated, the backend never called."""
    monkeypatch.setattr(synthetic, "generate_fixed",
                        lambda *a: pytest.fail("generated a set before the memory check"))
    monkeypatch.setattr(NumpyBackend, "run",
                        lambda *a: pytest.fail("ran a backend before the memory check"))
    line = refused(world, capsys, RUN + ["-d", "equal-512@1e4", "--memory-limit", "64M",
                                         "--json", str(world / "out.json")],
                   "equal-512@1e4", "'numpy'", "(estimate)", "--memory-limit 64.0 MiB")
    shape = PairShape.fixed(512, 512, 2500, 2500, 10 ** 4, 625, 4, 4)
    need = shape.nbytes + NumpyBackend("numpy", "float64").memory_need(shape).host
    assert f"needs about {memory.fmt_bytes(need)} of memory" in line
    assert not (world / "out.json").exists()


def test_a_chunk_set_is_shaped_from_its_plan(monkeypatch):
    """A chunk set's shape comes from its plan of lengths, nothing generated -- the same as
    the loaded set's."""
    from dataclasses import asdict
    from hmmbench.pairhmm.datasets import chunks
    from hmmbench.pairhmm.workload import WORKLOAD
    ds = chunks.chunks_dataset("chunks@3000:seed=2")
    real = chunks.generate_piece
    monkeypatch.setattr(chunks, "generate_piece",
                        lambda *a: pytest.fail("generated a piece for the shape"))
    shape = WORKLOAD.unit_shape(ds, "merged")
    monkeypatch.setattr(chunks, "generate_piece", real)
    loaded = asdict(PairShape.of(ds.load()))
    assert {k: v for k, v in asdict(shape).items() if k in loaded and k not in (
        "held_bytes", "making_bytes")} == {k: v for k, v in loaded.items() if k not in (
            "held_bytes", "making_bytes")}
    assert shape.held == shape.nbytes and shape.making_bytes > shape.nbytes


def test_lazy_set_estimate_within_one_and_a_half_of_the_peak(monkeypatch):
    """A set generated piece by piece, run as the runner runs it (its pieces joined into
    launches of merged:N): the estimate from the plan (the largest unit, the previous one still
    held, a piece at its generation peak) against the peak tracemalloc saw over the run."""
    from hmmbench.pairhmm.datasets import chunks
    from hmmbench.pairhmm.workload import WORKLOAD
    from hmmbench.runner.cell import _CellRunner
    from hmmbench.runner.config import RunConfig
    from hmmbench.runner.memory import cell_need
    monkeypatch.setattr(chunks, "PIECE_PAIRS", 40)
    ds = chunks.LazyChunkDataset.build("chunks", 120, chunks.DEFAULT_CHUNK_PAIRS, 5, True, "")
    assert ds.lazy
    assert len(ds.plan.pieces()) == 2                  # of 90 and 30 pairs
    backend, mode = NumpyBackend("numpy", "float64"), "merged:200"
    shape = WORKLOAD.unit_shape(ds, mode)
    assert shape.pairs == ds.n_pairs and shape.held == 2 * shape.nbytes  # pieces joined
    estimate = cell_need(backend, shape, mode)[0]
    runner = _CellRunner(ds, backend, RunConfig(chunking=mode), None, WORKLOAD.launches, None)

    def run_all():
        for _, _, launches, _ in runner.chunks():
            for launch in launches:
                backend.run(launch)
    peak = traced_peak(run_all)
    assert peak <= estimate <= 1.5 * peak, (peak, estimate)


def test_lazy_set_refused_before_a_piece_is_generated(world, capsys, monkeypatch):
    """A set too large for memory, generated piece by piece: checked like the others, from
    its plan -- refused with one line naming the estimate and the limit, no piece generated."""
    from hmmbench.pairhmm.datasets import chunks
    monkeypatch.setattr(chunks, "generate_piece",
                        lambda *a: pytest.fail("generated a piece before the memory check"))
    line = refused(world, capsys, RUN + ["-d", "chunks@5e6", "--memory-limit", "64M",
                                         "--json", str(world / "out.json")],
                   "chunks@5000000", "'numpy'", "(estimate)", "--memory-limit 64.0 MiB")
    assert "GiB of memory" in line or "MiB of memory" in line
    assert not (world / "out.json").exists()


def _small_lazy_set(monkeypatch):
    """A set generated piece by piece, 6,000 pairs in pieces of about 2,000 (its plan drawn,
    nothing generated)."""
    from hmmbench.pairhmm.datasets import chunks
    monkeypatch.setattr(chunks, "PIECE_PAIRS", 2000)
    ds = chunks.LazyChunkDataset.build("chunks", 6000, chunks.DEFAULT_CHUNK_PAIRS, 5, True, "")
    assert ds.lazy and len(ds.plan.pieces()) == 3
    return ds


def test_a_lazy_sets_check_sample_is_shaped_as_drawn(monkeypatch):
    """The sample the cross-check draws from a unit of a lazy set (each pair alone, its read
    and haplotype copied) is shaped from the plan within 1.5x of the drawn sample's bytes."""
    from hmmbench.pairhmm.workload import WORKLOAD
    from hmmbench.runner.check import sample_indexes
    ds = _small_lazy_set(monkeypatch)
    unit = next(ds.chunks())
    drawn = PairShape.of(unit.subset(sample_indexes(unit.n_pairs, 200, seed=0)), groups=False)
    shape = WORKLOAD.sample_shape(WORKLOAD.unit_shape(ds, "original"), 200)
    assert shape.pairs == drawn.pairs == drawn.batches == 200
    assert drawn.nbytes / 1.5 <= shape.nbytes <= 1.5 * drawn.nbytes, (shape, drawn)
    assert shape.making_bytes > shape.nbytes


def _sample_within_one_and_a_half(name: str, samples: list, k: int, units: list,
                                  warm_up: bool = True) -> None:
    """The reference's estimate on the check's samples of ``k`` pairs (their shapes, nothing
    drawn) against the peak tracemalloc sees while the check draws the sample of a unit (its
    seed: the unit's index) and computes it, the most of any unit: never below, within 1.5x
    (``warm_up``: after a first call on the set, untraced)."""
    from hmmbench.runner.check import sample_indexes
    from hmmbench.runner.memory import sample_need
    ref = NumpyBackend("numpy", "float64")
    estimate = sample_need(ref, samples)[0]
    # the process's one-time allocations (0.6 MiB on tiny's first call), not a call's
    if warm_up:
        ref.run(units[0].subset(sample_indexes(units[0].n_pairs, k, seed=0)))
    peak = max(traced_peak(lambda: ref.run(u.subset(sample_indexes(u.n_pairs, k, seed=ci))))
               for ci, u in enumerate(units))
    assert peak <= estimate <= 1.5 * peak, (name, k, peak, estimate)


#: The check's sample sizes measured: small ones (a group of a few pairs, the fixed parts of a
#: call and of drawing) and the usual.
SAMPLE_SIZES = (20, 50, 200)


@pytest.mark.parametrize("name", ["tiny", "10s", "shape-300x8@2000"])
def test_a_check_samples_reference_is_estimated_within_one_and_a_half(name):
    """A sampled check (a set past the full check's cells) of 20, 50 and 200 pairs, shaped as
    the run's memory check shapes it -- a file set's sample as drawn from the loaded set, a
    generated set of one length from its name: never below the traced peak, within 1.5x (the
    set's groups cut evenly to the sample's size were 0.89x at 20 pairs of 10s, 1.55x at 50)."""
    from hmmbench.pairhmm.datasets import resolve
    from hmmbench.pairhmm.workload import WORKLOAD
    ds = resolve(name)
    for k in SAMPLE_SIZES:
        samples = WORKLOAD.sample_shapes(ds, "original", k)
        assert (samples is None) == (ds.kind == "synthetic")
        samples = samples or [WORKLOAD.sample_shape(WORKLOAD.unit_shape(ds, "original"), k)]
        _sample_within_one_and_a_half(name, samples, k, [ds.load()], k == SAMPLE_SIZES[0])


def test_a_lazy_sets_check_samples_are_found_in_its_plan(monkeypatch):
    """Each unit's check sample of a set generated piece by piece, found in the set's plan of
    lengths as the check draws it (nothing generated), is the drawn sample's shape exactly --
    in the runner's units and in a sharded run's (pieces joined two at a time) -- and the
    reference's estimate on it is within 1.5x of the traced peak of drawing and computing it,
    never below (4.5x at 200 pairs when the sample was shaped from the unit's groups; shaped
    from the plan's first pieces it was 0.83x on a unit unlike them)."""
    from hmmbench.cluster.shards import joined
    from hmmbench.pairhmm.datasets import chunks
    from hmmbench.pairhmm.workload import WORKLOAD
    from hmmbench.runner.check import sample_indexes
    monkeypatch.setattr(chunks, "PIECE_PAIRS", 2000)
    monkeypatch.setattr(chunks.iter_pieces, "__defaults__", (None,))
    ds = chunks.LazyChunkDataset.build("chunks", 4000, chunks.DEFAULT_CHUNK_PAIRS, 5, True, "")
    monkeypatch.setattr(chunks, "generate_piece", _no_pieces(chunks.generate_piece))
    samples = {k: WORKLOAD.sample_shapes(ds, "original", k) for k in SAMPLE_SIZES}
    doubled = WORKLOAD.sample_shapes(ds, "original", 150, join=2)
    _no_pieces.allowed = True
    units = list(ds.chunks())
    assert len(units) == 2 and len(np.unique(units[0].read_lengths)) > 10
    for ci, (unit, shape) in enumerate(zip(units, samples[200])):
        assert shape == _drawn(unit, sample_indexes(unit.n_pairs, 200, seed=ci))
    both = next(joined(iter(units), 2))
    assert doubled == [_drawn(both, sample_indexes(both.n_pairs, 300, seed=0))]
    for k in SAMPLE_SIZES:                # the smaller samples on the first unit (0.8 s a call)
        n = len(units) if k == max(SAMPLE_SIZES) else 1
        _sample_within_one_and_a_half(ds.name, samples[k][:n], k, units[:n], k == SAMPLE_SIZES[0])


def _drawn(unit, idx):
    """The shape the reference's estimate reads of a drawn sample, as sample_shapes gives it."""
    from dataclasses import replace
    shape = PairShape.of(unit.subset(idx))
    rows = max(len(unit.read_lengths), len(unit.hap_lengths))
    return replace(shape, making_bytes=shape.nbytes + 16 * (shape.read_bases + shape.hap_bases)
                   + 8 * rows)


def _no_pieces(generate):
    """generate_piece refused until ``_no_pieces.allowed`` (nothing generated for a shape)."""
    _no_pieces.allowed = False

    def guarded(*a, **kw):
        assert _no_pieces.allowed, "generated a piece to shape a sample"
        return generate(*a, **kw)
    return guarded


@pytest.mark.parametrize("mode", ["original", "merged:6000"])
def test_a_lazy_sets_reference_is_budgeted_on_its_sample(monkeypatch, mode):
    """The cross-check of a lazy set computes the reference on a sample of each unit (its
    sample_pairs items per piece joined), not on the unit: budgeted on that, a run whose
    budget on the whole unit was past the limit fits; past the sample's budget it is still
    refused, naming the reference, the estimate and the limit. Nothing is generated."""
    from hmmbench.errors import UserError
    from hmmbench.pairhmm.datasets import chunks
    from hmmbench.pairhmm.workload import WORKLOAD
    from hmmbench.runner.benchmark import Cell
    from hmmbench.runner.config import RunConfig
    from hmmbench.runner.memory import cell_need, check_memory, reference_need
    ds = _small_lazy_set(monkeypatch)
    monkeypatch.setattr(chunks, "generate_piece",
                        lambda *a: pytest.fail("generated a piece for the memory check"))
    cfg = RunConfig(chunking=mode, sample_pairs=600)    # a sample larger than the launch
    backend, reference = NumpyBackend("numpy-f32", "float32"), NumpyBackend("numpy", "float64")
    shape = WORKLOAD.unit_shape(ds, mode)
    assert shape.pieces == (3 if mode.startswith("merged") else 1)
    whole = cell_need(reference, shape, "merged")[0]           # the reference on the whole unit
    sample = reference_need(WORKLOAD, ds, reference, shape, cfg, mode)[0]
    own = cell_need(backend, shape, mode)[0]
    assert max(own, sample) < whole
    cells = [Cell(ds, mode, backend)]
    check_memory(cells, cfg, MemoryLimit((max(own, sample) + whole) // 2, "test"))
    if mode != "original":
        return                      # a launch of the whole unit: the backend's own need is more
    assert own < sample
    with pytest.raises(UserError) as err:
        check_memory(cells, cfg, MemoryLimit(sample - 1, "the limit here"))
    assert f"on backend 'numpy': needs about {memory.fmt_bytes(sample)}" in str(err.value)
    assert "the limit here" in str(err.value)


def test_the_limit_defaults_to_the_memory_available_now(world, capsys, monkeypatch):
    monkeypatch.setattr(memory, "available_memory", lambda: 8 << 20)
    refused(world, capsys, RUN + ["-d", "equal-64@1e4"], "equal-64@1e4",
            "the memory available now, 8.0 MiB")


@pytest.mark.parametrize("size", ["lots", "0", "-1G", "1Q", "1e3"])
def test_a_memory_limit_that_is_no_size_is_refused(world, capsys, size):
    refused(world, capsys, RUN + ["-d", "equal-8@16", f"--memory-limit={size}"],
            "--memory-limit", size)


def test_a_gpu_backend_past_its_free_device_memory_is_refused():
    """The device part of an estimate is checked against the device's free memory."""
    from hmmbench.dataset import Dataset
    from hmmbench.errors import UserError
    from hmmbench.runner.benchmark import Cell
    from hmmbench.runner.config import RunConfig
    from hmmbench.runner.memory import check_memory

    class SmallGPU(NumpyBackend):
        api = "cuda"

        def memory_need(self, shape) -> MemoryNeed:
            return MemoryNeed(host=1 << 20, device=3 << 30)

        def device_memory_free(self):
            return 2 << 30

    ds = synthetic.synthetic_dataset("equal-64@1000")
    assert isinstance(ds, Dataset)
    cell = Cell(ds, "merged", SmallGPU("small-gpu", "float32"))
    with pytest.raises(UserError) as err:
        check_memory([cell], RunConfig(), MemoryLimit(64 << 30, "test"))
    assert "small-gpu" in str(err.value) and "3.0 GiB of device memory" in str(err.value)
    assert "the device's free memory, 2.0 GiB" in str(err.value)


def test_a_cuda_backend_past_the_device_memory_limit_is_refused(world, capsys, monkeypatch):
    """--device-memory-limit (the device's part, on a machine without a GPU too): a CUDA
    backend whose estimated device need is more is refused through the command line, one line
    naming the estimate and the limit, exit 2, no result file, nothing generated; a limit that
    is no size is refused as --memory-limit's is."""
    from hmmbench.pairhmm.workload import WORKLOAD
    from hmmbench.registry import select
    from hmmbench.runner.memory import cell_need
    monkeypatch.setattr(synthetic, "generate_fixed",
                        lambda *a: pytest.fail("generated a set before the memory check"))
    gpu = select(["cuda-inter-tile8"], "pairhmm")[0]
    shape = WORKLOAD.unit_shape(synthetic.synthetic_dataset("equal-64@1e4"), "merged")
    device = cell_need(gpu, shape, "merged")[1]
    assert device > 1 << 20
    line = refused(world, capsys, ["run", "-b", "cuda-inter-tile8", "-d", "equal-64@1e4",
                                   "--device-memory-limit", "1M", "--memory-limit", "64G",
                                   "--json", str(world / "out.json")],
                   "equal-64@1e4", "'cuda-inter-tile8'", "of device memory (estimate)",
                   "--device-memory-limit 1.0 MiB")
    assert f"needs about {memory.fmt_bytes(device)} of device memory" in line
    assert not (world / "out.json").exists()
    refused(world, capsys, RUN + ["-d", "equal-8@16", "--device-memory-limit=lots"],
            "--device-memory-limit", "lots")


def _gpu_peaks(header: str = "| cell | backend | resident peak | estimate / peak |"):
    """The peaks a table of docs/working-memory.md quotes from an H200 (cell, backend, MiB): the
    CUDA host peaks, or with ``header`` another table of the same columns."""
    text = (REPO / "docs" / "working-memory.md").read_text()
    rows = text.split(header, 1)[1].split("\n\n")[0]
    out = []
    for line in rows.splitlines()[2:]:
        cell, backends, peaks, _ = [c.strip(" `") for c in line.strip("|").split("|")]
        cell = "/".join(x.strip(" `") for x in cell.split(" x "))
        names = backends.split(" / ")
        names = [names[0]] + [names[0].rsplit("-", 1)[0] + n for n in names[1:]]
        for name, mib in zip(names, peaks.replace("MiB", "").split(" / ")):
            out.append((cell, name, float(mib)))
    return out


@pytest.mark.parametrize("cell,name,peak_mib", _gpu_peaks())
def test_cuda_host_estimate_within_one_and_a_half_of_the_measured_peak(cell, name, peak_mib):
    """The estimate the run's check makes (no GPU needed) against the peak measured on a GPU."""
    from hmmbench.registry import select
    from hmmbench.workload import get
    workload = "profile" if cell.count("/") == 2 else "pairhmm"
    _, shape, _ = get(workload).measured_unit(cell)
    estimate = select([name], workload)[0].memory_need(shape).host / 2**20
    assert peak_mib / 1.5 <= estimate <= 1.5 * peak_mib, (estimate, peak_mib)


DEVICE_PEAKS = "| cell | backend | device peak | estimate / peak |"


def _named_shape(workload: str, cell: str):
    """The shape the run's check reads: a generated cell's from its name (nothing generated), a
    file set's from the loaded set."""
    if workload == "pairhmm":
        from hmmbench.pairhmm.datasets.synthetic import synthetic_dataset
        from hmmbench.pairhmm.workload import WORKLOAD
        if not any(cell.startswith(p) for p in ("equal-", "shape-")):
            return WORKLOAD.measured_unit(cell)[1]
        return WORKLOAD.unit_shape(synthetic_dataset(cell), "merged")
    from hmmbench.profile import datasets as pds
    from hmmbench.profile.shape import ProfileShape
    db, models, kind = cell.split("/")
    M = max(int(m.split(":")[0].rsplit("M", 1)[1]) for m in models.split("+"))
    return ProfileShape.generated(int(pds.resolve_database(db).n_cells), M, kind,
                                  len(models.split("+")))


def test_cuda_device_estimate_within_one_and_a_half_of_the_measured_device_peak():
    """The CUDA device estimates the run's check makes (no GPU needed) against the device peaks
    measured on an H200 that docs/working-memory.md quotes: never below, within 1.5x."""
    from hmmbench.registry import select
    rows = _gpu_peaks(DEVICE_PEAKS)
    assert len(rows) >= 30
    for cell, name, peak_mib in rows:
        workload = "profile" if cell.count("/") == 2 else "pairhmm"
        estimate = select([name], workload)[0].memory_need(_named_shape(workload, cell)).device
        assert peak_mib <= estimate / 2**20 <= 1.5 * peak_mib, (cell, name, estimate, peak_mib)


def _short_and_long_reads():
    """19,500 pairs of 40-base reads and 500 of 200-base reads, every haplotype 300 long."""
    from hmmbench.pairhmm.model import PairSet
    return PairSet.concatenate([generate_fixed(40, 300, 19500, 1),
                                generate_fixed(200, 300, 500, 2)])


def test_a_shape_counts_the_pairs_whose_read_is_longer_than_a_strip():
    """Exact for a loaded set; all or none for a generated set of one length (from its name);
    a part of a set (a launch of merged:N, a recompute's piece) at most its own pairs, its
    long pairs possibly all in it. (A chunk set's, from its plan, is the loaded set's:
    test_a_chunk_set_is_shaped_from_its_plan.)"""
    from hmmbench.pairhmm.workload import WORKLOAD
    shape = PairShape.of(_short_and_long_reads())
    assert shape.pairs_longer_than(64) == shape.pairs_longer_than(199) == (500, 500 * 300)
    assert shape.pairs_longer_than(39) == (20000, 20000 * 300)
    assert shape.pairs_longer_than(200) == (0, 0)
    launch = shape.launch("merged:100")
    assert 100 <= launch.pairs < 500 and launch.pairs_longer_than(64) == (launch.pairs,
                                                                          launch.pairs * 300)
    named = WORKLOAD.unit_shape(synthetic.synthetic_dataset("equal-64@1000"), "merged")
    assert named.pairs_longer_than(63) == (1000, 64000) and named.pairs_longer_than(64) == (0, 0)


@pytest.mark.parametrize("name", ["cuda-intra-naive", "cuda-intra-tile2", "cuda-multiwarp"])
def test_wavefront_passes_are_budgeted_for_the_reads_longer_than_a_strip(name):
    """Mostly short reads (40) and a few long ones (200): the intra-task kernels keep passes in
    global memory for the long ones only (a strip of 64 or 128 rows), multi-warp (32 rows) for
    every pair. The device estimate is never below the pages of the buffers its float32 pass
    allocates (the kernel's own layout, no GPU needed), within 1.5x (the float64 recompute is
    budgeted on top: a quarter of the pairs, as many of them long as there are)."""
    from hmmbench.apis.cuda import device_pages
    from hmmbench.registry import select
    pairs = _short_and_long_reads()
    backend = select([name], "pairhmm")[0]
    layout = backend.layout(pairs)
    long_pairs = int((pairs.pair_read_lengths > backend.strip_rows).sum())
    assert layout.scratch["pass_m"] == 4 * 300 * long_pairs
    allocated = device_pages([a.nbytes for a in layout.arrays.values()]
                             + list(layout.scratch.values()) + [4 * layout.n_slots])
    estimate = backend.memory_need(PairShape.of(pairs)).device
    assert allocated <= estimate <= 1.5 * allocated, (allocated, estimate)


@pytest.mark.parametrize("backend,cell", [
    ("cuda-inter-tile8", "equal-512@20000"), ("cuda-intra-naive", "equal-512@20000"),
    ("cuda-warp", "equal-512@20000"), ("cuda-subwarp", "equal-512@20000"),
    ("opencl-intra-naive", "equal-512@20000"), ("cuda-inter-tile8", "10s"),
    ("cuda-warp", "10s"), ("cuda-subwarp", "10s")])
def test_gpu_device_estimate_within_one_and_a_half_of_the_device_peak(backend, cell):
    """One call in a process of its own on a GPU (OpenCL: NVIDIA's): the most the device's free
    memory fell, from before the backend exists to the end of its first call, against the
    device estimate (the buffers in CUDA's pages; OpenCL: the driver's context)."""
    env = dict(os.environ, HMMBENCH_OPENCL_DEVICE="NVIDIA")
    r = gpu_device_peak("pairhmm", backend, cell, env)
    assert r["gpu"], r
    assert r["device_peak"] <= r["device"] <= 1.5 * r["device_peak"], r
