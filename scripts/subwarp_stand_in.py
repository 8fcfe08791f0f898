"""A recording stand-in for the CUDA driver (no GPU): every call cuda-subwarp's host path makes --
kernel (and the defines it was compiled with), grid, block, stream, arguments, events, waits,
copies and allocations -- appended to ``LOG``; events get a fake clock (one tick per record).
Used by ``subwarp_driver_record.py`` (same driver calls before and after a refactor) and
``subwarp_host_probe.py`` (host microseconds per call on a CPU machine).

    import subwarp_stand_in as fake
    fake.install()          # hmmbench.apis.cuda now talks to the stand-in
    ...; fake.LOG           # the calls so far
"""
import json
from collections import Counter

import numpy as np

LOG: list = []
COUNTS: Counter = Counter()   # driver calls by kind, counted even when quiet()
TS = [0]   # time_since queries
TICKS = [0]   # the fake clock: one tick per event record
RECORD = [True]   # False (quiet()): nothing is logged (the log costs host time)


def val(x):
    if isinstance(x, (np.integer, int, Alloc)): return int(x)
    if isinstance(x, (np.floating, float)): return float(x)
    if isinstance(x, np.ndarray): return ("nd", x.shape, str(x.dtype))
    if isinstance(x, tuple): return tuple(val(y) for y in x)
    return getattr(x, "_rid", type(x).__name__)


class Obj:
    n = 0
    def __init__(self, kind):
        Obj.n += 1; self._rid = f"{kind}{Obj.n}"


class Alloc:
    """Like pycuda's DeviceAllocation: an address through int() only (no arithmetic)."""
    def __init__(self, addr): self._addr = addr
    def __int__(self): return self._addr
    def free(self): LOG.append(("free", int(self)))


class Drv:
    addr = 0x10000
    def mem_alloc(self, n):
        Drv.addr += (int(n) + 255) // 256 * 256 + 256
        LOG.append(("mem_alloc", int(n))); return Alloc(Drv.addr)
    def pagelocked_empty(self, n, dtype):
        LOG.append(("pagelocked", int(n), str(np.dtype(dtype)))); return np.zeros(n, dtype)
    def Event(self):
        e = Obj("ev")
        e.t = 0.0
        def record(stream=None):
            COUNTS["event record"] += 1
            if RECORD[0]:
                LOG.append(("record", e._rid, val(stream)))
            TICKS[0] += 1; e.t = TICKS[0]
        e.record = record
        def time_since(other):
            TS[0] += 1; COUNTS["event time query"] += 1; return float(e.t - other.t)
        e.time_since = time_since
        def synchronize():
            COUNTS["sync"] += 1
            if RECORD[0]: LOG.append(("sync", e._rid))
        e.synchronize = synchronize
        def query():
            COUNTS["event query"] += 1; return True
        e.query = query
        LOG.append(("Event", e._rid)); return e
    def Stream(self):
        s = Obj("st")
        def wait_for_event(ev):
            COUNTS["stream wait"] += 1
            if RECORD[0]: LOG.append(("wait", s._rid, ev._rid))
        s.wait_for_event = wait_for_event
        LOG.append(("Stream", s._rid)); return s
    def memcpy_htod_async(self, dst, src, stream):
        COUNTS["h2d"] += 1
        if RECORD[0]: LOG.append(("h2d", int(dst), val(src), val(stream)))
    def memset_d32_async(self, dst, v, n, stream):
        COUNTS["memset"] += 1
        if RECORD[0]: LOG.append(("memset", int(dst), int(v), int(n), val(stream)))
    def memcpy_dtoh_async(self, dst, src, stream):
        COUNTS["d2h"] += 1
        if RECORD[0]: LOG.append(("d2h", val(dst), int(src), val(stream)))
    class function_attribute:
        MAX_DYNAMIC_SHARED_SIZE_BYTES = 0


class Fn:
    """A compiled kernel: its register cap, or the registers its __launch_bounds__ minimum
    blocks allow (128 without), no static shared memory."""
    def __init__(self, name, defines=()):
        self.name = name
        d = dict(defines)
        self.num_regs = d.get("SW_MAXNREG") or \
            {2: 255, 3: 168, 4: 128, 6: 80}.get(d.get("SW_MIN_BLOCKS"), 128)
        self.shared_size_bytes = 0
    def prepare(self, sig): pass
    def set_attribute(self, *a): pass
    def prepared_async_call(self, grid, block, stream, *args, shared_size=0):
        COUNTS["launch"] += 1
        if RECORD[0]:
            LOG.append(("launch", self.name, val(grid), val(block), val(stream), [val(a) for a in args], int(shared_size)))


class Module:
    def __init__(self, key): self.key = key
    def get_function(self, name): return Fn(f"{name}|{self.key}", json.loads(self.key)[1])


DRIVER = Drv()


class _Discard(list):
    def append(self, item):
        pass


def quiet() -> None:
    """Log nothing from now on (a timing probe measures the host path, not the log)."""
    global LOG
    LOG = _Discard()
    RECORD[0] = False


def install() -> None:
    """Point hmmbench.apis.cuda (of whichever tree is on sys.path) at the stand-in."""
    from hmmbench.apis import cuda as glue
    glue.driver = lambda: DRIVER
    glue.compile = lambda source, defines=None, options=(): Module(
        json.dumps([source, sorted((defines or {}).items())], default=str))
    glue.device_attributes = lambda: {"name": "Fake", "sm_count": 132, "arch": "sm_90",
                                      "compute_capability": "9.0", "registers_per_sm": 65536,
                                      "shared_per_sm": 233472, "threads_per_sm": 2048,
                                      "blocks_per_sm": 32, "reserved_shared_per_block": 1024}
    glue.sm_clock_mhz = lambda: 1980
    glue.unavailable_reason = lambda: None
    glue.graphs_available = lambda: False  # (graph replays issue no launch to record)
