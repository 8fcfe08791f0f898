"""A small call's bins side by side or one after the other (issue 13 point 4: 10s merged), run
on the GPU machine.

``cuda-subwarp`` runs a small call's bins on streams of their own from ``side_bins_from`` pairs
(``subwarp_small.SIDE_BINS_FROM``); setting it past the input's size gives the single-stream
path of before. Both settings on the same backend, in alternating rounds of ``--calls`` calls
each (so drifts of the host or the clock hit both alike): per call the wall of ``run()``, the
kernel stage and the GPU span; medians with min and max over all calls, and every result of the
two settings compared (the same kernels on the same items: equal to the bit). Development
figures beside the tool's own run of the same sets.

    source .device/env.sh && python3 scripts/subwarp_side_bins.py [--sets 10s,...] [--json F]
"""
from __future__ import annotations

import argparse
import json
import statistics
import time

import numpy as np

from hmmbench.pairhmm import cuda_subwarp as sw
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


def measure(b, ps: PairSet, rounds: int, calls: int) -> dict:
    """Alternating rounds of ``calls`` calls with the bins side by side and on one stream."""
    modes = {"side_by_side": sw.SIDE_BINS_FROM, "one_stream": OFF}
    first = {}
    for mode, at in modes.items():  # warm-up (compiles, allocates) and the results
        b.side_bins_from = at
        ex = b.run(ps)
        first[mode] = ex
    got: dict = {m: {"wall": [], "kernel": [], "gpu_span": []} for m in modes}
    for _ in range(rounds):
        for mode, at in modes.items():
            b.side_bins_from = at
            for _ in range(calls):
                t0 = time.perf_counter()
                ex = b.run(ps)
                got[mode]["wall"].append(time.perf_counter() - t0)
                got[mode]["kernel"].append(ex.timing["kernel"])
                got[mode]["gpu_span"].append(ex.info["gpu_span_s"])
    a, c = first["side_by_side"], first["one_stream"]
    return {"pairs": ps.n_pairs, "bins": a.info["bins"],
            "bin_streams": {m: first[m].info["bin_streams"] for m in modes},
            "results_equal": bool(np.array_equal(a.log10, c.log10, equal_nan=True)),
            **{m: {k: stats(v) for k, v in got[m].items()} for m in modes}}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sets", default="10s,1m-regions8,1m-regions16")
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--calls", type=int, default=20)
    ap.add_argument("--json")
    args = ap.parse_args()
    b = {x.name: x for x in sw.backends()}["cuda-subwarp"]
    out = {"gpu": b.device_name(), "side_bins_from": sw.SIDE_BINS_FROM,
           "rounds": args.rounds, "calls": args.calls, "sets": {}}
    for label, ps in sets(args.sets.split(",")).items():
        row = out["sets"][label] = measure(b, ps, args.rounds, args.calls)
        line = ", ".join(f"{m} wall {row[m]['wall']['median'] * 1e6:.0f} us kernel "
                         f"{row[m]['kernel']['median'] * 1e6:.0f} us"
                         for m in ("side_by_side", "one_stream"))
        print(f"{label} ({row['pairs']} pairs, bins {row['bins']}, streams "
              f"{row['bin_streams']}): {line}; equal {row['results_equal']}", flush=True)
    b.close()
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
