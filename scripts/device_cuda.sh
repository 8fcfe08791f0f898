#!/usr/bin/env bash
# CUDA backends on the GPU machine: tests, full cross-check on the real sets, kernel timing.
#
#   source .device/env.sh && bash scripts/device_cuda.sh [PHASES] [BACKEND_GLOB] [PAIRS]
#
# PHASES: comma list of test, check, time, sweep, profile, runner, runner-synth
# (default test,check,time). runner: `hmmbench suite run cuda-real-sets` (the cuda-[imw]* Ren
# families on tiny/10s/1m, one launch per batch; $OUT/cuda-real-sets.json); runner-synth: `hmmbench suite run
# cuda-128x256` (ren16-t1.8@1000000, one merged launch per chunk; $OUT/cuda-128x256.json).
# check/time/sweep/profile are development drivers (unregistered variants, ncu), not suites.
# sweep: kernel GCUPS of unregistered variants (inter-task vec/tile, block sizes, pairs per block)
# on the 128x256 set and on 1m, to choose the registered parameters.
# profile: SASS load/store counts and Nsight Compute sections (when ncu exists) for PROFILE_BACKENDS
# (default cuda-inter-tile4,cuda-inter-tile8) on 100k pairs of 128x256. BACKEND_GLOB picks
# backends of check/time (default 'cuda-*'). PAIRS: pairs of the 128x256 timing set (default 1000000).
# Data: HMMBENCH_DATA_PATH, else .data/pairhmm (a git-ignored copy carried to the device) or
# ../shared/data/pairhmm. Logs and JSON go to $OUT (default ./device-out).
set -o pipefail
PHASES=${1:-test,check,time}
GLOB=${2:-cuda-*}
PAIRS=${3:-1000000}
OUT=${OUT:-$PWD/device-out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
if [ -z "$HMMBENCH_DATA_PATH" ]; then
    for d in "$PWD/.data/pairhmm" "$PWD/../shared/data/pairhmm"; do
        [ -f "$d/tiny.in" ] && export HMMBENCH_DATA_PATH=$d && break
    done
fi
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv \
    | tee "$OUT/gpu.txt"

case ",$PHASES," in *,test,*)
    python3 -m pytest tests/test_cuda_host.py tests/test_cuda_device.py -q --tb=short -rfE \
        -p no:cacheprovider 2>&1 | tee "$OUT/pytest.log" | tail -40 ;;
esac

case ",$PHASES," in *,check,*|*,time,*|*,sweep,*)
python3 - "$PHASES" "$GLOB" "$PAIRS" "$OUT" <<'PY' 2>&1 | tee "$OUT/driver.log"
"""Full cross-check on tiny/10s/1m, then kernel-only GCUPS on the 128x256 set (medians)."""
import fnmatch, json, os, sys, time
from pathlib import Path
import numpy as np
from cpu_reference.pairhmm import forward_log10
from hmmbench.pairhmm import cuda
from hmmbench.apis import cuda as cuda_api
from hmmbench.pairhmm.datasets.blockfmt import load_block
from hmmbench.pairhmm.datasets.synthetic import generate_fixed

phases, glob, n_pairs, out = sys.argv[1].split(","), sys.argv[2], int(float(sys.argv[3])), Path(sys.argv[4])
chosen = [b for b in cuda.backends() if fnmatch.fnmatchcase(b.name, glob)]
data = Path(os.environ["HMMBENCH_DATA_PATH"])
print("GPU:", cuda_api.gpu_name(), cuda_api.device_attributes())
results = {"gpu": cuda_api.gpu_name(), "check": {}, "time": {}}

if "check" in phases:
    for ds in ("tiny.in", "10s.in", "1m.in"):
        pairs = load_block(data / ds)
        t = time.perf_counter(); ref = forward_log10(pairs, "float64")
        print(f"{ds}: {pairs.n_pairs} pairs, reference {time.perf_counter() - t:.1f} s")
        for b in chosen:
            try:
                ex = b.run(pairs)
                err = np.abs(ex.log10 - ref)
                worst = float(np.nanmax(np.where(np.isfinite(err), err, np.inf)))
                rec = {"max_abs_err": worst, "n_over": int((~(err <= 1e-4)).sum()),
                       "n_fallback": ex.n_fallback, "kernel_s": ex.timing["kernel"],
                       "gcups_kernel": pairs.cells / ex.timing["kernel"] / 1e9}
            except Exception as exc:  # noqa: BLE001
                rec = {"error": f"{type(exc).__name__}: {exc}"}
            results["check"].setdefault(b.name, {})[ds] = rec
            print(f"  {b.name:26s} {rec}")
            b.close()

if "time" in phases:
    t = time.perf_counter()
    pairs = generate_fixed(128, 256, n_pairs, 1)
    print(f"128x256 set: {pairs.n_pairs} pairs, {pairs.cells:.3e} cells, generated in "
          f"{time.perf_counter() - t:.1f} s")
    sample = np.random.default_rng(0).choice(pairs.n_pairs, min(2000, pairs.n_pairs), replace=False)
    ref = forward_log10(pairs.subset_pairs(sample), "float64")
    for b in chosen:
        try:
            b.run(pairs.subset_pairs(np.arange(64)))  # compile + warm up
            runs = []
            for _ in range(3):
                w = time.perf_counter(); ex = b.run(pairs); wall = time.perf_counter() - w
                runs.append(dict(ex.timing, wall=wall, clocks=ex.info["sm_clock_mhz"]))
            k = float(np.median([r["kernel"] for r in runs]))
            err = float(np.abs(ex.log10[sample] - ref).max())
            rec = {"kernel_s": k, "gcups_kernel": pairs.cells / k / 1e9,
                   "median": {s: float(np.median([r[s] for r in runs]))
                              for s in ("prep", "h2d", "kernel", "d2h", "wall")},
                   "clocks": [r["clocks"] for r in runs], "sample_max_abs_err": err,
                   "n_fallback": ex.n_fallback,
                   "resources": {x: ex.info.get(x) for x in ("registers", "local_bytes", "block")}}
        except Exception as exc:  # noqa: BLE001
            rec = {"error": f"{type(exc).__name__}: {exc}"}
        results["time"][b.name] = rec
        print(f"  {b.name:26s} {rec}")
        b.close()

if "sweep" in phases:
    from hmmbench.pairhmm.cuda import InterTask, Wavefront
    variants = [InterTask(t, False, vec=v, name=f"inter-t{t}-v{v}")
                for t in (1, 2, 4, 6, 8) for v in (1, 2, 4)]
    variants += [InterTask(t, True, vec=v, name=f"inter-t{t}-v{v}-sorted")
                 for t in (1, 4, 8) for v in (1, 2, 4)]
    variants += [Wavefront(f"intra-th{th}", "intra-task", threads=th) for th in (64, 128, 256)]
    variants += [Wavefront(f"intra-th{th}-t2", "intra-task", threads=th, tile=2)
                 for th in (32, 64, 128)]
    variants += [Wavefront(f"warp-t{t}", "warp", threads=32, shuffle=True, pass_shared=True,
                           tile=t) for t in (1, 2, 4)]
    variants += [Wavefront(f"multiwarp-ppb{k}-t{t}", "multi-warp", threads=32, shuffle=True,
                           pairs_per_block=k, tile=t) for k in (2, 4, 8) for t in (1, 2)]
    big = generate_fixed(128, 256, n_pairs, 1)
    real = load_block(data / "1m.in")
    ref_real = forward_log10(real, "float64")
    sample = np.random.default_rng(0).choice(big.n_pairs, min(500, big.n_pairs), replace=False)
    ref_big = forward_log10(big.subset_pairs(sample), "float64")
    results["sweep"] = {}
    for b in variants:
        try:
            b.run(real)  # compile + warm up
            ex = b.run(real)
            err_real = float(np.abs(ex.log10 - ref_real).max())
            k_real = ex.timing["kernel"]
            ks = []
            for _ in range(2):
                ex = b.run(big); ks.append(ex.timing["kernel"])
            err_big = float(np.abs(ex.log10[sample] - ref_big).max())
            rec = {"gcups_128x256": big.cells / min(ks) / 1e9, "gcups_1m": real.cells / k_real / 1e9,
                   "err_1m": err_real, "err_128x256": err_big, "prep_128x256": ex.timing["prep"],
                   "registers": ex.info.get("registers"), "block": ex.info.get("block"),
                   "params": b.params}
        except Exception as exc:  # noqa: BLE001
            rec = {"error": f"{type(exc).__name__}: {exc}"}
        results["sweep"][b.name] = rec
        print(f"  sweep {b.name:24s} " + ", ".join(
            f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in rec.items()
            if k != "params"))
        b.close()

(out / "cuda_driver.json").write_text(json.dumps(results, indent=1))
print("\nsummary (GPU: %s)" % results["gpu"])
print(f"{'backend':26s} {'10s err':>9s} {'1m err':>9s} {'1m fb':>5s} {'10s GCUPS':>9s} "
      f"{'1m GCUPS':>9s} {'128x256 GCUPS':>13s} {'wall s':>7s}")
for b in chosen:
    c, tm = results["check"].get(b.name, {}), results["time"].get(b.name, {})
    def g(d, k, f):
        return format(d[k], f) if k in d else "-"
    print(f"{b.name:26s} {g(c.get('10s.in', {}), 'max_abs_err', '9.1e')} "
          f"{g(c.get('1m.in', {}), 'max_abs_err', '9.1e')} {g(c.get('1m.in', {}), 'n_fallback', '5d')} "
          f"{g(c.get('10s.in', {}), 'gcups_kernel', '9.1f')} {g(c.get('1m.in', {}), 'gcups_kernel', '9.1f')} "
          f"{g(tm, 'gcups_kernel', '13.1f')} {format(tm['median']['wall'], '7.2f') if 'median' in tm else '-':>7s}")
PY
;;
esac

case ",$PHASES," in *,profile,*)
    PROFILE_BACKENDS=${PROFILE_BACKENDS:-cuda-inter-tile4,cuda-inter-tile8}
    cat > /tmp/profile_driver.py <<'PY'
import sys
from hmmbench.pairhmm import cuda
from hmmbench.pairhmm.datasets.synthetic import generate_fixed
pairs = generate_fixed(128, 256, 100000, 1)
for b in cuda.backends():
    if b.name in sys.argv[1].split(","):
        ex = b.run(pairs)
        print(b.name, "kernel", ex.timing["kernel"], "GCUPS", pairs.cells / ex.timing["kernel"] / 1e9)
        b.close()
PY
    python3 /tmp/profile_driver.py "$PROFILE_BACKENDS" 2>&1 | tee "$OUT/profile_plain.log"
    if command -v cuobjdump >/dev/null; then
        for f in $(ls ~/.cache/pycuda/*/*.cubin 2>/dev/null); do
            echo "$f: $(cuobjdump -sass "$f" | grep -cE 'LDG|STG') global ld/st"; done | tee "$OUT/sass_counts.log"
    fi
    if command -v ncu >/dev/null; then
        ncu --section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy \
            --section WarpStateStats python3 /tmp/profile_driver.py "$PROFILE_BACKENDS" \
            > "$OUT/ncu.log" 2>&1
        grep -E "inter_task|wavefront|Duration|DRAM Throughput|Memory Throughput|L2 Hit|L1/TEX Hit|Achieved Occupancy|Registers|Stall Long|Warp Cycles Per Issued" "$OUT/ncu.log" | head -80
    else
        echo "ncu not found"
    fi ;;
esac

case ",$PHASES," in *,runner-synth,*)
    python3 -m hmmbench suite run cuda-128x256 --out "$OUT" 2>&1 | tee "$OUT/runner_synth.log" | tail -30 ;;
esac

case ",$PHASES," in *,runner,*)
    # The runner itself (default chunking: one launch per batch).
    python3 -m hmmbench suite run cuda-real-sets --out "$OUT" 2>&1 | tee "$OUT/runner.log" | tail -60 ;;
esac
