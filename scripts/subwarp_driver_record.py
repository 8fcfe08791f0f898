"""Every driver call cuda-subwarp's run() makes, recorded with a stand-in driver (no GPU): kernel
(and the defines it was compiled with), grid, block, stream, arguments, events, waits, copies and
allocations, plus each call's timing and info. Two source trees giving the same record make the
same GPU calls: a refactor of the host path can be checked here before a GPU run.

    python scripts/subwarp_driver_record.py TREE OUT.json BACKEND[,BACKEND...]
    # e.g. the tree at an earlier commit against this one:
    git archive 59bef88 | (mkdir -p /tmp/old && tar -x -C /tmp/old)
    python scripts/subwarp_driver_record.py /tmp/old old.json cuda-subwarp-exp,cuda-subwarp-nostreams
    python scripts/subwarp_driver_record.py . new.json cuda-subwarp,cuda-subwarp-nostreams
    python scripts/subwarp_driver_record.py --compare old.json new.json
    # --compare: every driver call and every call's timing and info alike, apart from "prep"
    # (the host's staging wall time, which differs between runs); exit 1 at the first difference
    # the full path only (small calls too; a tree without the small path ignores it):
    SW_SMALL_BELOW=0 python scripts/subwarp_driver_record.py . full.json cuda-subwarp
    # work items per read instead of per pair (SW_PER_PAIR_BELOW: the backend's per_pair_below):
    SW_PER_PAIR_BELOW=0 python scripts/subwarp_driver_record.py . reads.json cuda-subwarp
    # the 1m regions 4 at a time in flight (the runner's run_launches, one lane each):
    SW_IN_FLIGHT=4 python scripts/subwarp_driver_record.py . inflight.json cuda-subwarp
    # larger sets run by every backend after the regions (multi-chunk calls with the default
    # chunk size: chunks@1e6 is 3 chunks), and the ramp of smaller first chunks:
    SW_SETS=chunks@1e6,shape-100x150@100000 SW_RAMP=1 python scripts/subwarp_driver_record.py ...
    # the staging threads of a larger host (the H100's: 8; slots = threads + 2):
    SW_PREP_THREADS=8 SW_SETS=chunks@3e6 python scripts/subwarp_driver_record.py ...

The stand-in driver is ``subwarp_stand_in.py`` (beside this script; ``subwarp_host_probe.py``
times the host path with it). Inputs: 12 per-region calls of 1m per backend, a multi-tile set, the bin profile, recompute-all,
and a chunked set staged by a worker thread (needs HMMBENCH_DATA_PATH for 1m)."""
import json
import os
import sys

import numpy as np


def compare(path_a: str, path_b: str) -> int:
    """0 if the two records are the same apart from each call's "prep" wall time."""
    def load(path):
        log, calls = json.load(open(path))
        return log, [[[kv for kv in timing if kv[0] != "prep"], info] for timing, info in calls]
    (log_a, calls_a), (log_b, calls_b) = load(path_a), load(path_b)
    for what, a, b in (("driver call", log_a, log_b), ("call's timing and info", calls_a, calls_b)):
        for i, (x, y) in enumerate(zip(a, b)):
            if x != y:
                print(f"{what} {i} differs:\n  {x}\n  {y}")
                return 1
        if len(a) != len(b):
            print(f"{what}s: {len(a)} against {len(b)}")
            return 1
    print(f"same: {len(log_a)} driver calls, {len(calls_a)} calls' timing and info (prep aside)")
    return 0


if sys.argv[1] == "--compare":
    sys.exit(compare(sys.argv[2], sys.argv[3]))
tree = sys.argv[1]
sys.path.insert(0, tree)
from hmmbench.pairhmm import cuda_subwarp as sw
from hmmbench.pairhmm import cuda_subwarp_variants as swv
from hmmbench.pairhmm.datasets import resolve
from hmmbench.pairhmm.datasets.chunking import launches

import subwarp_stand_in as fake  # noqa: E402  (scripts/, beside this file)
fake.install()
LOG, TS = fake.LOG, fake.TS
RES = []

cases = []
regions = launches(resolve("1m").load(), "original")[:12]
extra = [resolve(name).load() for name in os.environ.get("SW_SETS", "").split(",") if name]
for name in sys.argv[3].split(","):
    b = {x.name: x for x in swv.backends()}[name]
    if "SW_SMALL_BELOW" in os.environ:
        b.small_below = int(os.environ["SW_SMALL_BELOW"])
    if "SW_PREP_THREADS" in os.environ:
        b.prep_threads = int(os.environ["SW_PREP_THREADS"])
    if os.environ.get("SW_RAMP"):  # the first chunks 1/8, 1/4, 1/2 of chunk_pairs
        b.ramp_chunks = True
    if "SW_PER_PAIR_BELOW" in os.environ:  # 0: an item per read, not per pair
        b.per_pair_below = int(os.environ["SW_PER_PAIR_BELOW"])
    if "SW_IN_FLIGHT" in os.environ:  # the regions N at a time in flight, as the runner does
        from hmmbench.runner.cell import run_launches
        RES += run_launches(b, regions, in_flight=int(os.environ["SW_IN_FLIGHT"]))[0]
    else:
        for p in regions: RES.append(b.run(p))
    for p in extra: RES.append(b.run(p))
    b.run(resolve("shape-1100x700@64").load())
    b.profile_bins = True
    b.run(resolve("shape-151x521@512").load())
    b.profile_bins = False
    b.recompute_all = True
    b.run(resolve("shape-151x521@300").load())
    b.recompute_all = False
many = sw.SubwarpBackend("many", chunk_pairs=500)
many.prep_threads = 1
many.run(resolve("shape-100x150@3000").load())
out = [LOG, [[sorted(r.timing.items()), sorted((k, v) for k, v in r.info.items() if k not in ("run_wall_s", "prep_wait_s"))] for r in RES]]
json.dump(out, open(sys.argv[2], "w"), default=str)
print(len(LOG), "calls", TS[0], "time_since")
