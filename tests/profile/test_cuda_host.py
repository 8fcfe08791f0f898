"""Host code of the CUDA profile backends without a GPU (hmmbench.profile.device.cuda with stand-ins
for the driver): the threaded staging copies and the generic Forward's resident length model."""
import copy
import ctypes

import numpy as np
import pytest

pytest.importorskip("pyhmmer")

from hmmbench.backend import StageClock  # noqa: E402
from hmmbench.profile import datasets  # noqa: E402
from hmmbench.profile.device import cuda as pcuda, cuda_resident  # noqa: E402
from hmmbench.profile.model import SequenceSet  # noqa: E402
from hmmbench.profile.device.resident import ResidentCache  # noqa: E402


@pytest.mark.parametrize("size", [0, 1, (1 << 20) - 1, 1 << 20, 5_000_003])
@pytest.mark.parametrize("threads", [1, 3, 8])
def test_fill_copies_every_byte(size, threads):
    src = np.random.default_rng(size).integers(0, 256, size).astype(np.uint8)
    dst = np.zeros(size + 10, np.uint8)
    cuda_resident.fill(dst[:size], src, threads)
    assert (dst[:size] == src).all() and not dst[size:].any()


@pytest.mark.parametrize("threads", [1, 3, 8])
def test_fill_converts_in_slices(threads):
    """The scores' float64 copy out of the page-locked float32 buffer, in slices: every value
    converted, nothing past the end written."""
    src = np.random.default_rng(threads).standard_normal(555_823).astype(np.float32)
    src[::1000] = np.nan
    dst = np.zeros(src.size + 5)
    cuda_resident.fill(dst[:src.size], src, threads)
    assert np.array_equal(dst[:src.size], src.astype(np.float64), equal_nan=True)
    assert not dst[src.size:].any()


class HostMemory(np.ndarray):
    """A stand-in device allocation: host bytes whose int() is their address, as pycuda's."""

    def __int__(self):
        return self.ctypes.data


def read(ptr, nbytes: int, dtype) -> np.ndarray:
    """The bytes at a stand-in device address as an array."""
    return np.frombuffer((ctypes.c_uint8 * nbytes).from_address(int(ptr)), dtype).copy()


class HostDriver:
    """pycuda.driver's calls of the CUDA profile device: device memory is host memory, uploads
    (blocking or enqueued) counted by size, enqueued copies done at once."""

    def __init__(self):
        self.uploads = []

    def to_device(self, arr):
        self.uploads.append(arr.nbytes)
        return np.array(arr)

    def mem_alloc(self, nbytes):                   # 256-byte aligned, as cuMemAlloc's
        raw = np.zeros(nbytes + 256, np.uint8)
        skip = -raw.ctypes.data % 256
        return raw[skip:skip + nbytes].view(HostMemory)

    def pagelocked_empty(self, n, dtype):
        return np.empty(n, dtype)

    def memcpy_htod_async(self, dst, src, stream=None):
        self.uploads.append(src.nbytes)
        ctypes.memmove(int(dst), src.ctypes.data, src.nbytes)

    def memcpy_dtoh(self, dst, src):
        dst[:] = src.view(dst.dtype)[:dst.size]


def test_generic_forward_reads_the_length_model_the_database_carries(monkeypatch):
    """The resident database carries the Forward's loop/move per sequence (hmmsearch's nj): a
    run passes those device arrays to the kernel and uploads none of its own; a model with
    another nj uploads its own. Either way the kernel sees the model's specials per sequence."""
    from hmmbench.apis import cuda as glue
    drv, seen = HostDriver(), {}

    class Module:
        def get_function(self, name):
            def kernel(*args, **kw):
                seen["loop"], seen["move"] = args[7], args[8]
            return kernel
    monkeypatch.setattr(glue, "driver", lambda: drv)
    monkeypatch.setattr(glue, "compile", lambda *a, **kw: Module())
    rng = np.random.default_rng(1)
    L = rng.integers(1, 3000, 500)
    offs = np.zeros(L.size + 1, np.int64)
    np.cumsum(L, out=offs[1:])
    seqs = SequenceSet([str(i) for i in range(L.size)], np.zeros(offs[-1], np.uint8), offs)
    cache = ResidentCache(lambda arrays, later: ({**arrays, **later()}, {"h2d": 0.0}),
                          cuda_resident.resident_specials)
    db, _ = cache.get_seqs(seqs, "db")
    model = datasets.resolve_model("query-M100").load()[0]
    other = copy.copy(model)
    other.nj = 2.0
    for m, resident in ((model, True), (other, False)):
        drv.uploads.clear()
        pcuda.generic_scores(db, m, db.order, 10, True, StageClock(), StageClock())
        assert (seen["loop"] is db.buffers["loop"]) == resident
        assert len(drv.uploads) == 3 + 2 * (not resident)   # tables (+ loop and move)
        for got, want in zip((seen["loop"], seen["move"]), m.specials(L)):
            assert (got.view(np.int32) == want.view(np.int32)).all()


def test_layout_computed_while_the_residues_are_copied():
    """The resident load's layout runs beside the residues' copy: "prep" is only the time the
    copies waited for it (a slow layout behind a quick copy: most of it; behind a slow copy:
    none), "h2d" the rest of the load."""
    import time
    L = np.arange(1, 200)
    offs = np.zeros(L.size + 1, np.int64)
    np.cumsum(L, out=offs[1:])
    seqs = SequenceSet([str(i) for i in range(L.size)], np.zeros(offs[-1], np.uint8), offs)

    def slow_derive(lengths, classes):
        time.sleep(0.1)
        return {"extra": classes}
    for copy_s, hidden in ((0.0, False), (0.3, True)):
        def upload(arrays, later):
            t0 = time.perf_counter()
            time.sleep(copy_s)                   # the residues' copy
            more = later()
            return {**arrays, **more}, {"h2d": time.perf_counter() - t0}
        db, load = ResidentCache(upload, slow_derive).get_seqs(seqs, None)
        assert set(db.buffers) == {"residues", "offsets", "order", "classes", "extra"}
        assert (load["prep"] < 0.05) if hidden else (load["prep"] > 0.05)
        assert load["h2d"] >= (0.25 if hidden else 0.0)


def test_a_batch_launch_passes_the_models_table_and_the_stride(monkeypatch):
    """profile-cuda-warp's launch of K models (no GPU: the kernel records its arguments): the
    batch's profile, MODELS = K, the per-model table and the output stride in warp.h's order,
    an output of K x n."""
    from hmmbench.apis import cuda as glue
    from hmmbench.profile.device import warp
    drv, seen = HostDriver(), {}

    class Function:
        num_regs = 64

        def __call__(self, *args, **kw):
            seen["args"] = args

    class Module:
        def get_function(self, name):
            seen["name"] = name
            return Function()

    def compile_(source, defines):
        seen["defines"] = defines
        return Module()
    monkeypatch.setattr(glue, "driver", lambda: drv)
    monkeypatch.setattr(glue, "compile", compile_)
    monkeypatch.setattr(glue, "device_attributes", lambda: {"sm_count": 132})
    models = [s.load()[0] for s in datasets.resolve_models("RREFam")[:3]]
    dev = pcuda._CudaDevice(warp=True)
    dev.begin(StageClock())
    n, order = 50, np.arange(40, dtype=np.int32)

    class Db:
        buffers = {"residues": np.zeros(100, np.uint8), "offsets": np.zeros(n + 1, np.int64)}
    dev.db = Db()
    seqs = SequenceSet([str(i) for i in range(n)], np.zeros(0, np.uint8), np.zeros(n + 1, np.int64))
    tjbm = np.arange(3 * n, dtype=np.uint8)
    out = dev.msv_xj(models, seqs, None, tjbm, on_device=(order, 40))
    args = seen["args"]
    Q, words = warp.batch_profile(models, "msv", warp.TUNED_VARIANT)
    assert seen["name"] == "msv_xj_warp" and seen["defines"]["MODELS"] == 3
    assert seen["defines"]["QB"] == Q
    assert (read(args[0], words.nbytes, np.uint32) == words.ravel()).all()
    assert args[3] is order and args[4] == 40
    scalars = warp.batch_scalars(models)
    assert (read(args[5], scalars.nbytes, np.int32) == scalars.ravel()).all() and args[6] == n
    assert (read(args[7], tjbm.nbytes, np.uint8) == tjbm).all()
    assert args[8] is out and out.nbytes == 4 * 3 * n
    dev.ssv_xe(models, seqs, None, on_device=(order, 40))
    assert seen["name"] == "ssv_xe_warp" and len(seen["args"]) == 8


def test_uploads_are_enqueued_into_arenas_reused_per_search():
    """A search's uploads are copied on the launch stream (a blocking copy from pageable memory
    would wait for the kernels launched before it) through one page-locked arena into one
    device arena: each array at its own aligned address, none overwritten while the search
    runs, an outgrown arena kept until the search ends, the arenas reused from the start by
    the next search."""
    from hmmbench.profile.device.cuda_uploads import ALIGN, Uploads
    drv = HostDriver()
    up = Uploads(drv, first_bytes=4096)
    rng = np.random.default_rng(3)
    arrays = [rng.integers(0, 1 << 30, n).astype(np.int32) for n in (1, 100, 0, 700, 3000)]
    ptrs = [up.put(a) for a in arrays]
    assert all(int(p) % ALIGN == 0 for p in ptrs)
    assert up.size > 4096 and len(up._retired) >= 1         # grown past the first arena
    for a, p in zip(arrays, ptrs):                            # none overwritten by a later put
        assert (read(p, a.nbytes, np.int32) == a).all()
    first = int(up.dev)
    up.reset()
    assert up._retired == [] and int(up.put(np.ones(3, np.int16))) == first


def test_a_search_uploads_without_blocking_copies(monkeypatch):
    """profile-cuda-warp's uploads within a search (profile, per-length tables) go through the
    arenas, none through a blocking to_device; the arenas restart when the search ends."""
    from hmmbench.apis import cuda as glue
    drv = HostDriver()
    blocking = []
    drv.to_device = lambda arr: blocking.append(arr) or np.array(arr)

    class Function:
        num_regs = 40

        def __call__(self, *args, **kw):
            pass

    class Module:
        def get_function(self, name):
            return Function()
    monkeypatch.setattr(glue, "driver", lambda: drv)
    monkeypatch.setattr(glue, "compile", lambda *a, **kw: Module())
    monkeypatch.setattr(glue, "device_attributes", lambda: {"sm_count": 132})
    model = datasets.resolve_model("query-M100").load()[0]
    dev = pcuda._CudaDevice(warp=True)
    dev.begin(StageClock())
    n = 50

    class Db:
        buffers = {"residues": np.zeros(100, np.uint8), "offsets": np.zeros(n + 1, np.int64),
                   "classes": np.zeros(n, np.int32)}
    dev.db = Db()
    dev.db.n = n
    seqs = SequenceSet([str(i) for i in range(n)], np.zeros(0, np.uint8), np.zeros(n + 1, np.int64))
    order = np.arange(n, dtype=np.int32)
    dev.ssv_xe(model, seqs, None, on_device=(order, n))
    dev.classify(order, n, np.zeros(n, np.int32), table=np.zeros((7, 128), np.uint8))
    dev.finish("ssv", order, n, np.zeros(n, np.int32), np.zeros(7, np.int32), 1, 2, 3, 4, 1.0)
    assert blocking == [] and len(drv.uploads) == 3 and dev.uploads.used > 0
    dev.end()
    assert dev.uploads.used == 0


def test_a_models_profile_and_kernel_are_built_once_across_searches(monkeypatch):
    """A run searches one model again and again: its warp profile's words are built and its
    kernel fetched once while the model is kept (the profile uploaded again per search, whose
    arenas restart); another model object builds its own, and an evicted model builds again.
    Every search's launch reports its own grid."""
    from hmmbench.apis import cuda as glue
    from hmmbench.profile.device import kept, warp
    drv, counts = HostDriver(), {"compile": 0, "profile": 0}

    class Function:
        num_regs = 40

        def __call__(self, *args, **kw):
            counts["grid"] = kw["grid"]

    class Module:
        def get_function(self, name):
            return Function()

    def compile_(*a, **kw):
        counts["compile"] += 1
        return Module()
    real_profile = warp.profile

    def profile(*a, **kw):
        counts["profile"] += 1
        return real_profile(*a, **kw)
    monkeypatch.setattr(glue, "driver", lambda: drv)
    monkeypatch.setattr(glue, "compile", compile_)
    monkeypatch.setattr(glue, "device_attributes", lambda: {"sm_count": 132})
    monkeypatch.setattr(warp, "profile", profile)
    model = datasets.resolve_model("query-M100").load()[0]
    dev = pcuda._CudaDevice(warp=True)
    n = 50

    class Db:
        buffers = {"residues": np.zeros(100, np.uint8), "offsets": np.zeros(n + 1, np.int64)}
    seqs = SequenceSet([str(i) for i in range(n)], np.zeros(0, np.uint8), np.zeros(n + 1, np.int64))

    def search(m, count):
        dev.begin(StageClock())
        dev.db = Db()
        dev.ssv_xe(m, seqs, None, on_device=(np.arange(count, dtype=np.int32), count))
        uploads = len(drv.uploads)
        dev.end()
        return uploads, dev.launches[-1]["grid"]
    drv.uploads.clear()
    assert search(model, n) == (1, 4) and counts == {"compile": 1, "profile": 1, "grid": (4, 1)}
    assert search(model, 20 * 128)[1] == 160                 # 8 lanes a sequence, 4 warps a block
    assert counts["compile"] == 1 and counts["profile"] == 1 and len(drv.uploads) == 2
    other = copy.copy(model)
    search(other, n)
    assert counts["compile"] == 2 and counts["profile"] == 2
    for _ in range(kept.KEPT):                               # evicts the first model's entries
        search(copy.copy(model), n)
    search(model, n)
    assert counts["profile"] == 3 + kept.KEPT


def test_scores_handed_out_are_reused_only_once_let_go():
    """A result array goes back to its device only when no caller holds it, nor a view of it."""
    from hmmbench.profile.device.reused import ReusedArrays
    arrays = ReusedArrays(keep=2)
    first = arrays.take(10, np.float64)
    first_id = id(first)
    held = arrays.take(10, np.float64)
    assert held is not first                                 # the caller still holds ``first``
    del first
    again = arrays.take(10, np.float64)
    assert id(again) == first_id and arrays.take(11, np.float64).size == 11
    view = again[2:]
    del again
    assert id(arrays.take(10, np.float64)) != first_id       # a view keeps it
    del view, held
    assert arrays.take(10, np.float32).dtype == np.float32


def test_a_searchs_scores_come_back_in_a_reused_page_locked_array(monkeypatch):
    """profile-cuda's scores are copied by the device into a page-locked array the caller gets
    (no host copy): the next search reuses it once the caller let it go, never while held."""
    from hmmbench.apis import cuda as glue
    drv, pinned = HostDriver(), []
    drv.pagelocked_empty = lambda n, dtype: pinned.append(n) or np.empty(n, dtype)
    monkeypatch.setattr(glue, "driver", lambda: drv)
    dev = pcuda._CudaDevice(warp=True)
    n = 1000

    class Db:
        pass
    dev.db = Db()
    dev.db.n = n
    dev.begin(StageClock())
    scores = dev.buffers.get("scores", 4 * n)
    scores.view(np.float32)[:n] = np.arange(n, dtype=np.float32)
    first = dev.finished_scores()
    assert first.dtype == np.float32 and (first == np.arange(n)).all()
    held = dev.finished_scores()
    assert held is not first and len(pinned) == 2           # the caller holds the first
    first_id = id(first)
    del first
    assert id(dev.finished_scores()) == first_id and len(pinned) == 2
