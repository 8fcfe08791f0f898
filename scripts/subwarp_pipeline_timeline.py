"""The timeline of one multi-chunk ``cuda-subwarp`` call (issue 13 point 4), run on the GPU
machine: per chunk when its staging tasks ran (host clock, per worker thread), when the main
thread waited for them, when it issued the chunk's upload, and when the GPU ran its upload and
its kernels (its events, placed on the host clock by the call's start event, recorded on an
idle stream). Shows whether the GPU waits for the host's staging, and for which chunk.

    source .device/env.sh && python3 scripts/subwarp_pipeline_timeline.py [--set chunks@5e6]
        [--piece 0] [--setting NAME=A,B] [--fixed NAME=V] [--calls 5] [--json F]

``--setting NAME=A,B``: an integer attribute of the backend (session 12: ``stage_pieces=1,8``
of commit 4171096, since removed; session 15: ``stream_by_thread``, ``stream_pieces``,
``ramp_chunks``, ``prep_threads``), each value's call timed after ``--calls`` warm calls, the
values alternating; without it the backend as it is. ``--fixed NAME=V``: another attribute set
for all of them.
"""
from __future__ import annotations

import argparse
import json
import threading
import time

from hmmbench.pairhmm import cuda_subwarp as sw
from hmmbench.pairhmm import cuda_subwarp_variants as swv
from hmmbench.pairhmm import subwarp_call as call_mod
from hmmbench.pairhmm.datasets import resolve


class Recorder:
    """Wraps SubwarpCall's staging, waits and uploads with host-clock records."""

    def __init__(self):
        self.rows: list = []
        self.on = False
        cls = call_mod.SubwarpCall
        self._orig = {n: getattr(cls, n) for n in ("_stage_part", "_stage_rows", "_upload",
                                                   "enqueue", "__init__", "finish", "_times")}
        rec = self

        def _stage_part(call, c, tasks, *piece):
            t0 = time.perf_counter()
            out = rec._orig["_stage_part"](call, c, tasks, *piece)
            rec.add("stage", c, t0, time.perf_counter(), thread=threading.get_ident(),
                    tasks=list(tasks))
            return out

        def _stage_rows(call, k, n):  # the first chunk staged by thread
            t0 = time.perf_counter()
            out = rec._orig["_stage_rows"](call, k, n)
            rec.add("stage", 0, t0, time.perf_counter(), thread=threading.get_ident(),
                    tasks=["rows", k, n])
            return out

        def _upload(call, c, slot):  # waits for the chunk's staging, issues its copies
            t0 = time.perf_counter()
            out = rec._orig["_upload"](call, c, slot)
            rec.add("wait", c, t0, time.perf_counter())
            return out

        def enqueue(call, c):
            t0 = time.perf_counter()
            out = rec._orig["enqueue"](call, c)
            rec.add("enqueue", c, t0, time.perf_counter())
            return out

        def __init__(call, *a, **k):
            t0 = time.perf_counter()
            rec._orig["__init__"](call, *a, **k)
            rec.t_start = time.perf_counter()  # right after the start event's record
            rec.add("init", -1, t0, rec.t_start)
            rec.call = call

        def timed(name):
            def wrapper(call, *a):
                t0 = time.perf_counter()
                out = rec._orig[name](call, *a)
                rec.add(name, -1, t0, time.perf_counter())
                return out
            return wrapper

        for n, f in (("_stage_part", _stage_part), ("_stage_rows", _stage_rows),
                     ("_upload", _upload),
                     ("enqueue", enqueue), ("__init__", __init__), ("finish", timed("finish")),
                     ("_times", timed("_times"))):
            setattr(cls, n, f)

    def add(self, what, c, t0, t1, **kw):
        if self.on:
            self.rows.append({"what": what, "chunk": c, "t0": t0, "t1": t1, **kw})

    def timeline(self) -> dict:
        """The recorded host rows and the call's GPU spans, in ms from the call's start."""
        call, base = self.call, self.t_start
        start = call.start
        host = [{**r, "t0": round((r["t0"] - base) * 1e3, 3),
                 "t1": round((r["t1"] - base) * 1e3, 3)} for r in self.rows]
        threads = {t: i for i, t in enumerate(sorted({r.get("thread") for r in host
                                                      if r.get("thread")}))}
        for r in host:
            if "thread" in r:
                r["thread"] = threads[r["thread"]]
        gpu = [{"what": "h2d", "chunk": c, "t0": round(spans[0][0].time_since(start), 3),
                "t1": round(spans[-1][1].time_since(start), 3)}
               for c, spans in enumerate(call.h2d_spans)]  # a chunk's copies, first to last
        gpu += [{"what": "kernels", "chunk": c, "t0": round(a.time_since(start), 3),
                 "t1": round(b.time_since(start), 3)} for c, (a, b) in enumerate(call.kernel_spans)]
        return {"host": host, "gpu": gpu, "chunk_pairs": call.chunk_pairs}


def summary(tl: dict) -> list:
    """Per chunk: staging window, main-thread wait, upload issue, GPU upload and kernels."""
    out = []
    n = len(tl["chunk_pairs"])
    for c in range(n):
        st = [r for r in tl["host"] if r["what"] == "stage" and r["chunk"] == c]
        wait = [r for r in tl["host"] if r["what"] == "wait" and r["chunk"] == c]
        h2d = [r for r in tl["gpu"] if r["what"] == "h2d" and r["chunk"] == c][0]
        ker = [r for r in tl["gpu"] if r["what"] == "kernels" and r["chunk"] == c][0]
        out.append({"chunk": c, "pairs": tl["chunk_pairs"][c],
                    "staged": [min(r["t0"] for r in st), max(r["t1"] for r in st)],
                    "wait_ms": round(sum(r["t1"] - r["t0"] for r in wait), 3),
                    "h2d": [h2d["t0"], h2d["t1"]], "kernels": [ker["t0"], ker["t1"]]})
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--set", default="chunks@5000000")
    ap.add_argument("--piece", type=int, default=0, help="a lazy set's piece (one call)")
    ap.add_argument("--setting", help="NAME=A,B: a backend attribute and its values")
    ap.add_argument("--fixed", action="append", default=[],
                    help="NAME=V: an integer backend attribute set for every value (repeatable)")
    ap.add_argument("--calls", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json")
    args = ap.parse_args()
    ds = resolve(args.set)
    if getattr(ds, "lazy", False):
        ps = next(p for i, p in enumerate(ds.chunks()) if i == args.piece)
    else:
        ps = ds.load()
    name, values = args.setting.split("=") if args.setting else ("setting", None)
    values = [int(v) for v in values.split(",")] if values else [None]
    rec = Recorder()
    b = {x.name: x for x in swv.backends()}["cuda-subwarp"]
    fixed = dict(f.split("=") for f in args.fixed)
    for attr in (*fixed, *([name] if args.setting else [])):
        if not hasattr(b, attr):  # setattr would make one that nothing reads
            ap.error(f"{attr}: cuda-subwarp has no such attribute")
    for attr, v in fixed.items():
        setattr(b, attr, int(v))
    out = {"gpu": None, "set": args.set, "piece": args.piece, "pairs": ps.n_pairs,
           "setting": name, "fixed": fixed, "runs": []}
    for r in range(args.rounds):
        for v in values:
            if v is not None:
                setattr(b, name, v)
            for _ in range(args.calls):
                b.run(ps)
            rec.rows, rec.on = [], True
            t0 = time.perf_counter()
            ex = b.run(ps)
            wall = time.perf_counter() - t0
            rec.on = False
            tl = rec.timeline()
            fin = {h["what"]: round(h["t1"] - h["t0"], 3) for h in tl["host"]
                   if h["what"] in ("finish", "_times")}
            fin["finish_end"] = [h["t1"] for h in tl["host"] if h["what"] == "finish"][0]
            row = {"round": r, name: v, "wall_ms": round(wall * 1e3, 3), "host_end": fin,
                   "kernel_ms": round(ex.timing["kernel"] * 1e3, 3),
                   "gpu_span_ms": round(ex.info["gpu_span_s"] * 1e3, 3),
                   "prep_wait_ms": round(ex.info["prep_wait_s"] * 1e3, 3),
                   "chunks": summary(tl), "timeline": tl}
            out["runs"].append(row)
            print(f"{name}={v} round {r}: wall {row['wall_ms']} ms, kernel {row['kernel_ms']}, "
                  f"gpu span {row['gpu_span_ms']}, prep wait {row['prep_wait_ms']}, "
                  f"finish {fin}", flush=True)
            for ch in row["chunks"]:
                print("   ", ch, flush=True)
    out["gpu"] = b.device_attrs().get("name")
    b.close()
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
