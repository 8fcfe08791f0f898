#!/usr/bin/env bash
# One device call for cuda-subwarp: setup, correctness against the float64 reference, kernel-only
# sweep over equal lengths and (p, k), end-to-end timings (a development driver of unregistered
# configurations; the registered variants are timed by the tool: `hmmbench suite run
# subwarp-variants`, part "tool"). Logs and JSON under $OUT.
#   source .device/env.sh && bash scripts/device_subwarp.sh [pytest] [correct] [double] [sweep] [e2e] [tool]
# (no arguments: all parts). SW_SWEEP_LENGTHS / SW_SWEEP_CELLS / SW_E2E_PIECES / SW_DOUBLE_LENGTHS
# tune the sizes; SW_E2E_SETS="10s 1m" the small end-to-end sets.
set -u
OUT="${OUT:-/tmp/subwarp-out}"
mkdir -p "$OUT"
export HMMBENCH_DATA_PATH="${HMMBENCH_DATA_PATH:-$PWD/shared/data/pairhmm:$PWD/../shared/data/pairhmm}"
export PYTHONUNBUFFERED=1
PARTS="${*:-pytest correct double sweep e2e tool}"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv | tee "$OUT/gpu.txt"
# A fresh machine has an empty PyCUDA cache: compile every kernel the parts use, nvcc in parallel.
python3 - <<'PY' 2>&1 | tee "$OUT/precompile.txt"
import time
from hmmbench.pairhmm import cuda_subwarp as sw
from hmmbench.pairhmm import cuda_subwarp_variants as swv
t = time.time()
variants = swv.backends()
extra = []
for b in variants[:3]:  # the tests' recompute-everything runs (auto, and two element variants)
    x = sw.SubwarpBackend(b.name, bins=b._bins_table, long_config=b._long, emis_table=b._table,
                          recurrence=b._recurrence, small_tiers=b._small_tiers)
    x.recompute_all = True
    extra.append(x)
print("precompiled", sw.precompile(variants + extra), "kernels in", round(time.time() - t, 1), "s")
PY

if [[ " $PARTS " == *" pytest "* ]]; then
  python3 -m pytest tests/test_cuda_subwarp*.py -q -x 2>&1 | tail -15 | tee "$OUT/pytest.txt"
fi

python3 - "$OUT" $PARTS <<'PY' 2>&1 | tee -a "$OUT/driver.log"
import json, os, sys, time
import numpy as np
out_dir, parts = sys.argv[1], set(sys.argv[2:])
from hmmbench.apis import cuda as glue
from hmmbench.pairhmm import cuda_subwarp as sw
from hmmbench.pairhmm import cuda_subwarp_variants as swv
from hmmbench.pairhmm.datasets import resolve
from cpu_reference.pairhmm import forward_log10
results = {"gpu": glue.gpu_name(), "device": glue.device_attributes()}
print("GPU:", results["gpu"], "SMs:", results["device"]["sm_count"])

def save():
    with open(os.path.join(out_dir, "subwarp.json"), "w") as f:
        json.dump(results, f, indent=1, default=str)

def load(name):
    d = resolve(name)
    return d.loader()

# ---------------- correctness ----------------
if "correct" in parts:
    variants = {b.name: b for b in swv.backends()}
    sets = os.environ.get("SW_CORRECT_SETS", "tiny 10s gkl-testdata gatk-java 1m equal-32@512 "
                          "equal-100@512 equal-256@256 shape-1100x700@64 shape-151x521@512 "
                          "ren18-t3.26@512 chunks@20000").split()
    corr = {}
    for name in sets:
        try:
            ps = load(name)
        except Exception as exc:
            print("skip", name, exc); continue
        t = time.time()
        ref = forward_log10(ps, "float64")
        print(f"{name}: {ps.n_pairs} pairs, reference {time.time()-t:.1f}s")
        for vname, b in variants.items():
            if b.refuse_reason(ps):
                continue
            ex = b.run(ps)
            with np.errstate(invalid="ignore"):
                d = np.abs(ex.log10 - ref)
            bad = int(np.sum(~(d <= 1e-4)))
            corr[f"{name}|{vname}"] = {"max_abs": float(np.nanmax(d)) if len(d) else 0.0,
                                      "bad": bad, "n_fallback": ex.n_fallback, "pairs": ps.n_pairs}
            print(f"  {vname:28s} max|d|={corr[f'{name}|{vname}']['max_abs']:.2e} bad={bad} "
                  f"fallback={ex.n_fallback} bins={ex.info.get('bins')}")
    results["correctness"] = corr
    save()

# ---------------- kernel-only sweep ----------------
def kernel_time(backend, ps, repeats=3):
    backend.run(ps)  # warm-up (compiles)
    ks = []
    for _ in range(repeats):
        ex = backend.run(ps)
        ks.append(ex.timing["kernel"])
    return float(np.median(ks)), ex

def best_fixed(row):
    return max((c for c in row if "mb" not in c and c != "auto"), key=lambda c: row[c]["gcups"])

# ---------------- float64 recompute at long lengths ----------------
if "double" in parts:
    res = {}
    for L in [int(x) for x in os.environ.get("SW_DOUBLE_LENGTHS", "512 768 1024").split()]:
        n = int(max(float(os.environ.get("SW_DOUBLE_CELLS", "8e9")) / (L * L), 4096))
        n -= n % 16
        ps = load(f"equal-{L}@{n}")
        for dk in [int(x) for x in os.environ.get("SW_DOUBLE_KS", "8 4").split()]:
            for everything in (False, True):
                b = sw.SubwarpBackend(f"dk{dk}", small_tiers=sw.SMALL_TIERS)
                b.double_k, b.recompute_all = dk, everything
                kt, ex = kernel_time(b, ps)
                f32 = ex.info["float32_kernel_s"]
                row = {"pairs": n, "cells": ps.cells, "kernel_s": kt, "gcups": ps.cells / kt / 1e9,
                       "float32_kernel_s": f32, "fallback": ex.n_fallback,
                       "queues": ex.info["recompute_queues"], "clock": ex.info["sm_clock_mhz"]}
                if everything:  # every pair in float64: the double kernels' own rate
                    row["double_gcups"] = ps.cells / max(kt - f32, 1e-9) / 1e9
                res[f"{L}|k{dk}|{'all' if everything else 'contract'}"] = row
                print(f"double L={L} k={dk} {'all pairs' if everything else 'underflows'}: "
                      f"{row['gcups']:.0f} GCUPS incl. recompute, fallback={ex.n_fallback} "
                      f"float32 {ps.cells / f32 / 1e9:.0f} GCUPS"
                      + (f", float64 kernels {row['double_gcups']:.0f} GCUPS" if everything else ""))
                b.close()
        results["double"] = res
        save()
        del ps

if "sweep" in parts:
    lengths = [int(x) for x in os.environ.get("SW_SWEEP_LENGTHS",
               "32 64 128 192 256 384 448 512 768 896 1024").split()]
    target_cells = float(os.environ.get("SW_SWEEP_CELLS", "4e9"))
    sweep = {}
    for L in lengths:
        n = int(max(target_cells / (L * L), 65536))
        n -= n % 16
        t = time.time()
        ps = load(f"equal-{L}@{n}")
        gen = time.time() - t
        cells = ps.cells
        cands = [] if os.environ.get("SW_SWEEP_AUTO_ONLY") else [
            (p, k) for p in sw.SUPPORTED_P for k in sw.SUPPORTED_K
            if k >= 8 and L <= p * k <= max(4 * L // 3, L + 16)]
        row = {}
        for p, k in cands:
            b = sw.SubwarpBackend(f"p{p}k{k}", bins=((p * k, p, k),), long_config=None)
            try:
                kt, ex = kernel_time(b, ps)
            except Exception as exc:
                print(f"  L={L} p{p}k{k} failed: {exc}"); continue
            row[f"p{p}k{k}"] = {"kernel_s": kt, "gcups": cells / kt / 1e9,
                                "fallback": ex.n_fallback, "clock": ex.info["sm_clock_mhz"]}
            b.close()
        bp, bk = (int(x) for x in best_fixed(row)[1:].split("k")) if row else (0, 0)
        for mb in ((2, 3) if row else ()):
            b = sw.SubwarpBackend(f"p{bp}k{bk}", bins=((bp * bk, bp, bk),), long_config=None,
                                  min_blocks=mb)
            try:
                kt, ex = kernel_time(b, ps)
                row[f"p{bp}k{bk}mb{mb}"] = {"kernel_s": kt, "gcups": cells / kt / 1e9,
                                            "fallback": ex.n_fallback,
                                            "clock": ex.info["sm_clock_mhz"]}
            except Exception as exc:
                print(f"  L={L} p{bp}k{bk} mb{mb} failed: {exc}")
            b.close()
        auto = swv.backends()[0]
        kt, ex = kernel_time(auto, ps)
        f32 = ex.info["float32_kernel_s"]
        row["auto"] = {"kernel_s": kt, "gcups": cells / kt / 1e9, "bins": ex.info["bins"],
                       "clock": ex.info["sm_clock_mhz"], "fallback": ex.n_fallback,
                       "float32_kernel_s": f32, "float32_gcups": cells / f32 / 1e9}
        print(f"  auto L={L}: {cells / kt / 1e9:.0f} GCUPS with {ex.n_fallback} float64 "
              f"recomputes; float32 bins alone {cells / f32 / 1e9:.0f} GCUPS")
        best = max(row, key=lambda c: row[c]["gcups"])
        sweep[L] = {"pairs": n, "cells": cells, "configs": row, "best": best}
        print(f"L={L:5d} pairs={n} gen={gen:.1f}s best={best} {row[best]['gcups']:.0f} GCUPS | " +
              " ".join(f"{c}:{v['gcups']:.0f}" for c, v in sorted(row.items(), key=lambda kv: -kv[1]['gcups'])))
        results["sweep"] = sweep
        save()
        del ps

# ---------------- end-to-end ----------------
def e2e(backend, ps, repeats=15):
    backend.run(ps)
    rows = []
    for _ in range(repeats):
        t = time.perf_counter()
        ex = backend.run(ps)
        wall = time.perf_counter() - t
        rows.append({**ex.timing, "wall": wall})
    med = {k: float(np.median([r[k] for r in rows])) for k in rows[0]}
    return med, ex

if "e2e" in parts:
    e2e_res = {}
    for name in os.environ.get("SW_E2E_SETS", "10s 1m").split():
        ps = load(name)
        for b in swv.backends()[:int(os.environ.get("SW_E2E_VARIANTS", "6"))]:
            med, ex = e2e(b, ps)
            e2e_res[f"{name}|{b.name}"] = {**med, "cells": ps.cells, "fallback": ex.n_fallback}
            print(f"{name:4s} {b.name:28s} wall={med['wall']*1e3:.3f}ms prep={med['prep']*1e3:.3f} "
                  f"h2d={med['h2d']*1e3:.3f} kernel={med['kernel']*1e3:.3f} d2h={med['d2h']*1e3:.3f} "
                  f"kernel-GCUPS={ps.cells/med['kernel']/1e9:.0f} wall-GCUPS={ps.cells/med['wall']/1e9:.0f}")
    results["e2e"] = e2e_res
    save()
    # Host pipeline settings on the first pieces of the NA12878-sized set (kept in memory).
    tune = [tuple(int(x) for x in t.split("x")) for t in os.environ.get("SW_E2E_TUNE", "").split()]
    if tune:
        d = resolve("chunks-na12878")
        kept = []
        for p in d.chunk_loader():
            kept.append(p)
            if len(kept) >= int(os.environ.get("SW_TUNE_PIECES", "6")):
                break
        tcells = sum(p.cells for p in kept)
        results["e2e_tune"] = {}
        for threads, chunk, *ramp in tune:
            b = sw.SubwarpBackend(f"t{threads}c{chunk}", small_tiers=sw.SMALL_TIERS, chunk_pairs=chunk)
            b.prep_threads = threads
            b.ramp_chunks = bool(ramp[0]) if ramp else True
            b.run(kept[0])
            walls, kern, prep = [], 0.0, 0.0
            for p in kept:
                t0 = time.perf_counter(); ex = b.run(p); walls.append(time.perf_counter() - t0)
                kern += ex.timing["kernel"]; prep += ex.timing["prep"]
            w = sum(walls)
            results["e2e_tune"][f"{threads}x{chunk}x{int(b.ramp_chunks)}"] = {
                "wall": w, "kernel": kern, "prep": prep}
            print(f"tune threads={threads} chunk_pairs={chunk} ramp={int(b.ramp_chunks)}: "
                  f"{len(kept)} pieces wall={w:.3f}s "
                  f"kernel={kern:.3f}s prep(work)={prep:.3f}s wall-TCUPS={tcells / w / 1e12:.2f}")
            b.close()
        del kept
        save()
    # NA12878-sized chunk set: each piece generated (not timed), then run (timed), then dropped.
    d = resolve("chunks-na12878")
    n_pieces = int(os.environ.get("SW_E2E_PIECES", "1000"))
    b = swv.backends()[0]
    if os.environ.get("SW_E2E_THREADS"):
        b.prep_threads = int(os.environ["SW_E2E_THREADS"])
    if os.environ.get("SW_E2E_CHUNK"):
        b.chunk_pairs = int(os.environ["SW_E2E_CHUNK"])
    tot = {"prep": 0.0, "h2d": 0.0, "kernel": 0.0, "d2h": 0.0, "wall": 0.0, "float32_kernel": 0.0,
           "gpu_span": 0.0}
    cells = pairs = fb = pieces = 0
    gen = 0.0
    t = time.time()
    for i, p in enumerate(d.chunk_loader()):
        gen += time.time() - t
        if i == 0:
            b.run(p)  # warm-up: compiles, allocates
            b.profile_bins = True  # per-bin kernel times on this piece (bins serialized)
            prof = b.run(p).info["bin_profile"]
            b.profile_bins = False
            results["bin_profile"] = prof
            for label, v in prof.items():
                print(f"  bin {label:22s} {v['cells']:.3e} cells {v['seconds']*1e3:8.2f} ms "
                      f"{v['cells'] / max(v['seconds'], 1e-12) / 1e9:6.0f} GCUPS")
        t0 = time.perf_counter()
        ex = b.run(p)
        w = time.perf_counter() - t0
        for k in ("prep", "h2d", "kernel", "d2h"):
            tot[k] += ex.timing[k]
        tot["wall"] += w
        tot["float32_kernel"] += ex.info["float32_kernel_s"]
        tot["gpu_span"] += ex.info["gpu_span_s"]
        cells += p.cells; pairs += p.n_pairs; fb += ex.n_fallback; pieces += 1
        del p
        if pieces >= n_pieces:
            break
        t = time.time()
    results["chunks"] = {**tot, "cells": cells, "pairs": pairs, "fallback": fb,
                         "pieces": pieces, "generation_s": gen}
    print(f"chunks-na12878 {pieces} pieces: {pairs} pairs {cells:.3e} cells (generation {gen:.0f}s, "
          f"not timed) wall={tot['wall']:.3f}s prep={tot['prep']:.3f} h2d={tot['h2d']:.3f} "
          f"kernel={tot['kernel']:.3f} (float32 bins {tot['float32_kernel']:.3f}) d2h={tot['d2h']:.3f} "
          f"gpu-span={tot['gpu_span']:.3f} wall-TCUPS={cells/tot['wall']/1e12:.2f} "
          f"kernel-TCUPS={cells/tot['kernel']/1e12:.2f} fallback={fb}")
    save()
print("driver done")
PY

if [[ " $PARTS " == *" tool "* ]]; then  # the tool itself: $OUT/subwarp-variants.json
  python3 -m hmmbench suite run subwarp-variants --out "$OUT" 2>&1 | tail -40
fi

