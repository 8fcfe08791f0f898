"""Realistic result documents for the printer tests: long backend names with brackets, user
strings that look like rich markup, every status, spreads, a profile sweep and a cluster study."""
from __future__ import annotations

import copy

#: Backend names as the registry makes them (a family's parameters in brackets) and one that
#: is markup to rich ("[/]" closes a style).
LONG = "opencl-inter-tile8[sorted=0,local=64]"
LONG2 = "cuda-subwarp-f64rescue[block=256,tile=8]"
MARKUP = "b[/]x"
BOLD = "[bold]numpy-f32[/bold]"
DATASET = "reads[red]/2"          # a dataset file name with markup in it
BACKENDS = (LONG, LONG2, MARKUP, BOLD, "numpy-f32", "opencl-warp")
STATUSES = ("ok", "ok", "mismatch", "ok", "unavailable", "peer")
#: GCUPS figures, as the reports print them (three significant digits)
GCUPS = {LONG: (1234.5, 987.6), LONG2: (2817.9, 1516.6), MARKUP: (0.1913, 0.1742),
         BOLD: (42.42, 31.07), "numpy-f32": (None, None), "opencl-warp": (7.77, 5.55)}


def run(dataset: str, backend: str, status: str, gk, gt, **extra) -> dict:
    from hmmbench.runner import RunRecord
    ran = status != "unavailable"
    r = RunRecord(dataset=dataset, dataset_sha256="a" * 64, pairs=1, cells=1, backend=backend,
                  api="opencl", family="inter", precision="float32", status=status).to_dict()
    r |= {"workload": "pairhmm", "dataset": dataset, "dataset_sha256": "a" * 64, "pairs": 29326,
         "cells": 420_144_629, "backend": backend, "api": backend.split("-")[0],
         "family": "inter", "precision": "float32", "device": "Test GPU", "params": {},
         "chunking": "original", "status": status,
         "reason": {"mismatch": "12 of 3550 checked pairs differ [/]",
                    "unavailable": "pyopencl not installed"}.get(status, ""),
         "gcups_kernel": gk, "gcups_total": gt, "speedup_vs_reference": 6.06 if ran else None,
         "repeats": 5 if ran else 0, "n_checked": 3550 if ran else 0, "n_fallback": 13,
         "n_over_tol": 12 if status == "mismatch" else 0,
         "max_abs_err": 3.3e-6 if ran else None, "info": {}, "timing_s": {}}
    if ran:
        r["timing_s"] = {"prep": 7.18e-3, "h2d": 202e-6, "kernel": 0.473, "d2h": 56.5e-6,
                         "total": 0.51}
        r["timing_min_s"] = {"prep": 6.95e-3, "h2d": 146e-6, "kernel": 0.456, "d2h": 50.6e-6,
                             "total": 0.496}
        r["timing_max_s"] = {"prep": 7.44e-3, "h2d": 8.524e-3, "kernel": 0.483, "d2h": 61.7e-6,
                             "total": 0.519}
    r.update(extra)
    return r


def document(runs: list, **extra) -> dict:
    doc = {"schema": 2, "hmmbench_version": "0.1.0", "created": "2026-11-21T09:47:33+00:00",
           "chunking": "original",
           "command": ["hmmbench", "run", "-b", LONG], "source_sha256": "f" * 64,
           "host": {"cpu": "AMD EPYC [test]", "cpu_count": 2},
           "devices": [{"api": "opencl", "name": "Portable Computing Language [pthread]",
                        "backends": list(BACKENDS)}],
           "runs": runs}
    doc.update(extra)
    return doc


def pairhmm_doc() -> dict:
    """Two datasets (one with markup in its name) x every backend name and status."""
    runs = []
    for dataset in ("1m", DATASET):
        for backend, status in zip(BACKENDS, STATUSES):
            gk, gt = GCUPS[backend]
            runs.append(run(dataset, backend, status, gk, gt))
    return document(runs)


def candidate(doc: dict, slower: str = LONG, by: float = 1.5) -> dict:
    """A copy of ``doc`` with ``slower``'s runs ``by`` times slower."""
    cand = copy.deepcopy(doc)
    for r in cand["runs"]:
        if r["backend"] == slower and r.get("timing_s"):
            r["timing_s"] = {k: v * by for k, v in r["timing_s"].items()}
            r["timing_min_s"] = {k: v * by for k, v in r["timing_min_s"].items()}
            r["timing_max_s"] = {k: v * by for k, v in r["timing_max_s"].items()}
    cand["created"] = "2026-11-22T09:47:33+00:00"
    cand["source_sha256"] = "e" * 64
    return cand


def cluster_doc() -> dict:
    """A scaling study of a long-named backend on 1, 2 and 4 workers."""
    runs, rows = [], []
    for n in (1, 2, 4):
        runs.append(run("1m", LONG, "ok", 100.0 * n * 0.9, 80.0 * n * 0.9, workers=n))
        rows.append({"dataset": "1m", "chunking": "original", "backend": LONG, "model": None,
                     "kind": None, "workers": n, "device": "Test GPU", "total_s": 1.0 / n,
                     "kernel_s": 0.8 / n, "gcups_total": 80.0 * n * 0.9,
                     "gcups_kernel": 100.0 * n * 0.9, "baseline_workers": 1,
                     "parallel_efficiency": 0.9, "parallel_efficiency_kernel": 0.95,
                     "outside_s": 0.01, "per_worker": [{"kernel": 0.8 / n}] * n})
    return document(runs, cluster={"scaling": rows, "shards_retried": [
        {"shard": 3, "piece": 1, "dataset": "1m", "backend": LONG, "ran_on": "worker-1",
         "host": "node[2]", "planned": "worker-0"}]})
