"""On the GPU machine: where a ``pipeline`` cell's time goes between its kernels (issue 14: the
first search of query-M1200 sits at the 20x bar; its kernels are ~35 of ~44 ms). The CUDA
backend's device calls (filters, stage decisions, compaction, gathers, Forward, downloads) and
the pipeline's host steps are wrapped: each records the host clock and a CUDA event on entry
and exit, so the printout shows per step when the host issued it and when the GPU reached it
(an event on an idle GPU completes when it is issued: a GPU gap is a step the GPU waited for).

    python3 scripts/profile_pipeline_timeline.py [-d proteins-2e8] [--model query-M1200 ...]
        [--repeats 3] [--json FILE]

Per model: the last of ``--repeats`` timed cells (one untimed first, the database loaded),
each step's host enter / exit and GPU enter / exit in ms from the cell's start, and the sums:
GPU busy inside steps, GPU idle between steps, host time outside device calls.
"""
from __future__ import annotations

import argparse
import json
import time

DEVICE_STEPS = ("ssv_xe", "msv_xj", "vf_xc", "classify", "compact", "gather", "forward",
                "codes", "upload_list", "download_ints")
HOST_STEPS = ("msv_tables", "vf_thresholds", "forward_passes", "outcome", "counts_of")


class Timeline:
    def __init__(self, drv):
        self.drv, self.rows, self.depth = drv, [], 0

    def start(self):
        self.rows.clear()
        self.t0 = time.perf_counter()
        self.e0 = self.drv.Event()
        self.e0.record()

    def wrap(self, owner, name: str, device: bool):
        fn = getattr(owner, name)
        line = self

        def timed(*args, **kw):
            if line.depth:                      # a step inside a step: the outer one counts
                return fn(*args, **kw)
            line.depth += 1
            h0 = time.perf_counter()
            e_in = line.drv.Event()
            e_in.record()
            try:
                return fn(*args, **kw)
            finally:
                e_out = line.drv.Event()
                e_out.record()
                line.rows.append((name, device, h0, time.perf_counter(), e_in, e_out))
                line.depth -= 1
        setattr(owner, name, timed)

    def table(self) -> list:
        self.drv.Context.synchronize()
        out = []
        for name, device, h0, h1, e_in, e_out in self.rows:
            out.append({"step": name, "device": device,
                        "host_in_ms": 1e3 * (h0 - self.t0), "host_out_ms": 1e3 * (h1 - self.t0),
                        "gpu_in_ms": e_in.time_since(self.e0), "gpu_out_ms": e_out.time_since(self.e0)})
        return out


def summary(rows: list, total_ms: float) -> dict:
    busy = sum(r["gpu_out_ms"] - r["gpu_in_ms"] for r in rows if r["device"])
    idle = sum(max(0.0, b["gpu_in_ms"] - a["gpu_out_ms"]) for a, b in zip(rows, rows[1:]))
    host_steps = sum(r["host_out_ms"] - r["host_in_ms"] for r in rows if not r["device"])
    return {"total_ms": total_ms, "gpu_in_steps_ms": busy, "gpu_between_steps_ms": idle,
            "host_steps_ms": host_steps,
            "last_gpu_ms": rows[-1]["gpu_out_ms"] if rows else 0.0}


def main(argv=None) -> int:
    from hmmbench.apis import cuda as glue
    from hmmbench.profile import datasets, pipeline as pl
    from hmmbench.profile.cuda import CudaProfile, TUNED_VARIANT
    from hmmbench.profile.job import ProfileSearch
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-d", "--database", default="proteins-2e8")
    ap.add_argument("--model", action="append")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    seqs = datasets.resolve_database(args.database).load()
    backend = CudaProfile("profile-cuda-warp", "warp-group", warp=True, variant=TUNED_VARIANT)
    dev = backend.device()
    line = Timeline(glue.driver())
    for name in DEVICE_STEPS:
        if hasattr(dev, name):
            line.wrap(dev, name, True)
    for name in HOST_STEPS:
        line.wrap(pl, name, False)
    out = {"gpu": glue.gpu_name(), "database": args.database, "models": {}}
    for model_name in args.model or ["query-M1200", "query-M400"]:
        model, hmm = datasets.resolve_model(model_name).load()
        job = ProfileSearch(model, seqs, "pipeline", hmm, database=args.database)
        backend.run(job)                        # the database loaded, kernels built
        for _ in range(args.repeats):
            line.start()
            t0 = time.perf_counter()
            ex = backend.run(job)
            total = 1e3 * (time.perf_counter() - t0)
            rows = line.table()
        s = summary(rows, total)
        out["models"][model_name] = {"summary": s, "steps": rows, "timing_s": ex.timing}
        print(f"{model_name}: cell {total:.2f} ms; GPU busy in steps {s['gpu_in_steps_ms']:.2f}, "
              f"GPU waiting between steps {s['gpu_between_steps_ms']:.2f}, host steps "
              f"{s['host_steps_ms']:.2f}, last GPU event {s['last_gpu_ms']:.2f} ms", flush=True)
        for r in rows:
            print(f"  {r['step']:14s} {'dev' if r['device'] else 'host'}  host {r['host_in_ms']:7.2f}"
                  f" -> {r['host_out_ms']:7.2f}   gpu {r['gpu_in_ms']:7.2f} -> "
                  f"{r['gpu_out_ms']:7.2f}", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
