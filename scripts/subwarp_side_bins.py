"""Two settings of one ``cuda-subwarp`` attribute in the same process (issue 13 point 4: 10s and
1m merged), run on the GPU machine. By default a small call's bins side by side or one after the
other: ``cuda-subwarp`` runs them on streams of their own from ``side_bins_from`` pairs
(``subwarp_small.SIDE_BINS_FROM``); a value past the input's size gives the single-stream path
of before. ``--setting NAME=A,B`` compares two values of another integer attribute (session 11:
``pool_staging_from`` of commit a1402fd, a one-chunk call staged by the worker threads or by the
calling thread; reverted after its run, docs/evidence/subwarp-pool-staging-h100.json).

Both settings on the same backend, in alternating rounds of ``--calls`` calls each (so drifts of
the host or the clock hit both alike): per call the wall of ``run()``, the prep, kernel stage and
GPU span; medians with min and max over all calls, and every result of the two settings compared
(equal to the bit). Development figures beside the tool's own run of the same sets.

    source .device/env.sh && python3 scripts/subwarp_side_bins.py [--sets 10s,...]
        [--setting NAME=A,B] [--json F]
"""
from __future__ import annotations

import argparse
import json
import statistics
import time

import numpy as np

from hmmbench.pairhmm import cuda_subwarp as sw
from hmmbench.pairhmm import cuda_subwarp_variants as swv
from hmmbench.pairhmm.datasets import resolve
from hmmbench.pairhmm.datasets.chunking import launches
from hmmbench.pairhmm.model import PairSet

OFF = 1 << 40  # side_bins_from past any input: the bins on the main stream, one after another


def sets(names: list) -> dict:
    """{label: PairSet}: whole sets, and ``1m-regionsN`` = 1m's first N region calls joined (what
    cuda-subwarp-batched runs with N calls in flight)."""
    out = {}
    for name in names:
        if name.startswith("1m-regions"):
            n = int(name[len("1m-regions"):])
            out[name] = PairSet.concatenate(launches(resolve("1m").load(), "original")[:n])
        else:
            out[name] = resolve(name).load()
    return out


def stats(xs: list) -> dict:
    return {"median": statistics.median(xs), "min": min(xs), "max": max(xs), "n": len(xs)}


def reference_error(ps: PairSet, got: np.ndarray, sample: int) -> dict:
    """Worst |delta log10| of ``sample`` evenly spread pairs against the float64 reference
    (pairs whose reference is finite) and how many of them are over 1e-4."""
    from cpu_reference.pairhmm import forward_log10
    idx = np.unique(np.linspace(0, ps.n_pairs - 1, min(sample, ps.n_pairs)).astype(np.int64))
    ref = forward_log10(ps.subset_pairs(idx), "float64")
    fin = np.isfinite(ref)
    d = np.abs(got[idx][fin] - ref[fin])
    return {"pairs": int(fin.sum()), "max_abs_err": float(d.max(initial=0.0)),
            "over_1e-4": int(np.sum(~(d <= 1e-4)))}


def measure(b, ps: PairSet, rounds: int, calls: int, name: str, modes: dict,
            sample: int = 0) -> dict:
    """Alternating rounds of ``calls`` calls with the backend's attribute ``name`` set to each
    of ``modes`` ({label: value})."""
    first = {}
    for mode, at in modes.items():  # warm-up (compiles, allocates) and the results
        setattr(b, name, at)
        ex = b.run(ps)
        first[mode] = ex
    got: dict = {m: {"wall": [], "prep": [], "kernel": [], "gpu_span": []} for m in modes}
    for _ in range(rounds):
        for mode, at in modes.items():
            setattr(b, name, at)
            for _ in range(calls):
                t0 = time.perf_counter()
                ex = b.run(ps)
                got[mode]["wall"].append(time.perf_counter() - t0)
                got[mode]["prep"].append(ex.timing["prep"])
                got[mode]["kernel"].append(ex.timing["kernel"])
                got[mode]["gpu_span"].append(ex.info["gpu_span_s"])
    a, c = (first[m] for m in modes)
    checked = {m: reference_error(ps, first[m].log10, sample) for m in modes} if sample else {}
    return {"pairs": ps.n_pairs, "bins": a.info["bins"], "checked": checked,
            "bin_streams": {m: first[m].info.get("bin_streams", 1) for m in modes},
            "results_equal": bool(np.array_equal(a.log10, c.log10, equal_nan=True)),
            **{m: {k: stats(v) for k, v in got[m].items()} for m in modes}}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sets", default="10s,1m-regions8,1m-regions16")
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--calls", type=int, default=20)
    ap.add_argument("--setting", default=f"side_bins_from={sw.SIDE_BINS_FROM},{OFF}",
                    help="NAME=A,B: the backend attribute and its two values")
    ap.add_argument("--check", type=int, default=0,
                    help="pairs of each set checked against the float64 reference per setting")
    ap.add_argument("--json")
    args = ap.parse_args()
    name, values = args.setting.split("=")
    a, c = (int(v) for v in values.split(","))
    modes = ({"side_by_side": a, "one_stream": c} if name == "side_bins_from"
             else {f"{name}={a}": a, f"{name}={c}": c})
    b = {x.name: x for x in swv.backends()}["cuda-subwarp"]
    if not hasattr(b, name):  # setattr would make one, and the A/B compare the code with itself
        ap.error(f"--setting {name}: cuda-subwarp has no such attribute")
    out = {"gpu": b.device_name(), "setting": name, "values": [a, c],
           "side_bins_from": sw.SIDE_BINS_FROM, "rounds": args.rounds, "calls": args.calls,
           "sets": {}}
    for label, ps in sets(args.sets.split(",")).items():
        row = out["sets"][label] = measure(b, ps, args.rounds, args.calls, name, modes,
                                            args.check)
        line = ", ".join(f"{m} wall {row[m]['wall']['median'] * 1e6:.0f} us prep "
                         f"{row[m]['prep']['median'] * 1e6:.0f} us kernel "
                         f"{row[m]['kernel']['median'] * 1e6:.0f} us" for m in modes)
        print(f"{label} ({row['pairs']} pairs, bins {row['bins']}, streams "
              f"{row['bin_streams']}): {line}; equal {row['results_equal']}; checked "
              f"{row['checked']}", flush=True)
    b.close()
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
