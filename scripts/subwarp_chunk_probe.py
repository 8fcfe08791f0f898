"""cuda-subwarp's host staging of multi-chunk calls on a CPU machine (issue 13 point 4): the
stand-in driver (``subwarp_stand_in.py``, nothing computed, every driver call nearly free) runs
``hmmbench run -d SET --chunking merged`` 's calls (one ``run()`` per piece of a lazy set such as
chunks@5e6, the whole set otherwise), so what is measured is the host's part: per pass (all the
set's calls) ``prep`` (the staging threads' work, summed), ``prep_wait_s`` (the main thread
waiting for staging), the wall time, and per call the time from ``submit`` to its first upload
(the host work the GPU waits for before anything starts: checks, plan, offsets, the first
chunk's staging). Medians over the timed passes, after one warm-up pass.

    HMMBENCH_DATA_PATH=... python scripts/subwarp_chunk_probe.py [--tree TREE] [--set chunks@5e6]
        [--passes 10] [--threads N] [--json F]

``--tree``: the source tree to import (an older commit unpacked with git archive: before/after;
alternate the two, the figures of a shared machine drift). ``--threads``: the staging threads
(default: the backend's, ``PREP_THREADS``, min(8, cores)).
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
    ap.add_argument("--set", default="chunks@1e6")
    ap.add_argument("--backend", default="cuda-subwarp")
    ap.add_argument("--passes", type=int, default=10)
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--json")
    args = ap.parse_args()
    sys.path.insert(0, args.tree)
    import subwarp_stand_in as fake  # scripts/, beside this file
    fake.install()
    fake.quiet()
    from hmmbench.pairhmm import cuda_subwarp as sw
    from hmmbench.pairhmm import cuda_subwarp_variants as swv
    from hmmbench.pairhmm.datasets import resolve
    ds = resolve(args.set)
    calls = list(ds.chunk_loader()) if ds.loader is None else [ds.load()]
    b = {x.name: x for x in swv.backends()}[args.backend]
    if args.threads:
        b.prep_threads = args.threads
    first_h2d = _first_upload_clock(fake)
    passes = [_one_pass(b, calls, first_h2d) for _ in range(args.passes + 1)][1:]
    n_chunks = sum(len(b.chunk_bounds(p)) for p in calls)
    n_pairs = sum(p.n_pairs for p in calls)
    med = {k: statistics.median(p[k] for p in passes) for k in passes[0]}
    out = {"tree": args.tree, "set": args.set, "backend": b.name, "calls": len(calls),
           "chunks": n_chunks, "pairs": n_pairs, "threads": args.threads or "default",
           "passes": args.passes, "median_ms": {k: v * 1e3 for k, v in med.items()},
           "prep_ms_per_chunk": med["prep"] * 1e3 / n_chunks,
           "prep_ns_per_pair": med["prep"] * 1e9 / n_pairs}
    print(f"{args.set} ({len(calls)} calls, {n_chunks} chunks, {n_pairs} pairs), {b.name}, "
          f"tree {args.tree}: per pass (median of {args.passes}) prep {med['prep'] * 1e3:.1f} ms "
          f"({out['prep_ms_per_chunk']:.2f} ms a chunk, {out['prep_ns_per_pair']:.2f} ns a pair), "
          f"prep wait {med['prep_wait'] * 1e3:.1f} ms, to the first upload "
          f"{med['first_upload'] * 1e3:.2f} ms (summed over calls), "
          f"wall {med['wall'] * 1e3:.1f} ms")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(out, fh, indent=1)
    return 0


def _first_upload_clock(fake) -> list:
    """[clock of the first upload since the last reset to None]: the stand-in's h2d, wrapped."""
    at: list = [None]
    upload = fake.DRIVER.memcpy_htod_async

    def h2d(dst, src, stream):
        if at[0] is None:
            at[0] = time.perf_counter()
        return upload(dst, src, stream)
    fake.DRIVER.memcpy_htod_async = h2d
    return at


def _one_pass(b, calls, first_h2d) -> dict:
    """The set's calls one after the other: their summed prep, prep wait, time from submit to
    the first upload, and the pass's wall time."""
    got = {"prep": 0.0, "prep_wait": 0.0, "first_upload": 0.0}
    t_pass = time.perf_counter()
    for p in calls:
        first_h2d[0] = None
        t0 = time.perf_counter()
        handle = b.submit(p)
        got["first_upload"] += first_h2d[0] - t0
        ex = handle.result()
        got["prep"] += ex.timing["prep"]
        got["prep_wait"] += ex.info["prep_wait_s"]
    got["wall"] = time.perf_counter() - t_pass
    return got


if __name__ == "__main__":
    raise SystemExit(main())
