"""cuda-subwarp timing probes for issue 13 (points 5 and 6), run on the GPU machine:

percall  1m cut into its 110 active regions (``--chunking original``), one run() per region as
         HaplotypeCaller calls the Pair-HMM: per-call wall, the GPU's span and the host's share,
         per pass; then a cProfile of one pass (where the host time goes). ``--in-flight 1,4,8``:
         also each pass with up to N calls submitted at once (the runner's ``--in-flight``
         window): its wall time and the sum of its calls' kernel times.
cell     the same 110 calls through the runner's cell (``run_cell``, no cross-check; in this
         process, right after percall): per call per pass, per ``--in-flight`` N, and the garbage
         collections during its passes -- the runner's own cost is the difference to percall.
spread   a multi-chunk set (equal-64, 1.95e6 pairs, 5 chunks) run back to back, after 2 s idle
         (clock ramp?) and with one staging thread (thread contention?): per pass the kernel time
         (union of the launches' own events), ``kernel_span_s`` (the former measure: each chunk
         from its upload's end, host enqueue gaps included) and the SM clock before and after.

    source .device/env.sh && python3 scripts/subwarp_timing_probe.py [percall] [cell] [spread]
        [--in-flight 1,4,8] [--json F]
"""
from __future__ import annotations

import argparse
import json
import statistics
import time

from hmmbench.apis import cuda as glue
from hmmbench.pairhmm import cuda_subwarp as sw
from hmmbench.pairhmm import cuda_subwarp_variants as swv
from hmmbench.pairhmm.datasets import resolve
from hmmbench.pairhmm.datasets.chunking import launches
from probe_profile import profile_calls  # scripts/, beside this file


def spread(values) -> dict:
    values = sorted(values)
    return {"min": values[0], "median": statistics.median(values), "max": values[-1],
            "p90": values[int(0.9 * (len(values) - 1))]}


def ms(d: dict) -> str:
    return " / ".join(f"{d[k] * 1e3:.3f}" for k in ("min", "median", "max")) + " ms"


def in_flight_passes(b, regions, passes: int, n: int) -> dict:
    """Passes with up to ``n`` calls outstanding: wall per pass, summed kernel time per pass."""
    from hmmbench.runner.cell import run_launches
    run_launches(b, regions, n)  # warm-up: the lanes' buffers and streams
    walls, kernels = [], []
    for _ in range(passes):
        outs, wall = run_launches(b, regions, n)
        walls.append(wall)
        kernels.append(sum(ex.timing["kernel"] for ex in outs))
    out = {"pass_total_s": spread(walls), "pass_kernel_sum_s": spread(kernels)}
    print(f"percall in-flight {n}: pass total {ms(out['pass_total_s'])}, its calls' kernel "
          f"times summed {ms(out['pass_kernel_sum_s'])} (min/median/max)")
    return out


def percall(passes: int, in_flight=(1,)) -> dict:
    regions = launches(resolve("1m").load(), "original")
    b = swv.backends()[0]
    for p in regions:  # warm-up: compiles, allocates
        b.run(p)
    walls, host, kernels, totals = [], [], [], []
    for _ in range(passes):
        t_pass = time.perf_counter()
        for p in regions:
            t0 = time.perf_counter()
            ex = b.run(p)
            w = time.perf_counter() - t0
            walls.append(w)
            host.append(w - ex.info["gpu_span_s"])
            kernels.append(ex.timing["kernel"])
        totals.append(time.perf_counter() - t_pass)
    out = {"calls": len(regions), "passes": passes, "pass_total_s": spread(totals),
           "call_wall_s": spread(walls), "call_wall_minus_gpu_span_s": spread(host),
           "call_kernel_s": spread(kernels), "profile": profile_calls(b.run, regions, 20)}
    print(f"percall: {len(regions)} calls per pass, {passes} passes: pass total {ms(out['pass_total_s'])}"
          f" (min/median/max); per call wall {ms(out['call_wall_s'])}, of it host only "
          f"(wall - GPU span) {ms(out['call_wall_minus_gpu_span_s'])}, kernel "
          f"{ms(out['call_kernel_s'])}")
    print(out["profile"])
    out["in_flight"] = {n: in_flight_passes(b, regions, passes, n) for n in in_flight if n > 1}
    b.close()
    return out


def spread_probe(n: int, name: str) -> dict:
    pairs = resolve(name).load()
    rows = {}
    for label, idle, threads in (("back-to-back", 0.0, 0), ("after 2 s idle", 2.0, 0),
                                 ("one staging thread", 0.0, 1)):
        b = swv.backends()[0]
        b.prep_threads = threads
        b.run(pairs)  # warm-up
        passes = []
        for _ in range(n):
            time.sleep(idle)
            before = glue.sm_clock_mhz()
            ex = b.run(pairs)
            passes.append({"kernel_s": ex.timing["kernel"],
                           "kernel_span_s": ex.info["kernel_span_s"],
                           "float32_kernel_s": ex.info["float32_kernel_s"],
                           "prep_wait_s": ex.info["prep_wait_s"],
                           "clock_before": before, "clock_after": glue.sm_clock_mhz()})
        b.close()
        k = spread([p["kernel_s"] for p in passes])
        s = spread([p["kernel_span_s"] for p in passes])
        clocks = [p["clock_before"] for p in passes if p["clock_before"]]
        print(f"spread {label:20s} kernel {ms(k)} ({pairs.cells / k['median'] / 1e9:.0f} GCUPS); "
              f"former span measure {ms(s)}; SM clock before {min(clocks, default=0)}-"
              f"{max(clocks, default=0)} MHz; chunks {ex.info['chunks']}")
        rows[label] = {"passes": passes, "kernel_s": k, "kernel_span_s": s}
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("parts", nargs="*", default=["percall", "spread"])
    ap.add_argument("--passes", type=int, default=20)
    ap.add_argument("--in-flight", default="1",
                    help="percall: also passes with up to N calls outstanding (e.g. 1,4,8)")
    ap.add_argument("--spread-set", default="equal-64@1953125",
                    help="the multi-chunk set of the spread probe")
    ap.add_argument("--json")
    args = ap.parse_args()
    result = {"gpu": glue.device_attributes()["name"]}
    if "percall" in args.parts:
        result["percall"] = percall(args.passes,
                                    [int(x) for x in args.in_flight.split(",") if x.strip()])
    if "cell" in args.parts:
        from subwarp_host_probe import cell_passes  # scripts/, beside this file
        b = swv.backends()[0]
        result["cell"] = {}
        for n in [int(x) for x in args.in_flight.split(",") if x.strip()]:
            cell = result["cell"][n] = cell_passes(b, n, args.passes)
            print(f"cell in-flight {n}: {cell['us_per_call']['median']:.1f} us per call "
                  f"(min {cell['us_per_call']['min']:.1f}, max {cell['us_per_call']['max']:.1f}; "
                  f"{cell['repeats']} passes); stages per pass (ms) "
                  + ", ".join(f"{k} {v:.2f}" for k, v in cell["stage_ms_per_pass"].items())
                  + f"; garbage collections by generation {cell['gc_collections']}")
        b.close()
    if "spread" in args.parts:
        result["spread"] = spread_probe(max(5, args.passes // 2), args.spread_set)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(result, fh, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
