"""Every OpenCL family (and, when PyCUDA works, its CUDA twin) on tiny, 10s and 1m: correctness
against the float64 NumPy reference and kernel times, one launch per data set, side by side.

Usage (GPU machine, repo root): source .device/env.sh && python3 scripts/opencl_gpu_check.py OUT.json
Env: HMMBENCH_OPENCL_DEVICE picks the OpenCL device (default: the first GPU); DATASETS=tiny,10s,1m;
REPEAT=5 timed runs after one warm-up (median kept).
"""
from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from cpu_reference.pairhmm import forward_log10  # noqa: E402
from hmmbench.pairhmm import opencl  # noqa: E402
from hmmbench.apis import opencl as opencl_api
from hmmbench.pairhmm.datasets.blockfmt import load_block  # noqa: E402


def data_dir() -> Path:
    for d in os.environ.get("HMMBENCH_DATA_PATH", "").split(":") + [
            str(ROOT / ".data" / "pairhmm"), str(ROOT.parent / "shared" / "data" / "pairhmm")]:
        if d and Path(d, "tiny.in").is_file():
            return Path(d)
    raise SystemExit("no data directory with tiny.in")


def measure(backend, pairs, ref, repeat: int) -> dict:
    rec = {"name": backend.name, "api": backend.api, "family": backend.family}
    try:
        reason = backend.unavailable_reason() or backend.refuse_reason(pairs)
        if reason:
            return {**rec, "skipped": reason}
        t0 = time.perf_counter()
        first = backend.run(pairs)
        rec["first_call_s"] = time.perf_counter() - t0
        runs = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            ex = backend.run(pairs)
            runs.append((ex, time.perf_counter() - t0))
    except Exception as exc:  # noqa: BLE001 - a broken family must not stop the others
        return {**rec, "error": f"{type(exc).__name__}: {exc}"[:2000]}
    kernel = float(np.median([ex.timing["kernel"] for ex, _ in runs]))
    total = float(np.median([w for _, w in runs]))
    delta = float(np.max(np.abs(first.log10 - ref), initial=0.0))
    rec.update({
        "device": backend.device_name(), "params": dict(backend.params),
        "max_abs_delta": delta, "ok": bool(delta <= 1e-4 and np.all(np.isfinite(first.log10))),
        "n_fallback": first.n_fallback, "kernel_s": kernel, "total_s": total,
        "stages_s": {k: float(np.median([ex.timing[k] for ex, _ in runs])) for k in first.timing},
        "gcups_kernel": pairs.cells / kernel / 1e9, "gcups_total": pairs.cells / total / 1e9,
        "info": {k: v for k, v in first.info.items() if isinstance(v, (str, int, float, dict))},
    })
    return rec


def cuda_backends() -> list:
    try:
        from hmmbench.pairhmm import cuda  # noqa: PLC0415
        return cuda.backends()
    except Exception as exc:  # noqa: BLE001
        print(f"cuda backends unavailable: {exc}", flush=True)
        return []


def main() -> None:
    out_path = sys.argv[1] if len(sys.argv) > 1 else "opencl_gpu.json"
    repeat = int(os.environ.get("REPEAT", "5"))
    names = os.environ.get("DATASETS", "tiny,10s,1m").split(",")
    result = {"opencl_devices": opencl_api.devices(), "datasets": {}}
    print(json.dumps(result["opencl_devices"], indent=1), flush=True)
    ocl = opencl.backends()
    cuda = cuda_backends()
    for name in names:
        pairs = load_block(data_dir() / f"{name}.in")
        t0 = time.perf_counter()
        ref = forward_log10(pairs, "float64")
        print(f"== {name}: {pairs.n_pairs} pairs, {pairs.cells} cells, reference "
              f"{time.perf_counter() - t0:.1f}s", flush=True)
        recs = []
        twins = {b.name.replace("cuda-", "opencl-", 1): b for b in cuda}
        for b in ocl:
            for backend in (b, twins.get(b.name)):
                if backend is None:
                    continue
                r = measure(backend, pairs, ref, repeat)
                recs.append(r)
                if "kernel_s" in r:
                    print(f"{r['name']:28s} ok={r['ok']} delta={r['max_abs_delta']:.1e} "
                          f"fb={r['n_fallback']} kernel={r['kernel_s'] * 1e3:9.3f} ms "
                          f"({r['gcups_kernel']:7.2f} GCUPS) total={r['total_s'] * 1e3:9.3f} ms "
                          f"{r['params'].get('path', '')}", flush=True)
                else:
                    print(f"{r['name']:28s} {r.get('skipped') or r.get('error')}", flush=True)
        result["datasets"][name] = {"pairs": pairs.n_pairs, "cells": pairs.cells, "records": recs}
        Path(out_path).write_text(json.dumps(result, indent=1))
    # side by side: OpenCL kernel time / CUDA twin's kernel time
    for name, d in result["datasets"].items():
        by = {r["name"]: r for r in d["records"] if "kernel_s" in r}
        for n, r in by.items():
            twin = by.get(n.replace("opencl-", "cuda-", 1))
            if n.startswith("opencl-") and twin:
                r["ratio_to_cuda_kernel"] = r["kernel_s"] / twin["kernel_s"]
                print(f"{name:5s} {n:28s} opencl/cuda kernel = {r['ratio_to_cuda_kernel']:.2f}")
    Path(out_path).write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
