"""Shard mode's memory check of a set generated piece by piece, before anything is generated or
placed: each worker's shards, found from the set's plan as the worker cuts them, against the
worker's memory limit (hmmbench.cluster.memory)."""
from __future__ import annotations

from typing import Optional

import pytest

from hmmbench import workload
from hmmbench.cluster import worker
from hmmbench.cluster.memory import check_client, check_shards, plan_shards
from hmmbench.errors import UserError
from hmmbench.pairhmm.datasets import chunks
from hmmbench.pairhmm.reference import NumpyBackend
from hmmbench.pairhmm.shape import PairShape
from hmmbench.runner.config import RunConfig
from helpers.hostile_world import RUN, refused, world  # noqa: F401 - world is a fixture

PAIRHMM = workload.get("pairhmm")


def _pieces_of(monkeypatch, pairs: int) -> None:
    """Chunk sets cut into pieces of about ``pairs`` pairs, in the plan and as generated
    (iter_pieces' default piece size is the module's PIECE_PAIRS again, whatever an earlier
    test left there)."""
    monkeypatch.setattr(chunks, "PIECE_PAIRS", pairs)
    monkeypatch.setattr(chunks.iter_pieces, "__defaults__", (None,))


@pytest.fixture
def lazy_set(monkeypatch):
    """7,000 pairs in pieces of about 1,000 (7 or 8 pieces), generated piece by piece."""
    _pieces_of(monkeypatch, 1000)
    ds = chunks.LazyChunkDataset.build("chunks", 7000, chunks.DEFAULT_CHUNK_PAIRS, 3, True, "")
    assert ds.lazy and len(ds.plan.pieces()) > 4
    return ds


@pytest.mark.parametrize("n, k", [(2, 1), (3, 2)])
def test_a_workers_shards_are_planned_as_it_cuts_them(lazy_set, monkeypatch, n, k):
    """The shards each worker keeps (load_part, run here) have the bytes the plan says, and
    their largest is no larger than the planned largest."""
    monkeypatch.setattr(worker, "rebuild", lambda spec: lazy_set)
    planned = plan_shards(PAIRHMM, lazy_set, n, k)
    for i, mine in enumerate(planned):
        part = worker.load_part({"workload": "pairhmm"}, i, n, k, {})
        shapes = [PairShape.of(u, groups=False) for shards in part for u in shards]
        assert mine.held == sum(s.nbytes for s in shapes)
        assert mine.units == len(part)
        assert max(s.read_bases for s in shapes) <= mine.largest.read_bases
        assert max(s.pairs for s in shapes) <= mine.largest.pairs
        for rows in (16, 64, 128):
            most = mine.largest.pairs_longer_than(rows)
            assert all(a <= b for s in shapes for a, b in zip(s.pairs_longer_than(rows), most))
        assert mine.making > mine.held - sum(s.nbytes for s in shapes[-k:])


def test_making_a_workers_shards_is_estimated_within_one_and_a_half(monkeypatch):
    """What a worker holds while it makes its shards (every piece generated, joined and cut,
    its shards kept), from the plan, against the peak tracemalloc sees in load_part."""
    from hmmbench.memory_peak import traced_peak
    _pieces_of(monkeypatch, 10_000)
    ds = chunks.LazyChunkDataset.build("chunks", 50_000, chunks.DEFAULT_CHUNK_PAIRS, 3, True, "")
    monkeypatch.setattr(worker, "rebuild", lambda spec: ds)
    estimate = plan_shards(PAIRHMM, ds, 2, 1)[0].making
    peak = traced_peak(lambda: worker.load_part({"workload": "pairhmm"}, 0, 2, 1, {}))
    assert peak <= estimate <= 1.5 * peak, (peak, estimate)


class _Session:
    """What check_shards reads of a shard-mode session: its workers, their limits and names."""
    workload = PAIRHMM

    def __init__(self, limits: list, per_worker: int = 1, cannot: Optional[dict] = None):
        self.memory_limits = {f"w{i}": limit for i, limit in enumerate(limits)}
        self.capable = list(self.memory_limits)
        self.per_worker = per_worker
        self.cannot = cannot or {}                # backend name -> workers that cannot run it
        self.probes: dict = {}                    # what the workers' probes found

    def workers_for(self, name: str, n: int) -> list:
        return [w for w in self.capable if w not in self.cannot.get(name, ())][:n]

    def label(self, w: str) -> str:
        return f"{w}@here"


def test_a_workers_shards_past_its_limit_are_refused_before_any_piece(lazy_set, monkeypatch):
    """Past one worker's limit, at any of the scaling study's counts: one line naming the
    dataset, backend, worker, its shards, the estimate and the limit; nothing generated.
    Within every limit, nothing is refused; a worker without a limit is not checked."""
    monkeypatch.setattr(chunks, "generate_piece",
                        lambda *a: pytest.fail("generated a piece before the memory check"))
    b, cfg = NumpyBackend("numpy", "float64"), RunConfig(chunking="original")
    need = {n: [s.need(b, "original")[0] for s in plan_shards(PAIRHMM, lazy_set, n, 1)]
            for n in (1, 2)}
    assert max(need[2]) < min(need[1])                       # more workers, smaller shares
    fits = max(need[1])
    check_shards(_Session([fits, fits]), [1, 2], [b], [lazy_set], cfg)
    check_shards(_Session([None, max(need[2])]), [2], [b], [lazy_set], cfg)
    with pytest.raises(UserError) as err:
        check_shards(_Session([fits, need[2][1] - 1]), [1, 2], [b], [lazy_set], cfg)
    line = str(err.value)
    assert "\n" not in line
    for part in (f"dataset '{lazy_set.name}' on backend 'numpy' over 2 workers",
                 "worker w1@here (shard 2 of 2 of each of",
                 "(estimate from the set's plan", "the worker's memory limit"):
        assert part in line, line
    halves = plan_shards(PAIRHMM, lazy_set, 1, 2)[0].need(b, "original")[0]
    with pytest.raises(UserError) as err:
        check_shards(_Session([halves - 1] * 2, 2), [1, 2], [b], [lazy_set], cfg)
    assert "over 1 workers: worker w0@here (shards 1-2 of 2 of each" in str(err.value)


def test_a_cells_call_on_the_largest_shard_is_estimated_once(lazy_set, monkeypatch):
    """Every worker's call is budgeted on the same largest shard: its estimate is asked once
    per cell and worker count, however many workers, and the check refuses as before."""
    from hmmbench.runner import memory as runner_memory
    asked = []
    real = runner_memory.cell_need

    def counted(backend, shape, mode):
        asked.append(id(shape))
        return real(backend, shape, mode)
    monkeypatch.setattr(runner_memory, "cell_need", counted)
    b, cfg = NumpyBackend("numpy", "float64"), RunConfig(chunking="original")
    shards = plan_shards(PAIRHMM, lazy_set, 3, 1)
    check_shards(_Session([max(s.need(b, "original")[0] for s in shards)] * 3), [3], [b],
                 [lazy_set], cfg)
    assert len(asked) == 3 + 1                   # the three need() calls above, then one
    with pytest.raises(UserError):
        check_shards(_Session([shards[2].need(b, "original")[0] - 1] * 3), [3], [b],
                     [lazy_set], cfg)


def test_a_worker_in_two_backends_sets_holds_its_shards_of_both(lazy_set, monkeypatch):
    """Two backends on different worker sets (w0 cannot run numpy): the dataset's shards are
    placed on each set and kept until the next dataset, so w1 -- shard 2 of the active set
    (numpy-f32's), shard 1 of numpy's -- holds both at once: numpy's call on it is budgeted
    beside its shards of the other set (one line naming w1 and the other set past the limit;
    each set's need alone is below it). On one set, the two backends share one placement."""
    monkeypatch.setattr(chunks, "generate_piece",
                        lambda *a: pytest.fail("generated a piece before the memory check"))
    cfg = RunConfig(chunking="original")
    b32, b64 = NumpyBackend("numpy-f32", "float32"), NumpyBackend("numpy", "float64")
    shards = plan_shards(PAIRHMM, lazy_set, 2, 1)
    alone = max(shards[1].need(b32, "original")[0], shards[0].need(b64, "original")[0])
    both = shards[1].held + shards[0].need(b64, "original")[0]
    assert shards[1].held > 0 and both > alone
    split = {"numpy": ("w0",)}
    one_set = max(s.need(b, "original")[0] for s in shards for b in (b32, b64))
    check_shards(_Session([one_set] * 3), [2], [b32, b64], [lazy_set], cfg)
    check_shards(_Session([None, both, None], cannot=split), [2], [b32, b64], [lazy_set], cfg)
    with pytest.raises(UserError) as err:
        check_shards(_Session([None, both - 1, None], cannot=split), [2], [b32, b64],
                     [lazy_set], cfg)
    line = str(err.value)
    assert "\n" not in line and both - 1 >= alone
    for part in ("on backend 'numpy' over 2 workers: worker w1@here (shard 1 of 2",
                 "beside its shards of the same set on 1 other worker set",
                 "the worker's memory limit"):
        assert part in line, line


def test_a_workers_call_is_budgeted_beside_every_part_it_holds(lazy_set, monkeypatch):
    """On the worker, once placed: a call is checked against the worker's limit on its shards
    and the backend's call, beside every other placement's shards the worker holds now (a
    dataset on two worker sets); a placement let go no longer counts."""
    import gc
    monkeypatch.setattr(worker, "rebuild", lambda spec: lazy_set)
    b = NumpyBackend("numpy-f32", "float32")
    mine = worker.load_part({"workload": "pairhmm"}, 1, 2, 1, {})
    assert all(worker.memory_refusal(mine, p, 0, b, "original", 1 << 40) is None
               for p in range(len(mine)))
    alone = max(mine.checked.values())             # each call's estimate, this Part alone
    assert all(worker.memory_refusal(mine, p, 0, b, "original", alone) is None
               for p in range(len(mine)))
    other = worker.load_part({"workload": "pairhmm"}, 0, 2, 1, {})
    assert other.held is None and worker.resident(mine) == [mine, other]
    reasons = [worker.memory_refusal(mine, p, 0, b, "original", alone)
               for p in range(len(mine))]
    assert other.held > 0 and any(reasons)
    line = next(r for r in reasons if r)
    assert "and its shards of 1 other placement of a dataset" in line and "\n" not in line
    del other
    gc.collect()
    assert worker.resident(mine) == [mine]
    assert worker.memory_refusal(mine, 0, 0, b, "original", alone) is None


def test_a_gpu_backends_device_need_is_checked_from_the_plan(lazy_set, monkeypatch):
    """A CUDA backend's call on the largest planned shard needs device memory: checked before
    anything is placed against the worker's device -- --device-memory-limit (a figure given
    on a machine without a GPU), or what the worker's probe found free, the less -- one line
    naming the worker, the estimate and the limit; at the need itself, it fits."""
    from hmmbench.memory import MemoryLimit
    from hmmbench.registry import select
    from hmmbench.runner.memory import cell_need
    monkeypatch.setattr(chunks, "generate_piece",
                        lambda *a: pytest.fail("generated a piece before the memory check"))
    cfg = RunConfig(chunking="original")
    gpu = select(["cuda-inter-tile8"], "pairhmm")[0]
    largest = plan_shards(PAIRHMM, lazy_set, 2, 1)[0].largest
    device = cell_need(gpu, largest, "original")[1]
    assert device > 0
    check_shards(_Session([None] * 2), [2], [gpu], [lazy_set], cfg,
                 limit=MemoryLimit(None, "", device=device))
    with pytest.raises(UserError) as err:
        check_shards(_Session([None] * 2), [2], [gpu], [lazy_set], cfg,
                     limit=MemoryLimit(None, "", device=device - 1))
    line = str(err.value)
    for part in ("dataset '" + lazy_set.name + "' on backend 'cuda-inter-tile8' over 2 workers",
                 "worker w0@here's call on the largest shard needs about",
                 "of device memory (estimate from the set's plan)",
                 "--device-memory-limit"):
        assert part in line, line
    probed = _Session([None] * 2)
    probed.probes = {"w1": {"backends": {"cuda-inter-tile8": {"device_free": device - 1}}}}
    with pytest.raises(UserError) as err:
        check_shards(probed, [2], [gpu], [lazy_set], cfg, limit=MemoryLimit(None, "", device << 1))
    assert "worker w1@here's call" in str(err.value)
    assert "the device's free memory on worker w1@here" in str(err.value)


def test_the_clients_cross_check_is_budgeted_on_what_it_holds(lazy_set, monkeypatch):
    """The client computes the cross-check's reference: on a lazy set's sample fetched from
    the workers (sample_pairs items of each of the n pieces a call joins), nothing else held
    here; on a set that fits in memory, as a single-process run budgets it. Past the client's
    limit: the one-line refusal naming the reference and the limit."""
    from hmmbench.memory import MemoryLimit
    from hmmbench.pairhmm.datasets import synthetic
    from hmmbench.runner.memory import cell_need, reference_need, sample_need
    monkeypatch.setattr(chunks, "generate_piece",
                        lambda *a: pytest.fail("generated a piece before the memory check"))
    cfg, ref = RunConfig(chunking="original", sample_pairs=100), NumpyBackend("numpy", "float64")
    units = PAIRHMM.planned_units(lazy_set, 2)
    unit = units.shape([(u, 0, len(units.costs(u))) for u in range(len(units.units))], True)
    samples = PAIRHMM.sample_shapes(lazy_set, "original", 100, join=2)
    assert len(samples) == len(units.units) and {s.pairs for s in samples} == {200}
    sample = sample_need(ref, samples)[0]
    assert sample < cell_need(ref, unit, "merged")[0]
    check_client(_Session([None] * 2), [2], [lazy_set], cfg, MemoryLimit(sample, "test"))
    with pytest.raises(UserError) as err:
        check_client(_Session([None] * 2), [1, 2], [lazy_set], cfg,
                     MemoryLimit(sample - 1, "the client's limit"))
    assert f"dataset '{lazy_set.name}' on backend 'numpy': needs about" in str(err.value)
    assert "the client's limit" in str(err.value)
    eager = synthetic.synthetic_dataset("equal-64@1000")
    need = reference_need(PAIRHMM, eager, ref, PAIRHMM.unit_shape(eager, "original"), cfg)[0]
    check_client(_Session([None]), [1], [eager], cfg, MemoryLimit(need, "test"))
    with pytest.raises(UserError):
        check_client(_Session([None]), [1], [eager], cfg, MemoryLimit(need - 1, "test"))


def test_a_shard_run_past_a_workers_limit_ends_before_anything_is_placed(world, capsys,
                                                                         monkeypatch):
    """Through the command line, on a scheduler whose workers have a memory limit: one line,
    exit 2, no result file, no piece generated (the workers run in this process)."""
    distributed = pytest.importorskip("distributed", reason="pip install 'hmmbench[dask]'")
    import dask
    monkeypatch.setattr(chunks, "generate_piece",
                        lambda *a: pytest.fail("generated a piece before the memory check"))
    _pieces_of(monkeypatch, 1000)                        # a small set, only generated lazily
    monkeypatch.setattr(chunks, "EAGER_LIMIT", 1000)
    # the workers run in this process: a nanny started earlier in it (another test's cluster)
    # left Dask's allocator setting in its environment, which the run would rightly warn of
    monkeypatch.delenv("MALLOC_TRIM_THRESHOLD_", raising=False)
    # the limit is only read: Dask must not pause or spill this process's workers for it
    with dask.config.set({"distributed.worker.memory.target": False,
                          "distributed.worker.memory.spill": False,
                          "distributed.worker.memory.pause": False,
                          "distributed.worker.memory.terminate": False}), \
            distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                     memory_limit="1MiB", dashboard_address=":0",
                                     protocol="tcp") as c:
        refused(world, capsys, RUN + ["-d", "chunks@7000", "--cluster", c.scheduler_address,
                                      "--json", str(world / "out.json")],
                "dataset 'chunks@7000' on backend 'numpy' over 2 workers", "(estimate",
                "the worker's memory limit, 1.0 MiB")
    assert not (world / "out.json").exists()
