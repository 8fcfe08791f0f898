"""Host time of the GPU ``pipeline`` kind and of the resident-database load, on this machine's
CPU (no GPU): the real shapes (``-d proteins-2e8``, query-M100/M400/M1200) through the CUDA
backend's own host code with the device left out.

    python scripts/profile_host_time.py [-d proteins-2e8] [--model query-M100 ...] [--repeats 5]

``db load``: the resident cache's layout (its "prep") and the CUDA upload's staging copies
(:func:`hmmbench.profile.cuda.upload_database` with a stand-in driver whose copies to the device
cost nothing: the host side of its "h2d"). ``pipeline prep``: what
:func:`hmmbench.profile.device_pipeline.run_pipeline` times as host "prep" (the generic Forward's
host part included) on a stand-in device whose kernels cost nothing and whose stage codes are
a fixed draw with hmmsearch's pass rates; ``pipeline wall``: the whole call (Python included);
``profile-cuda-warp run``: the backend's whole ``run`` of a pipeline cell, its database
resident, through a stand-in driver (kernels, copies and events free; 1,000 survivors per
stage): the host's share of a cell's "total".
Then the host pieces one by one. Figures: best of ``--repeats`` runs, ms. The database is
generated once and kept as .npy files in ``--cache`` (default /tmp/hmmbench-host-time).
"""
from __future__ import annotations

import argparse
import os
import time

import numpy as np


def best_ms(fn, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return 1e3 * best


def load_database(name: str, cache: str):
    from hmmbench.profile import datasets
    from hmmbench.profile.model import SequenceSet
    os.makedirs(cache, exist_ok=True)
    res_p, off_p = (os.path.join(cache, f"{name}.{part}.npy") for part in ("residues", "offsets"))
    if not os.path.exists(off_p):
        seqs = datasets.resolve_database(name).load()
        np.save(res_p, seqs.residues)
        np.save(off_p, seqs.offsets)
    offsets = np.load(off_p)
    return SequenceSet([""] * (offsets.size - 1), np.load(res_p), offsets)


class Alloc(np.ndarray):
    """A stand-in device allocation: host bytes (untouched until written)."""

    def __int__(self):
        return 0

    def free(self):
        pass


def alloc(arr) -> Alloc:
    return np.asarray(arr).view(Alloc)


class FreeDriver:
    """pycuda.driver's calls of the CUDA profile backends: device arrays are host arrays,
    copies to the device free (the staging copies into "pinned" memory still run), downloads
    copy the bytes."""

    def mem_alloc(self, nbytes):
        return alloc(np.zeros(nbytes, np.uint8))

    def pagelocked_empty(self, n, dtype):
        return np.empty(n, dtype)

    def memcpy_htod_async(self, dst, src, stream):
        pass

    def to_device(self, arr):
        return alloc(arr)

    def memcpy_dtoh(self, dst, src):
        dst[:] = np.asarray(src).view(np.uint8)[:dst.nbytes].view(dst.dtype)

    def Event(self):  # noqa: N802 - pycuda's name
        return self

    def Stream(self):  # noqa: N802
        return self

    def record(self, stream=None):
        pass

    def synchronize(self):
        pass

    def time_since(self, other):
        return 0.0

    class Context:  # noqa: N801 - pycuda's name
        @staticmethod
        def synchronize():
            pass


class FreeFunction:
    """A kernel that costs nothing; the compaction's scan reports ``survivors``."""
    num_regs = 64

    def __init__(self, name, survivors):
        self.name, self.survivors = name, survivors

    def __call__(self, *args, **kw):
        if self.name == "stage_scan":
            args[2].view(np.int32)[0] = self.survivors


class FreeModule:
    def __init__(self, survivors=0):
        self.survivors = survivors

    def get_function(self, name):
        return FreeFunction(name, self.survivors)


class FreeDevice:
    """The device protocol of run_pipeline, kernels free: stage codes from ``codes``."""

    def __init__(self, db, codes, clock):
        self.db, self._codes, self.clock = db, codes, clock

    def use_clock(self, clock):
        self.clock = clock

    def whole_order(self):
        return self.db.order, self.db.n

    def gather(self, table, name):
        return table

    def ssv_xe(self, model, seqs, idx, on_device=None):
        return None

    msv_xj = vf_xc = lambda self, *a, **kw: None

    def classify(self, *args, **kw):
        pass

    def compact(self, order, m, want, name):
        from hmmbench.profile import pipeline as pl
        final = {pl.PENDING_MSV: 0.003, pl.PENDING_VIT: 0.018}.get(want)
        count = int((self._codes == want).sum()) if final is None else int(final * self.db.n)
        return None, count

    def forward(self, model, order, m, host):
        from hmmbench.profile.cuda import generic_scores
        return generic_scores(self.db, model, order, m, True, self.clock, host)

    def codes(self):
        return self._codes.copy()


def main(argv=None) -> int:
    from hmmbench.apis import cuda as glue
    from hmmbench.backend import StageClock
    from hmmbench.profile import cuda_resident as pcuda, datasets, pipeline as pl
    from hmmbench.profile.device_pipeline import run_pipeline
    from hmmbench.profile.cuda import TUNED_VARIANT, CudaProfile
    from hmmbench.profile.host import launch_order
    from hmmbench.profile.job import ProfileSearch
    from hmmbench.profile.resident import ResidentCache
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-d", "--database", default="proteins-2e8")
    ap.add_argument("--model", action="append")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--cache", default="/tmp/hmmbench-host-time")
    args = ap.parse_args(argv)
    glue.driver = FreeDriver
    glue.compile = lambda *a, **kw: FreeModule(1000)
    glue.device_attributes = lambda: {"sm_count": 132}
    glue.host_register = lambda ptr, nbytes: False    # page-locking is the driver's: staged copies
    seqs = load_database(args.database, args.cache)
    r = args.repeats
    print(f"{args.database}: {len(seqs)} sequences, {seqs.n_residues} residues; "
          f"best of {r}, ms; staging threads {getattr(pcuda, 'UPLOAD_THREADS', 1)}")

    derive = getattr(pcuda, "resident_specials", None)
    cache = (ResidentCache(pcuda.upload_database, derive) if derive
             else ResidentCache(pcuda.upload_database))
    loads = []

    def load():
        cache.clear()
        loads.append(cache.get_seqs(seqs, "db")[1])
    best_ms(load, r)
    print("db load:     prep {:7.2f}   staging copies (h2d) {:7.2f}".format(
        *(1e3 * min(ld[k] for ld in loads) for k in ("prep", "h2d"))))
    db = cache.current
    L = seqs.lengths

    backend = CudaProfile("profile-cuda-warp", "warp-group", warp=True,
                          variant=TUNED_VARIANT)
    rng = np.random.default_rng(0)           # hmmsearch's rates on this set: 98% fail MSV, ...
    codes = rng.choice([pl.FAIL_MSV, pl.FAIL_VIT, pl.TO_FORWARD], db.n,
                       p=[0.98, 0.0189, 0.0011]).astype(np.uint8)
    for name in args.model or ["query-M100", "query-M400", "query-M1200"]:
        model = datasets.resolve_model(name).load()[0]
        preps = []

        def cell():
            host, dev = StageClock(), StageClock()
            run_pipeline(FreeDevice(db, codes, dev), model, db, host, dev, StageClock,
                         lambda c: dict(c.timing))
            preps.append(host.timing["prep"])
        wall = best_ms(cell, r)
        job = ProfileSearch(model, seqs, "pipeline", database="db")
        backend.run(job)                                   # its own db load, once
        cuda_run = best_ms(lambda: backend.run(job), r)
        print(f"{name} (M={model.M}): pipeline prep {1e3 * min(preps):7.2f}   "
              f"pipeline wall {wall:7.2f}   profile-cuda-warp run {cuda_run:7.2f}")
        stage = codes.astype(np.int8)
        fwd = np.where(stage == 2, rng.normal(-5, 3, db.n), np.nan).astype(np.float32)
        reached = np.flatnonzero(stage == pl.TO_FORWARD)
        pieces = {"msv_tables": lambda: pl.msv_tables(model, db.lengths),
                  "vf_thresholds": lambda: pl.vf_thresholds(model, db.lengths),
                  "forward_passes": lambda: pl.forward_passes(
                      model, fwd[reached].astype(np.float64), L[reached]),
                  "outcome": lambda: pl.outcome(stage, fwd),
                  "counts_of": lambda: pl.counts_of(stage)}
        print("    " + "   ".join(f"{k} {best_ms(f, r):.2f}" for k, f in pieces.items()))
    print("db pieces:   " + "   ".join(f"{k} {best_ms(f, r):.2f}" for k, f in {
        "launch_order": lambda: launch_order(seqs),
        "length_classes": lambda: pl.length_classes(L, db.order)}.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
