"""The host side of an upload on the GPU machine (issue 13 point 4, session 15): what moving a
chunk's bytes (45 MB, a 396k-pair chunk of chunks@5e6; 2.2 MB, 1m merged) costs each way -- copied into a
page-locked buffer by 1..16 threads (numpy slice copies), the source page-locked in place
(cuMemHostRegister / unregister) and copied by the DMA engine, or a copy from pageable memory
(the driver stages it; one copy, or six issued by 1..4 threads) -- and the upload's own rate
from page-locked memory. Medians of 7 (the six copies: of 15).

    source .device/env.sh && python3 scripts/host_copy_probe.py [--mb 45] [--json F]
"""
from __future__ import annotations

import argparse
import json
import statistics
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np


def median_ms(fn, n: int = 7) -> float:
    fn()
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    return round(statistics.median(times), 3)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=float, default=45.0)
    ap.add_argument("--json")
    args = ap.parse_args()
    import pycuda.autoinit  # noqa: F401
    import pycuda.driver as cuda

    n = int(args.mb * 1e6)
    rng = np.random.default_rng(1)
    src = rng.integers(0, 4, n, dtype=np.uint8)  # resident, like a freshly generated piece
    pinned = cuda.pagelocked_empty(n, np.uint8)
    dev = cuda.mem_alloc(n)
    stream = cuda.Stream()
    out = {"gpu": cuda.Device(0).name(), "bytes": n, "copy_into_pinned_ms": {}}

    for threads in (1, 2, 4, 8, 12, 16):
        pool = ThreadPoolExecutor(threads)
        cuts = np.linspace(0, n, threads + 1).astype(np.int64)

        def part(k, cuts=cuts):
            pinned[cuts[k]:cuts[k + 1]] = src[cuts[k]:cuts[k + 1]]

        def staged(pool=pool, threads=threads, part=part):
            list(pool.map(part, range(threads)))

        out["copy_into_pinned_ms"][threads] = median_ms(staged)
        pool.shutdown()

    def upload_pinned():
        cuda.memcpy_htod_async(dev, pinned, stream)
        stream.synchronize()

    def upload_pageable():
        cuda.memcpy_htod(dev, src)

    out["upload_from_pinned_ms"] = median_ms(upload_pinned)
    out["upload_from_pageable_ms"] = median_ms(upload_pageable)

    # session 25: the driver stages a copy from pageable memory on the calling thread (PyCUDA
    # lets go of the GIL meanwhile): six async copies (a small call's five read arrays and its
    # haplotypes) issued by 1..4 threads of a pool, each thread on its own stream, until all
    # are done
    streams = [cuda.Stream() for _ in range(4)]
    six = np.linspace(0, n, 7).astype(np.int64)
    out["upload_from_pageable_six_copies_ms"] = {}
    for threads in (1, 2, 3, 4):
        pool = ThreadPoolExecutor(threads)

        def copies(k, threads=threads):
            for j in range(k, 6, threads):
                cuda.memcpy_htod_async(int(dev) + int(six[j]), src[six[j]:six[j + 1]],
                                       streams[k])

        def six_copies(pool=pool, threads=threads, copies=copies):
            if threads == 1:
                copies(0)
            else:
                list(pool.map(copies, range(threads)))
            for st in streams[:threads]:
                st.synchronize()

        out["upload_from_pageable_six_copies_ms"][threads] = median_ms(six_copies, 15)
        pool.shutdown()

    # the driver's own calls (PyCUDA's register_host_memory fails under NumPy 2: it sets the
    # array's base twice)
    import ctypes
    lib = ctypes.CDLL("libcuda.so.1")
    ptr, size = ctypes.c_void_p(src.ctypes.data), ctypes.c_size_t(src.nbytes)
    reg = {}

    def register():
        rc = lib.cuMemHostRegister_v2(ptr, size, ctypes.c_uint(0))
        assert rc == 0, f"cuMemHostRegister: {rc}"
        reg["a"] = src

    def unregister():
        rc = lib.cuMemHostUnregister(ptr)
        assert rc == 0, f"cuMemHostUnregister: {rc}"
        reg.pop("a")

    times_r, times_u, times_up = [], [], []
    for _ in range(7):
        t0 = time.perf_counter()
        register()
        t1 = time.perf_counter()
        cuda.memcpy_htod_async(dev, reg["a"], stream)
        stream.synchronize()
        t2 = time.perf_counter()
        unregister()
        t3 = time.perf_counter()
        times_r.append((t1 - t0) * 1e3)
        times_up.append((t2 - t1) * 1e3)
        times_u.append((t3 - t2) * 1e3)
    out["register_ms"] = round(statistics.median(times_r), 3)
    out["upload_from_registered_ms"] = round(statistics.median(times_up), 3)
    out["unregister_ms"] = round(statistics.median(times_u), 3)
    print(json.dumps(out, indent=1))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
