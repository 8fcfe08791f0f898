"""On the GPU machine: the generic Forward kernel (kernels_common/profile/generic.h, probability
space) on the sequences a pipeline sends to Forward, timed per block size.

    source .device/env.sh && python3 scripts/device_generic_forward.py --json $OUT/fwd.json
    (pyhmmer from the lead's wheels, as scripts/device_profile_e2e.sh installs them)

For each model (default calibrated query-M100/400/1200) on the database (default
proteins-2e8, resident on the device as the backends keep it): the device pipeline
(profile-cuda-warp, kind pipeline) runs once; the sequences that reached Forward, in its launch
order, are the selection (``--select longest``: the ``--longest`` longest plus random ones, ``-n``
in all, without a pipeline). The Forward kernel alone (CUDA events around the launch) then runs
``--warmup`` + ``--repeats`` times per block size of ``--threads`` and, on CUDA, per
``--prefetch`` (GN_PREFETCH: the next row's emissions read during a row); the table shows the median
and the fastest, per-row latency (median / longest selected length), the pipeline's own Forward
stage kernel time (default block size), and the largest difference from the float64 reference on
a sample (the longest selected sequences and random ones, about ``--check-cells`` DP cells). The
scores of every block size must agree within the Forward tolerance too.

``--api opencl`` runs the same on the OpenCL twin (timings from OpenCL events), which is how this
script is checked without a GPU: ``--api opencl -d proteome --models query-M100 --repeats 2``.
"""
from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np


def select_longest(db, n: int, longest: int, seed: int = 0) -> np.ndarray:
    """The ``longest`` longest sequences and random others, ``n`` in all, in launch order."""
    order = db.host_order()                              # by decreasing length
    rng = np.random.default_rng(seed)
    rest = order[longest:]
    pick = rng.choice(rest, size=min(max(n - longest, 0), rest.size), replace=False)
    chosen = np.concatenate([order[:longest], pick])
    return order[np.isin(order, chosen)].astype(np.int32)


def check_sample(db, sel: np.ndarray, M: int, cells: float, seed: int = 0) -> np.ndarray:
    """Indices into ``sel``: its 3 longest, then random others while under ``cells``."""
    L = db.seqs.lengths[sel].astype(np.int64)
    first = list(np.argsort(-L, kind="stable")[:3])
    total = int(L[first].sum()) * M
    for i in np.random.default_rng(seed).permutation(sel.size):
        if total >= cells:
            break
        if i not in first:
            first.append(int(i))
            total += int(L[i]) * M
    return np.array(sorted(first), np.int64)


class CudaRunner:
    """The CUDA pipeline backend and the generic kernel on its resident database."""

    def __init__(self):
        from hmmbench.apis import cuda
        from hmmbench.profile import cuda as pc
        self.cuda, self.pc = cuda, pc
        self.backend = next(b for b in pc.backends() if b.name == "profile-cuda-warp")
        self.scratch = cuda.DeviceBuffers()

    def label(self) -> str:
        return self.backend.device_name()

    def resident(self):
        return self.backend.device().resident

    def to_device(self, arr):
        return self.cuda.driver().to_device(np.ascontiguousarray(arr))

    def forward(self, db, model, order, m: int, threads: int, tuning: dict) -> tuple:
        from hmmbench.backend import StageClock
        timer = self.cuda.EventTimer()
        scores = self.pc.generic_scores(db, model, order, m, True, timer, StageClock(),
                                        scratch=self.scratch, threads=threads, tuning=tuning)
        return scores, timer.seconds()["kernel"]


class OpenCLRunner:
    """The same on the OpenCL twin (a stand-in where there is no GPU)."""

    def __init__(self):
        from hmmbench.profile.opencl import OpenCLProfile
        self.backend = OpenCLProfile()
        self.runner = self.backend.runner()

    def label(self) -> str:
        return self.runner.kit.label

    def resident(self):
        return self.runner.resident

    def to_device(self, arr):
        return self.runner._buf(np.ascontiguousarray(arr))

    def forward(self, db, model, order, m: int, threads: int, tuning: dict) -> tuple:
        """(``tuning`` is CUDA's only)"""
        from hmmbench.backend import StageClock
        r, clock = self.runner, StageClock()
        r._db, r._clock, r.generic_threads = db, clock, threads
        try:
            scores = r.generic(model, order, m, True, clock)
        finally:
            r._db = None
        return scores, clock.timing.get("kernel", 0.0)


def survivors(runner, model, hmm, seqs) -> tuple:
    """(Forward's launch list, the pipeline's Forward-stage kernel seconds) of one pipeline run."""
    from hmmbench.profile import pipeline as pl
    from hmmbench.profile.job import ProfileSearch
    ex = runner.backend.run(ProfileSearch(model, seqs, "pipeline", hmm, database="db"))
    reached = pl.stages_of(ex.log10) >= pl.TO_FORWARD
    db = runner.resident().current
    fwd_stage = ex.info.get("pipeline_stage_s", {}).get("fwd", {})
    order = db.host_order()
    return order[reached[order]].astype(np.int32), fwd_stage.get("kernel")


def select(runner, args, model, hmm, seqs) -> tuple:
    """(resident database, Forward's launch list, the pipeline's Forward kernel seconds or
    None, how the list was chosen); a pipeline that fails falls back to --select longest."""
    if args.select == "pipeline":
        try:
            sel, pipe_s = survivors(runner, model, hmm, seqs)
            return runner.resident().current, sel, pipe_s, "pipeline"
        except Exception as exc:  # noqa: BLE001 - the timing goes on without it
            print(f"  pipeline failed ({type(exc).__name__}: {exc}); --select longest instead",
                  flush=True)
    db, _ = runner.resident().get_seqs(seqs, "db")
    return db, select_longest(db, args.n, args.longest), None, "longest"


def time_model(runner, args, seqs, name: str, threads: list, prefetch: list) -> list:
    """The rows of one model: its selection timed per block size and prefetch choice."""
    from hmmbench.profile import datasets
    from hmmbench.profile.job import TOLERANCE
    from cpu_reference.profile import generic as pg
    model, hmm = datasets.resolve_model(name).load()
    db, sel, pipe_s, how = select(runner, args, model, hmm, seqs)
    m = int(sel.size)
    order = runner.to_device(sel if m else np.zeros(1, np.int32))
    Lmax = int(seqs.lengths[sel].max()) if m else 0
    sample = check_sample(db, sel, model.M, args.check_cells) if m else np.zeros(0, int)
    ref = pg.generic_forward(model, seqs.subset(sel[sample])) if m else np.zeros(0)
    first, rows = None, []
    for thr, pf in ((t, p) for t in threads for p in prefetch):
        tuning = {} if pf == "default" else {"GN_PREFETCH": int(pf)}
        times = []
        for r in range(args.warmup + args.repeats):
            scores, sec = runner.forward(db, model, order, m, thr, tuning)
            if r >= args.warmup:
                times.append(sec)
        got = scores[sel].astype(np.float64)
        first = got if first is None else first
        err = float(np.max(np.abs(got[sample] - ref))) if m else 0.0
        spread = float(np.max(np.abs(got - first))) if m else 0.0
        med = float(np.median(times))
        row = {"model": name, "M": model.M, "sequences": m, "max_length": Lmax,
               "threads": thr, "prefetch": pf, "median_ms": 1e3 * med,
               "min_ms": 1e3 * min(times), "ns_per_row": 1e9 * med / max(Lmax, 1),
               "repeats": len(times),
               "pipeline_forward_kernel_ms": None if pipe_s is None else 1e3 * pipe_s,
               "checked": int(sample.size), "max_err_vs_reference": err,
               "max_diff_vs_first_threads": spread, "finite": bool(np.isfinite(got).all()),
               "ok": bool(err <= TOLERANCE["forward"] and spread <= TOLERANCE["forward"]
                          and np.isfinite(got).all()),
               "device": runner.label(), "api": args.api, "select": how}
        rows.append(row)
        pipe = "" if pipe_s is None else f"{1e3 * pipe_s:.2f}"
        print(f"{name:>12} {model.M:>5} {m:>5} {Lmax:>6} {thr:>4} {pf[:3]:>3} "
              f"{row['median_ms']:>10.3f} {row['min_ms']:>8.3f} {row['ns_per_row']:>7.0f} "
              f"{pipe:>8} {err:>8.1e} {spread:>8.1e}{'' if row['ok'] else '  NOT OK'}",
              flush=True)
    return rows


def main(argv=None) -> int:
    from hmmbench.profile import datasets
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-d", "--database", default="proteins-2e8")
    ap.add_argument("--models", default="query-M100,query-M400,query-M1200")
    ap.add_argument("--threads", default="32,64,128")
    ap.add_argument("--prefetch", default="default,0",
                    help="GN_PREFETCH per timing: default (the header's choice by positions per "
                         "thread), 0 or 1 (CUDA)")
    ap.add_argument("--select", choices=("pipeline", "longest"), default="pipeline")
    ap.add_argument("-n", type=int, default=700, help="--select longest: sequences in all")
    ap.add_argument("--longest", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=11)
    ap.add_argument("--check-cells", type=float, default=2e7)
    ap.add_argument("--api", choices=("cuda", "opencl"), default="cuda")
    ap.add_argument("--json", help="write the rows here (after each model)")
    args = ap.parse_args(argv)
    threads = [int(t) for t in args.threads.split(",")]
    prefetch = args.prefetch.split(",") if args.api == "cuda" else ["default"]
    runner = CudaRunner() if args.api == "cuda" else OpenCLRunner()
    t0 = time.perf_counter()
    seqs = datasets.resolve_database(args.database).load()
    print(f"{args.database}: {len(seqs)} sequences, {seqs.n_residues} residues "
          f"({time.perf_counter() - t0:.1f} s); device {runner.label()}", flush=True)
    print(f"{'model':>12} {'M':>5} {'seqs':>5} {'Lmax':>6} {'thr':>4} {'pf':>3} "
          f"{'median ms':>10} {'min ms':>8} {'ns/row':>7} {'pipe ms':>8} {'err ref':>8} "
          f"{'vs thr0':>8}")
    rows, failed = [], []
    for name in args.models.split(","):
        try:
            rows += time_model(runner, args, seqs, name, threads, prefetch)
        except Exception as exc:  # noqa: BLE001 - the other models still run
            failed.append({"model": name, "error": f"{type(exc).__name__}: {exc}"})
            print(f"{name}: failed: {failed[-1]['error']}", flush=True)
        if args.json:
            with open(args.json, "w") as fh:
                json.dump({"database": args.database, "rows": rows, "failed": failed}, fh,
                          indent=1)
    return 0 if rows and not failed and all(r["ok"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
