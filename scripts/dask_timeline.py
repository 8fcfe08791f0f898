"""Where a sharded call's time goes (issue 15's efficiency): a generated set through one backend
sharded over 1 and 2 workers of a local Dask cluster, results gathered through the scheduler and
straight from the workers; per pass the client's sum of call walls, the workers' own walls, and
from Dask's task stream each worker's busy time and the gaps between its pieces.

    python3 scripts/dask_timeline.py OUT [SET] [BACKEND]      (default chunks@2e7 cuda-subwarp)

Writes OUT/dask-timeline.json.
"""
from __future__ import annotations

import json
import os
import statistics
import sys
import time


def main(out_dir: str, set_name: str, name: str) -> int:
    import distributed
    from hmmbench import workload
    from hmmbench.cluster.connect import connect
    from hmmbench.cluster.settings import shards_stay
    from hmmbench.cluster.sharded import sharded_values
    pairhmm = workload.get("pairhmm")
    ds = pairhmm.resolve([set_name])[0]
    out: dict = {"set": set_name, "backend": name, "runs": []}
    with connect("local", 2, 120) as (client, kind), shards_stay(client):
        for n in (1, 2):
            # one pass places the shards and compiles (the warm-up); its session runs the rest
            _, session, sb, cds = sharded_values(client, pairhmm, name, ds, n, mode="merged")
            proxies = [p.with_mode("merged") for p in cds.chunks()]
            for direct in (False, True, False, True):
                client.direct_to_workers = direct
                with distributed.get_task_stream(client) as ts:
                    calls = []
                    t0 = time.perf_counter()
                    for p in proxies:
                        t = time.perf_counter()
                        ex = sb.run(p)
                        calls.append(time.perf_counter() - t)
                    total = time.perf_counter() - t0
                runs = [r for r in ts.data if "run_piece" in r["key"]]
                busy, gaps = {}, {}
                for w in sorted({r["worker"] for r in runs}):
                    spans = sorted((s["start"], s["stop"]) for r in runs if r["worker"] == w
                                   for s in r["startstops"] if s["action"] == "compute")
                    busy[w] = sum(b - a for a, b in spans)
                    gaps[w] = [round(1e3 * (spans[i + 1][0] - spans[i][1]), 2)
                               for i in range(len(spans) - 1)]
                transfers = [s["stop"] - s["start"] for r in runs for s in r["startstops"]
                             if s["action"] != "compute"]
                row = {"workers": n, "direct": direct, "total_s": total,
                       "sum_calls_s": sum(calls), "call_ms": [round(1e3 * c, 2) for c in calls],
                       "worker_busy_s": busy, "worker_gaps_ms": gaps,
                       "median_gap_ms": {w: statistics.median(g) if g else None
                                         for w, g in gaps.items()},
                       "other_actions_s": sum(transfers), "stages_last_call": ex.timing}
                out["runs"].append(row)
                print(json.dumps({k: v for k, v in row.items() if k != "call_ms"}), flush=True)
            session.release()
    with open(os.path.join(out_dir, "dask-timeline.json"), "w") as fh:
        json.dump(out, fh, indent=1)
    return 0


if __name__ == "__main__":
    a = sys.argv[1:] + [None, None]
    sys.exit(main(a[0], a[1] or "chunks@2e7", a[2] or "cuda-subwarp"))
