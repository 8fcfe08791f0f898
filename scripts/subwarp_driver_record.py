"""Every driver call cuda-subwarp's run() makes, recorded with a stand-in driver (no GPU): kernel
(and the defines it was compiled with), grid, block, stream, arguments, events, waits, copies and
allocations, plus each call's timing and info. Two source trees giving the same record make the
same GPU calls: a refactor of the host path can be checked here before a GPU run.

    python scripts/subwarp_driver_record.py TREE OUT.json BACKEND[,BACKEND...]
    # e.g. the tree at an earlier commit against this one:
    git archive 59bef88 | (mkdir -p /tmp/old && tar -x -C /tmp/old)
    python scripts/subwarp_driver_record.py /tmp/old old.json cuda-subwarp-exp,cuda-subwarp-nostreams
    python scripts/subwarp_driver_record.py . new.json cuda-subwarp,cuda-subwarp-nostreams
    cmp old.json new.json   # host copies' wall ("prep") differs between runs: compare without it

Inputs: 12 per-region calls of 1m per backend, a multi-tile set, the bin profile, recompute-all,
and a chunked set staged by a worker thread (needs HMMBENCH_DATA_PATH for 1m)."""
import json
import sys

import numpy as np
tree = sys.argv[1]
sys.path.insert(0, tree)
from hmmbench.apis import cuda as glue
from hmmbench.pairhmm import cuda_subwarp as sw
from hmmbench.pairhmm.datasets import resolve
from hmmbench.pairhmm.datasets.chunking import launches

LOG = []
TS = [0]
RES = []
def val(x):
    if isinstance(x, (np.integer, int)): return int(x)
    if isinstance(x, (np.floating, float)): return float(x)
    if isinstance(x, np.ndarray): return ("nd", x.shape, str(x.dtype))
    if isinstance(x, tuple): return tuple(val(y) for y in x)
    return getattr(x, "_rid", type(x).__name__)

class Obj:
    n = 0
    def __init__(self, kind):
        Obj.n += 1; self._rid = f"{kind}{Obj.n}"

class Alloc(int):
    def free(self): LOG.append(("free", int(self)))

class Drv:
    addr = 0x10000
    def mem_alloc(self, n):
        Drv.addr += (int(n) + 255) // 256 * 256 + 256
        LOG.append(("mem_alloc", int(n))); return Alloc(Drv.addr)
    def pagelocked_empty(self, n, dtype):
        LOG.append(("pagelocked", int(n), str(np.dtype(dtype)))); return np.zeros(n, dtype)
    def Event(self):
        e = Obj("ev"); drv = self
        e.t = 0.0
        def record(stream=None):
            LOG.append(("record", e._rid, val(stream))); e.t = len(LOG)
        e.record = record
        def time_since(other):
            TS[0] += 1; return float(e.t - other.t)
        e.time_since = time_since
        e.synchronize = lambda: LOG.append(("sync", e._rid))
        LOG.append(("Event", e._rid)); return e
    def Stream(self):
        s = Obj("st")
        s.wait_for_event = lambda ev: LOG.append(("wait", s._rid, ev._rid))
        LOG.append(("Stream", s._rid)); return s
    def memcpy_htod_async(self, dst, src, stream): LOG.append(("h2d", int(dst), val(src), val(stream)))
    def memset_d32_async(self, dst, v, n, stream): LOG.append(("memset", int(dst), int(v), int(n), val(stream)))
    def memcpy_dtoh_async(self, dst, src, stream): LOG.append(("d2h", val(dst), int(src), val(stream)))
    class function_attribute:
        MAX_DYNAMIC_SHARED_SIZE_BYTES = 0

class Fn:
    def __init__(self, name): self.name = name
    def prepare(self, sig): pass
    def set_attribute(self, *a): pass
    def prepared_async_call(self, grid, block, stream, *args, shared_size=0):
        LOG.append(("launch", self.name, val(grid), val(block), val(stream), [val(a) for a in args], int(shared_size)))

drv = Drv()
class Module:
    def __init__(self, key): self.key = key
    def get_function(self, name): return Fn(f"{name}|{self.key}")
glue.driver = lambda: drv
glue.compile = lambda source, defines=None, options=(): Module(json.dumps([source, sorted((defines or {}).items())], default=str))
glue.device_attributes = lambda: {"name": "Fake", "sm_count": 132, "arch": "sm_90", "compute_capability": "9.0"}
glue.sm_clock_mhz = lambda: 1980
glue.unavailable_reason = lambda: None

cases = []
regions = launches(resolve("1m").load(), "original")[:12]
for name in sys.argv[3].split(","):
    b = {x.name: x for x in sw.backends()}[name]
    for p in regions: RES.append(b.run(p))
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
import time as _t
out = [LOG, [[sorted(r.timing.items()), sorted((k, v) for k, v in r.info.items() if k not in ("run_wall_s", "prep_wait_s"))] for r in RES]]
json.dump(out, open(sys.argv[2], "w"), default=str)
print(len(LOG), "calls", TS[0], "time_since")
