"""Issue 15's identity check on a GPU host: every value of a sharded run over 1 and 2 workers (or
the counts in CHECK_WORKERS, e.g. 1,2,4) of a local Dask cluster equals the single-process run (every value, not a sample), for cuda-subwarp on
a lazy and an eager set and for profile-cuda-warp on every kind. Writes OUT/identical.json.

    python3 scripts/dask_identical.py OUT

CHECK_PAIRHMM_BACKEND / CHECK_PAIRHMM_SETS / CHECK_PROFILE_BACKEND / CHECK_PROFILE_SET override
the backends and sets (e.g. numpy-f32 and small sets, to try it on a CPU machine). A file, not a
here-document: dask-cuda's worker processes are spawned, and spawning re-imports the main module.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np


def main(out_dir: str) -> int:
    from hmmbench import workload
    from hmmbench.cluster.connect import connect
    from hmmbench.cluster.sharded import sharded_values
    from hmmbench.registry import select
    out: dict = {}
    pairhmm, profile = workload.get("pairhmm"), workload.get("profile")
    counts = [int(n) for n in os.environ.get("CHECK_WORKERS", "1,2").split(",")]
    with connect("local", max(counts), 120) as (client, kind):
        print("cluster:", kind, sorted(client.scheduler_info(n_workers=-1)["workers"]))
        t = time.time()
        name = os.environ.get("CHECK_PAIRHMM_BACKEND", "cuda-subwarp")
        b = select([name])[0]
        # a lazy set (generated piece by piece) and an eager one
        sets = os.environ.get("CHECK_PAIRHMM_SETS", "chunks@6e6 equal-128@100000")
        for set_name in sets.split():
            ds = pairhmm.resolve([set_name])[0]
            single = np.concatenate([b.run(u).log10 for u in ds.chunks()])
            for n in counts:
                got = sharded_values(client, pairhmm, name, ds, n, mode="merged")[0]
                out[f"{name} {set_name} x{n}"] = bool(np.array_equal(got, single))
        name = os.environ.get("CHECK_PROFILE_BACKEND", "profile-cuda-warp")
        args = argparse.Namespace(dataset=[os.environ.get("CHECK_PROFILE_SET", "proteins-2e7")],
                                  model=["PF02826"], kind=["ssv", "msv", "vf"], backend=[name])
        cells, _ = profile.plan(args, select(args.backend, "profile"))
        pb = select([name], "profile")[0]
        for cell in cells:
            single = pb.run(cell.load()).log10
            for n in counts:
                got = sharded_values(client, profile, name, cell, n, mode="whole",
                                     args=vars(args))[0]
                out[f"{name} {cell.description} x{n}"] = bool(
                    np.array_equal(got, single, equal_nan=True))
        out["seconds"] = round(time.time() - t, 1)
    print(json.dumps(out, indent=1))
    with open(os.path.join(out_dir, "identical.json"), "w") as fh:
        json.dump(out, fh, indent=1)
    same = all(v for k, v in out.items() if k != "seconds")
    print("IDENTICAL" if same else "DIFFERENT")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
