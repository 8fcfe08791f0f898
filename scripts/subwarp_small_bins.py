"""Which (p, k) per read-length bin when the input leaves the GPU mostly idle (issue 13, points
4 and 5), run on the GPU machine.

A small input's kernel time is the chain of its longest pairs (hap length + p steps of k rows
each, the k rows one dependent chain per thread), not the GPU's throughput: more threads per pair
(larger p, smaller k) shortens the chain at a cost in shuffles the idle GPU does not feel. Each
candidate table of bins is run as ``cuda-subwarp`` (exponents, every input through the table) on
10s and 1m merged (one call each) and on 1m's 110 active regions (one call each, as
HaplotypeCaller calls the Pair-HMM): the median call wall, kernel time and pass total, and the
largest error against the float64 reference on each set. Development figures; the committed ones
come from the tool (``hmmbench run``) once a table is chosen.

Candidates are built as ``cuda-subwarp`` is (``--exp-all``: exponents in every bin, the backend of
session 6, when the first tables were chosen). ``--bin-profile``: each set's bins once more one
after the other on one stream, with each bin's seconds and real cells (the table's padding shows as
GCUPS under the others').

    source .device/env.sh && python3 scripts/subwarp_small_bins.py [--passes N] [--sets 10s,1m]
        [--tables p8,p8-fine] [--bin-profile] [--json F]
"""
from __future__ import annotations

import argparse
import json
import statistics
import time

import numpy as np

from hmmbench.apis import cuda as glue
from hmmbench.pairhmm import cuda_subwarp as sw
from hmmbench.pairhmm.cuda_subwarp_variants import _CASCADE as CASCADE
from hmmbench.pairhmm.datasets import resolve
from hmmbench.pairhmm.datasets.chunking import launches
from cpu_reference.pairhmm.forward import forward_log10

TABLES = {
    "current": ((64, 4, 16, 3), (128, 8, 16, 3), (256, 8, 32)),
    "p8": ((64, 8, 8), (128, 8, 16), (256, 8, 32)),
    "p16": ((64, 16, 4), (128, 16, 8), (256, 16, 16)),
    "mixed16-32": ((64, 16, 4), (128, 16, 8), (256, 32, 8)),
    "p32": ((128, 32, 4), (256, 32, 8)),
    "fine": ((16, 4, 4), (32, 8, 4), (64, 16, 4), (128, 32, 4), (256, 32, 8)),
    # session 17 (the 5-op kernels and their register caps): 1m's padding (618M cells computed
    # for 420M with "p8"; 491M with the p8 tiles every 32 rows) against more launches
    "p8-caps": ((64, 8, 8, 6), (128, 8, 16, 4), (256, 8, 32)),
    "p8-fine": ((32, 8, 4), (64, 8, 8), (96, 8, 12), (128, 8, 16), (160, 8, 20), (192, 8, 24),
                (224, 8, 28), (256, 8, 32)),
    "p8-fine-caps": ((32, 8, 4, 6), (64, 8, 8, 6), (96, 8, 12, 4), (128, 8, 16, 4),
                     (160, 8, 20, 3), (192, 8, 24, 3), (256, 8, 32)),
    "p8-quarters": ((64, 8, 8, 6), (128, 8, 16, 4), (192, 8, 24, 3), (256, 8, 32)),
    "p16-fine": ((64, 16, 4, 6), (128, 16, 8, 6), (192, 16, 12, 4), (256, 16, 16, 4)),
    # session 18 (a small call's grids capped at the resident blocks): each bin's time is the
    # chain of its longest haplotypes, (h + p - 1) steps of k dependent rows each -- more
    # threads per pair for the longer reads
    "p8-p16k16": ((64, 8, 8), (128, 8, 16), (256, 16, 16)),
    "p8-p32k8": ((64, 8, 8), (128, 8, 16), (256, 32, 8)),
    "p8-p16-p32": ((64, 8, 8), (128, 16, 8), (256, 32, 8)),
    # session 25 (bins side by side on their own streams, grids capped, each recompute queue
    # after its bin): 1m's reads of 129..192 (and 65..96) padded to 256 (128) rows
    "p8-192": ((64, 8, 8), (128, 8, 16), (192, 8, 24), (256, 8, 32)),
    "p8-five": ((64, 8, 8), (96, 8, 12), (128, 8, 16), (160, 8, 20), (256, 8, 32)),
    "p8-six": ((32, 8, 4), (64, 8, 8), (96, 8, 12), (128, 8, 16), (192, 8, 24), (256, 8, 32)),
    "default": sw.DEFAULT_BINS,
}


def med(xs) -> float:
    return statistics.median(xs)


def bin_profile(b, calls: list) -> dict:
    """{bin: {"seconds", "cells", "gcups"}} over ``calls``: the bins one after the other on one
    stream (``profile_bins``), each bin's real cells from the host's layout."""
    b.profile_bins = True
    try:
        prof: dict = {}
        for p in calls:
            for label, row in b.run(p).info["bin_profile"].items():
                acc = prof.setdefault(label, {"seconds": 0.0, "cells": 0})
                acc["seconds"] += row["seconds"]
                acc["cells"] += int(row["cells"])
    finally:
        b.profile_bins = False
    for row in prof.values():
        row["gcups"] = row["cells"] / row["seconds"] / 1e9 if row["seconds"] else 0.0
    return prof


def run_table(name: str, b, sets: dict, passes: int, profile: bool = False) -> dict:
    """Backend ``b`` (one candidate table for every input) on each set; closed afterwards."""
    row: dict = {"table": [list(t) for t in b._bins_table]}
    for label, (calls, ref) in sets.items():
        outs = [b.run(p) for p in calls]  # warm-up: compiles, allocates; checked
        got = np.concatenate([np.asarray(ex.log10, np.float64) for ex in outs])
        ok = np.isfinite(ref)
        err = float(np.max(np.abs(got[ok] - ref[ok])))
        totals, kernels, walls = [], [], []
        for _ in range(passes):
            t_pass = time.perf_counter()
            k = 0.0
            for p in calls:
                t0 = time.perf_counter()
                ex = b.run(p)
                walls.append(time.perf_counter() - t0)
                k += ex.timing["kernel"]
            totals.append(time.perf_counter() - t_pass)
            kernels.append(k)
        row[label] = {"calls": len(calls), "max_abs_err": err,
                      "pass_total_ms": [min(totals) * 1e3, med(totals) * 1e3, max(totals) * 1e3],
                      "pass_kernel_ms": [min(kernels) * 1e3, med(kernels) * 1e3,
                                         max(kernels) * 1e3],
                      "call_wall_ms_median": med(walls) * 1e3, "bins": ex.info.get("bins")}
        if profile:
            row[label]["bin_profile"] = prof = bin_profile(b, calls)
            print("    " + ", ".join(f"{k} {v['seconds'] * 1e3:.3f} ms {v['gcups']:.0f} GCUPS"
                                     for k, v in prof.items()), flush=True)
        print(f"{name:12s} {label:12s} total {med(totals) * 1e3:8.3f} ms "
              f"(min {min(totals) * 1e3:.3f} max {max(totals) * 1e3:.3f}) kernel "
              f"{med(kernels) * 1e3:8.3f} ms  call wall {med(walls) * 1e3:.3f} ms  "
              f"max err {err:.2e}", flush=True)
    b.close()
    return row


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--passes", type=int, default=15)
    ap.add_argument("--tables", default=",".join(TABLES))
    ap.add_argument("--sets", default="10s,1m,1m-regions")
    ap.add_argument("--exp-all", action="store_true")
    ap.add_argument("--bin-profile", action="store_true")
    ap.add_argument("--json")
    args = ap.parse_args()
    names = args.tables.split(",")
    t = time.time()
    how = {"exp_scale": True} if args.exp_all else CASCADE
    cands = {n: sw.SubwarpBackend(f"small-{n}", bins=TABLES[n], **how) for n in names}
    print("precompiled", sw.precompile(list(cands.values())), "kernels in", round(time.time() - t, 1), "s")
    sets = {}
    for label, ds, mode in (("10s", "10s", "merged"), ("1m", "1m", "merged"),
                            ("1m-regions", "1m", "original")):
        if label not in args.sets.split(","):
            continue
        pairs = resolve(ds).load()
        ref = np.asarray(pairs.expected if pairs.expected is not None else
                         forward_log10(pairs), np.float64)
        sets[label] = (list(launches(pairs, mode)), ref)
    result = {"gpu": glue.device_attributes()["name"], "passes": args.passes,
              "backend": "exp_scale (every bin)" if args.exp_all else "cuda-subwarp's",
              "tables": {n: run_table(n, b, sets, args.passes, args.bin_profile)
                         for n, b in cands.items()}}
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(result, fh, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
