"""cuda-subwarp's host time per call on a CPU machine (issue 13 point 5): the stand-in driver
(``subwarp_stand_in.py``, nothing computed, every driver call nearly free) runs the host path of
1m's 110 per-region calls (``--chunking original``), so what is measured is the Python that builds
and collects a call. Per call: the driver calls by kind (launch, event record, stream wait, copies,
memset, sync, event time query; one pass after the warm-up), then the host time: the median of
run(); with ``--in-flight N`` also the runner's submit/result window; ``--cell``: the same calls
as the runner's cell runs them (``run_cell``, no cross-check), per call, and the garbage
collections during its timed passes (the runner's own cost per launch is the difference to the
bare loop). ``--profile``: a cProfile of one pass.

    HMMBENCH_DATA_PATH=... python scripts/subwarp_host_probe.py [--tree TREE] [--in-flight 1,4]
        [--passes 20] [--cell] [--profile] [--json F]

``--tree``: the source tree to import (an older commit unpacked with git archive: before/after).
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tree", default=".")
    ap.add_argument("--backend", default="cuda-subwarp")
    ap.add_argument("--in-flight", default="1")
    ap.add_argument("--passes", type=int, default=20)
    ap.add_argument("--cell", action="store_true")
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--json")
    args = ap.parse_args()
    sys.path.insert(0, args.tree)
    import subwarp_stand_in as fake  # scripts/, beside this file
    fake.install()
    fake.quiet()
    from hmmbench.pairhmm import cuda_subwarp as sw
    from hmmbench.pairhmm import cuda_subwarp_variants as swv
    from hmmbench.pairhmm.datasets import resolve
    from hmmbench.pairhmm.datasets.chunking import launches
    regions = launches(resolve("1m").load(), "original")
    b = {x.name: x for x in swv.backends()}[args.backend]
    out = {"tree": args.tree, "backend": b.name, "calls": len(regions), "passes": args.passes}
    out["driver_calls_per_call"] = per_call = driver_calls(fake, b, regions)
    print(f"{b.name}: driver calls per region call: " + ", ".join(
        f"{k} {v:.2f}" for k, v in per_call.items()))
    for n in [int(x) for x in args.in_flight.split(",")]:
        window = _window(n)
        window(b, regions)  # warm-up: plans, buffers, lanes
        per_call = []
        for _ in range(args.passes):
            t0 = time.perf_counter()
            window(b, regions)
            per_call.append((time.perf_counter() - t0) / len(regions))
        us = sorted(x * 1e6 for x in per_call)
        out[f"in_flight_{n}_us_per_call"] = {"min": us[0], "median": statistics.median(us),
                                             "max": us[-1]}
        print(f"{b.name} in-flight {n}: host {statistics.median(us):.1f} us per call "
              f"(min {us[0]:.1f}, max {us[-1]:.1f}; {len(regions)} calls x {args.passes} passes)")
        if args.cell:
            out[f"cell_in_flight_{n}"] = cell = cell_passes(b, n, args.passes)
            print(f"{b.name} in-flight {n} through run_cell: {cell['us_per_call']['median']:.1f} us "
                  f"per call (min {cell['us_per_call']['min']:.1f}); garbage collections in its "
                  f"passes by generation {cell['gc_collections']}")
    if args.profile:
        from probe_profile import profile_calls  # scripts/, beside this file
        out["profile"] = profile_calls(b.run, regions, 25)
        print(out["profile"])
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(out, fh, indent=1)
    return 0


def cell_passes(b, n: int, passes: int, dataset: str = "1m") -> dict:
    """``passes`` timed passes of the runner's cell (``--chunking original``, ``n`` in flight,
    no cross-check): per call the pass total over its launches, and the garbage collections
    that ran during the cell by generation."""
    import gc
    from hmmbench.pairhmm.datasets import resolve
    from hmmbench.runner.cell import run_cell
    from hmmbench.runner.config import RunConfig
    from hmmbench.runner.reference import ReferenceStore
    cfg = RunConfig(chunking="original", repeat=passes, in_flight=n)
    seen: list = []

    def count(phase, info):
        if phase == "start":
            seen.append(info["generation"])
    gc.callbacks.append(count)
    try:
        rec = run_cell(resolve(dataset), b, cfg, ReferenceStore(None, "off (probe)", cfg))
    finally:
        gc.callbacks.remove(count)
    if rec.status not in ("unchecked", "ok"):
        raise RuntimeError(f"run_cell: {rec.status}: {rec.reason}")
    us = sorted(t / rec.launches * 1e6 for t in rec.samples_s["total"])
    return {"us_per_call": {"min": us[0], "median": statistics.median(us), "max": us[-1]},
            "stage_ms_per_pass": {k: v * 1e3 for k, v in rec.timing_s.items()},
            "gc_collections": {g: seen.count(g) for g in (0, 1, 2)}, "repeats": rec.repeats}


def driver_calls(fake, b, regions) -> dict:
    """Driver calls per region call, by kind, over one pass after a warm-up pass."""
    for p in regions:
        b.run(p)
    before = dict(fake.COUNTS)
    for p in regions:
        b.run(p)
    spent = {k: v - before.get(k, 0) for k, v in fake.COUNTS.items()}
    per = {k: spent[k] / len(regions) for k in sorted(spent) if spent[k]}
    per["all"] = sum(per.values())
    return per


def _window(n: int):
    """The calls of one pass: run() one after the other (n = 1), else up to n submitted."""
    if n == 1:
        return lambda b, regions: [b.run(p) for p in regions]
    from hmmbench.runner.cell import run_launches
    return lambda b, regions: run_launches(b, regions, in_flight=n)


if __name__ == "__main__":
    raise SystemExit(main())
