"""Issue 15 on a GPU host: where a sharded profile call's time goes beyond its kernels. One cell
(default proteins-2e8 x LuxC x ssv) through profile-cuda-warp, each way timed per call:

  main      the backend's run in this process's main thread (on the second GPU: the Dask worker
            keeps the first)
  thread    the same call on a thread of a pool, the way a Dask worker runs its tasks
  loop      on the Dask worker, N calls of the task's body inside one task (no round trips)
  dask      the sharded call on 1 worker of a local cluster, split on the client into submit,
            gather and join; with the task's own time, its launches' wall and the kernel (the
            worker quiet as shard mode runs it: statistical profiler paused, GIL switch interval
            0.5 ms; also with the profiler running, and paused at Python's 5 ms interval)
  loop_with_gaps  the looped body with 13 ms of sleep before each call (the device and the
            thread idle as between Dask calls)

and a cProfile of the task's body on the worker (top 30 by cumulative time).

    python3 scripts/dask_task_overhead.py OUT [SET] [MODEL] [KIND]

Writes OUT/dask-task-overhead.json; OVERHEAD_BACKEND names another backend (profile-numpy to try
it on a CPU machine). A file, not a here-document: dask-cuda spawns its workers.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

REPEATS = 15


def summary(rows: list) -> dict:
    """Median, min and max of every field of per-call rows (ms)."""
    return {k: {"median": round(statistics.median(r[k] for r in rows), 3),
                "min": round(min(r[k] for r in rows), 3), "max": round(max(r[k] for r in rows), 3)}
            for k in rows[0]}


def embedded(b, job, call) -> list:
    rows = []
    for i in range(REPEATS + 1):
        t = time.perf_counter()
        ex = call(b.run, job)
        wall = time.perf_counter() - t
        if i:                                         # the first call is the warm-up
            rows.append({"call_ms": 1e3 * wall, "backend_wall_ms": 1e3 * ex.info.get("wall", wall),
                         "kernel_ms": 1e3 * ex.timing.get("kernel", 0.0)})
    return rows


def task_loop(part, piece, shard, sent, mode, launches_fn, env, reps, gap_s=0.0):
    """On the worker: ``reps`` calls of the task's body in one task, timed (``gap_s`` of sleep
    before each: the device and the thread left idle as between Dask calls), then profiled."""
    import cProfile
    import io
    import pstats
    import time as clock
    from hmmbench.cluster import worker as remote
    rows = []
    for _ in range(reps):
        clock.sleep(gap_s)
        t = clock.perf_counter()
        r = remote.run_piece(part, piece, shard, sent, mode, launches_fn, env)
        rows.append({"call_ms": 1e3 * (clock.perf_counter() - t), "task_ms": 1e3 * r["task"],
                     "wall_ms": 1e3 * r["wall"], "kernel_ms": 1e3 * r["timing"]["kernel"]})
    if gap_s:
        return rows, ""
    prof = cProfile.Profile()
    for _ in range(reps):
        prof.enable()
        remote.run_piece(part, piece, shard, sent, mode, launches_fn, env)
        prof.disable()
    text = io.StringIO()
    pstats.Stats(prof, stream=text).sort_stats("cumulative").print_stats(30)
    return rows, text.getvalue()


def main(out_dir: str, set_name: str, model: str, kind: str) -> int:
    os.environ.setdefault("HMMBENCH_CUDA_DEVICE", "1")    # this process: the second GPU
    from concurrent.futures import ThreadPoolExecutor
    from hmmbench import workload
    from hmmbench.cluster.connect import connect
    from hmmbench.cluster.settings import prompt_messages, quiet_workers, shards_stay
    from hmmbench.cluster.sharded import sharded_values
    from hmmbench.cluster.worker import releases_device
    from hmmbench.registry import select
    name = os.environ.get("OVERHEAD_BACKEND", "profile-cuda-warp")   # e.g. profile-numpy on a CPU
    profile = workload.get("profile")
    args = argparse.Namespace(dataset=[set_name], model=[model], kind=[kind], backend=[name])
    cell = profile.plan(args, select(args.backend, "profile"))[0][0]
    b, job = select([name], "profile")[0], cell.load()
    out: dict = {"cell": cell.description, "repeats": REPEATS}
    out["main"] = summary(embedded(b, job, lambda fn, x: fn(x)))
    with ThreadPoolExecutor(1) as pool:
        out["thread"] = summary(embedded(
            b, job, lambda fn, x: pool.submit(releases_device(fn), x).result()))
    print(json.dumps({k: out[k] for k in ("main", "thread")}), flush=True)
    with connect("local", 1, 120) as (client, _), shards_stay(client), prompt_messages(client):
        _, session, sb, cds = sharded_values(client, profile, name, cell, 1, mode="whole",
                                             args=vars(args))
        placement = cds.placement()
        rows, profiled = client.gather(placement._submit(
            task_loop, 0, 0, 0, sb.inner, "whole", session.launches_fn, session.env, REPEATS))
        out["loop"], out["task_profile"] = summary(rows), profiled
        rows, _ = client.gather(placement._submit(
            task_loop, 0, 0, 0, sb.inner, "whole", session.launches_fn, session.env, REPEATS,
            GAP_S))
        out["loop_with_gaps"] = summary(rows)
        out["dask_profiler_on"] = dask_calls(client, placement, sb)
        # the same calls with the worker's statistical profiler stopped (as shard mode does),
        # then with the GIL handed over every 0.5 ms instead of 5 (a task's driver calls each
        # give it up)
        with quiet_workers(client, switch=0.005):
            out["dask_profiler_off"] = dask_calls(client, placement, sb)
        with quiet_workers(client):               # as shard mode runs
            out["dask"] = dask_calls(client, placement, sb)
        session.release()
    print(json.dumps({k: v for k, v in out.items() if k != "task_profile"}, indent=1))
    print(out["task_profile"])
    with open(os.path.join(out_dir, "dask-task-overhead.json"), "w") as fh:
        json.dump(out, fh, indent=1)
    return 0


#: the idle time before each call of the looped variant: about a Dask call's round trip
GAP_S = 0.013


def dask_calls(client, placement, sb) -> dict:
    """One sharded call per search, timed on the client: submit, gather, join."""
    import numpy as np
    rows = []
    for i in range(REPEATS + 1):
        t0 = time.perf_counter()
        futures = placement._submit_piece(sb, 0, "whole")
        t1 = time.perf_counter()
        results = client.gather(futures)
        t2 = time.perf_counter()
        np.concatenate([np.asarray(r["log10"], np.float64) for r in results])
        t3 = time.perf_counter()
        r = results[0]
        if i:
            rows.append({"call_ms": 1e3 * (t3 - t0), "submit_ms": 1e3 * (t1 - t0),
                         "gather_ms": 1e3 * (t2 - t1), "join_ms": 1e3 * (t3 - t2),
                         "task_ms": 1e3 * r["task"], "wall_ms": 1e3 * r["wall"],
                         "kernel_ms": 1e3 * r["timing"]["kernel"],
                         "result_mb": sum(np.asarray(x["log10"]).nbytes
                                          for x in results) / 1e6})
    return summary(rows)


if __name__ == "__main__":
    a = sys.argv[1:] + [None] * 4
    sys.exit(main(a[0], a[1] or "proteins-2e8", a[2] or "LuxC", a[3] or "ssv"))
