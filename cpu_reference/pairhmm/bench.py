"""Time the NumPy reference on named data sets: ``python3 -m cpu_reference.pairhmm.bench 10s 1m``.

Runs the ``numpy`` and ``numpy-f32`` backends (each call does its own layout), reports the
median of ``--repeat`` runs per stage, GCUPS on the total, the float32 fallback count, the
largest float32-vs-float64 difference and the process's peak memory.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import sys
import time
from pathlib import Path

import numpy as np

from hmmbench.hostinfo import cpu_model

from .backends import backends

DEFAULT_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "pairhmm"


def bench(pairs, repeat: int) -> list:
    rows, f64 = [], None
    for backend in backends():
        runs = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            ex = backend.run(pairs)
            runs.append((time.perf_counter() - t0, ex))
        total = statistics.median(t for t, _ in runs)
        ex = runs[-1][1]
        row = {"backend": backend.name, "precision": backend.precision,
               "total_s": total, "gcups": pairs.cells / total / 1e9 if total else None,
               "n_fallback": ex.n_fallback, "groups": ex.info.get("groups")}
        for stage in ("prep", "kernel"):
            row[f"{stage}_s"] = statistics.median(e.timing[stage] for _, e in runs)
        if backend.precision == "float64":
            f64 = ex.log10
        elif f64 is not None:
            row["max_abs_diff_vs_float64"] = float(np.max(np.abs(ex.log10 - f64), initial=0.0))
        rows.append(row)
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("datasets", nargs="*", default=["10s", "1m"], help="names or paths")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", help="also write the rows to this file")
    args = ap.parse_args(argv)
    os.environ.setdefault("HMMBENCH_DATA_PATH", str(DEFAULT_DATA))
    from hmmbench.pairhmm.datasets import resolve

    print(f"CPU: {cpu_model()} ({os.cpu_count()} logical CPUs), numpy {np.__version__}")
    out = []
    for name in args.datasets:
        pairs = resolve(name).load()
        for row in bench(pairs, args.repeat):
            row.update(dataset=name, pairs=pairs.n_pairs, cells=pairs.cells)
            out.append(row)
            diff = row.get("max_abs_diff_vs_float64")
            print(f"{name:>6} {row['backend']:>9}: {pairs.n_pairs} pairs, {pairs.cells} cells, "
                  f"prep {row['prep_s']:.2f} s, kernel {row['kernel_s']:.2f} s, "
                  f"total {row['total_s']:.2f} s = {row['gcups']:.3f} GCUPS, "
                  f"{row['groups']} groups, fallback {row['n_fallback']}"
                  + (f", max |f32-f64| {diff:.2e}" if diff is not None else ""))
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak RSS {peak_mb:.0f} MB")
    if args.json:
        Path(args.json).write_text(json.dumps({"cpu": cpu_model(), "peak_rss_mb": peak_mb,
                                               "rows": out}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
