"""What a CUDA graph could take off a small ``cuda-subwarp`` call's host path (issue 13 point 4,
session 25), run on the GPU machine: the feasibility probe before the backend's own graphs
(``graph_from``, subwarp_small.py), which it turns off for its plain arm.

A small call (10s, 1m merged) issues its uploads, then ~12 kernel launches, ~10 event records
and the side streams' waits, each a driver call through PyCUDA (~10 us a launch on the H100
host); the GPU waits for them, and the 0.3 / 0.8 ms bars move with the host. Here everything a
call issues after its uploads (layout, bins, recompute queues, the copy back) is captured once
from the stream (``cuStreamBeginCapture``: the side streams join the capture through their event
waits) into a graph, which each later call of the same PairSet on the same lane replays with one
``cuGraphLaunch``: the same kernels and arguments, so the same results (checked against the
plain call). Per set: the plain call's wall (``run()``), and the graph call's -- the same
construction and staging of a :class:`SmallCall`, its uploads, one graph launch, the wait and
the results copied out (no stage events: what the events would cost is the gap between the
two). The arguments a real call changes (counts, grids, scratch) would have to move to device
memory for one graph per plan to serve every call.

    source .device/env.sh && python3 scripts/subwarp_graph_probe.py [--sets 10s,1m]
        [--calls 200] [--json F]
"""
from __future__ import annotations

import argparse
import ctypes
import json
import statistics
import time

import numpy as np
from subwarp_side_bins import sets  # scripts/, beside this file

from hmmbench.apis import cuda as glue
from hmmbench.pairhmm import cuda_subwarp_variants as swv
from hmmbench.pairhmm.subwarp_small import SmallCall

_CU = ctypes.CDLL("libcuda.so.1")
_RELAXED = 2  # CU_STREAM_CAPTURE_MODE_RELAXED


def _ok(rc: int, what: str) -> None:
    if rc != 0:
        raise RuntimeError(f"{what}: CUresult {rc}")


class Captured:
    """The launches of one SmallCall after its uploads, captured from its main stream."""

    def __init__(self, call: SmallCall):
        self.call, self.exec = call, ctypes.c_void_p()
        res, main = call.res, call.fixed.main
        marks = [0]
        plain_mark = res.mark

        def mark(stream):  # the second event (upload end) opens the capture
            marks[0] += 1
            if marks[0] == 2:
                _ok(_CU.cuStreamBeginCapture_v2(ctypes.c_void_p(main.handle), _RELAXED),
                    "cuStreamBeginCapture")
            return plain_mark(stream)
        res.mark = mark
        try:
            call.enqueue()
        finally:
            res.mark = plain_mark
        graph = ctypes.c_void_p()
        _ok(_CU.cuStreamEndCapture(ctypes.c_void_p(main.handle), ctypes.byref(graph)),
            "cuStreamEndCapture")
        _ok(_CU.cuGraphInstantiateWithFlags(ctypes.byref(self.exec), graph,
                                            ctypes.c_ulonglong(0)), "cuGraphInstantiate")


def graph_call(b, ps, lane, args, cap: Captured) -> np.ndarray:
    """One call through the graph: a SmallCall built and staged as run() does, its uploads,
    the graph, the wait, the results."""
    call = SmallCall(b, ps, lane, *args)
    drv, fixed, main = glue.driver(), call.fixed, call.fixed.main
    if call.pageable:
        a0, a1, c0, c1 = call.ends[4:]
        for i, a in enumerate((ps.read_bases, ps.base_qual, ps.ins_qual, ps.del_qual,
                               ps.gcp_qual)):
            drv.memcpy_htod_async(call.dev[i], a[a0:a1], main)
        drv.memcpy_htod_async(call.dev[6], ps.hap_bases[c0:c1], main)
        drv.memcpy_htod_async(call.dev[5], fixed.pinned[call.offs[5]:call.offs[6]], main)
        drv.memcpy_htod_async(call.dev[7], fixed.pinned[call.offs[7]:call.used], main)
    else:
        drv.memcpy_htod_async(fixed.slot, fixed.pinned[:call.used], main)
    _ok(_CU.cuGraphLaunch(cap.exec, ctypes.c_void_p(main.handle)), "cuGraphLaunch")
    main.synchronize()
    return call.host_out.copy()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sets", default="10s,1m")
    ap.add_argument("--calls", type=int, default=200)
    ap.add_argument("--json")
    args = ap.parse_args()
    b = {x.name: x for x in swv.backends()}["cuda-subwarp"]
    b.graph_from = 0  # the plain call (the backend's own graphs came after this probe)
    out = {"gpu": b.device_name(), "calls": args.calls, "sets": {}}
    for label, ps in sets(args.sets.split(",")).items():
        for _ in range(20):
            want = b.run(ps)
        accept = b._accept(ps)
        lane = b._lanes.take(None)
        lane.busy = None
        cap = Captured(SmallCall(b, ps, lane, *accept))
        cap.call.host_out[:] = np.nan  # (the capture ran nothing: the replay must fill it)
        got = graph_call(b, ps, lane, accept, cap)
        same = bool(np.array_equal(got, np.asarray(want.log10)))
        rows = {"plain": [], "graph": []}
        for _ in range(args.calls // 10):  # alternating rounds of 10 calls each
            for name in rows:
                for _ in range(10):
                    t0 = time.perf_counter()
                    if name == "plain":
                        b.run(ps)
                    else:
                        graph_call(b, ps, lane, accept, cap)
                    rows[name].append(time.perf_counter() - t0)
        row = {k: {"median_us": statistics.median(v) * 1e6, "min_us": min(v) * 1e6,
                   "max_us": max(v) * 1e6} for k, v in rows.items()}
        row.update(pairs=ps.n_pairs, results_equal=same)
        out["sets"][label] = row
        print(f"{label}: {ps.n_pairs} pairs, plain {row['plain']['median_us']:.0f} us (min "
              f"{row['plain']['min_us']:.0f}), graph {row['graph']['median_us']:.0f} us (min "
              f"{row['graph']['min_us']:.0f}); results equal {same}", flush=True)
    b.close()
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
