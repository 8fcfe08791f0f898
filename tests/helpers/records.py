"""Result documents crafted by hand, as the compare and history tests need them."""
from hmmbench import compare


def run(dataset, backend, total, status="ok", chunking="original", samples=None):
    """A run record; ``samples``: the timed totals (the median becomes the total)."""
    if samples is not None:
        total = compare.stats.median(samples)
    lo, hi = (min(samples), max(samples)) if samples else (total, total)
    rec = {"dataset": dataset, "dataset_sha256": "0" * 64, "pairs": 10, "cells": 1000,
            "backend": backend, "api": "numpy", "family": "toy", "device": "cpu", "params": {},
            "chunking": chunking,
            "timing_s": {"prep": 0.0, "h2d": 0.0, "kernel": total / 2, "d2h": 0.0, "total": total},
            "timing_min_s": {"total": lo}, "timing_max_s": {"total": hi},
            "gcups_kernel": 1.0, "gcups_total": 1.0, "speedup_vs_reference": None, "repeats": 3,
            "max_abs_err": 0.0, "n_checked": 10, "n_over_tol": 0, "n_fallback": 0,
            "status": status, "reason": "" if status == "ok" else "something", "info": {}}
    if samples is not None:
        rec["samples_s"] = {"total": list(samples)}
    return rec


def document(runs):
    return {"hmmbench_version": "0.1.0", "created": "2026-01-01T00:00:00+00:00",
            "command": ["hmmbench", "run"], "host": {}, "devices": [], "chunking": "original",
            "runs": runs}
