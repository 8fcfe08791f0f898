"""On the GPU machine: the ways a resident database can reach the device, timed on its real bytes
(issue 14 asks >= 20 GB/s): the staged upload (``hmmbench.profile.cuda_resident.upload_database``
with pinning off) by chunk size, staging buffers and host threads; the link's own speed from
memory already page-locked; pinning the database in place (``cuMemHostRegister``) whole, and by
chunks each copied while the next is registered (``pin_and_copy``, what the backends do), or
copying it into a fresh page-locked buffer, each with its copy; the
pageable copy; the host's memcpy bandwidth; and the layout the load computes beside the copies.

    python3 scripts/device_upload_paths.py [-d proteins-2e8] [--repeats 5] [--json FILE]

Best and median wall time of ``--repeats`` (the first one apart: what a run's first search
pays), ms and GB/s of the database bytes (residues + offsets).
"""
from __future__ import annotations

import argparse
import json
import statistics
import time

import numpy as np


def timed(fn, repeats: int) -> dict:
    walls = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        walls.append(time.perf_counter() - t0)
    return {"first_ms": 1e3 * walls[0], "best_ms": 1e3 * min(walls),
            "median_ms": 1e3 * statistics.median(walls)}


class Parts:
    """Wall time of a load's device allocations and page-locking calls (the driver's calls
    wrapped with clocks): where a load's time goes, the process's first load apart."""

    def __init__(self, drv, glue):
        self.t = {"alloc_ms": 0.0, "register_ms": 0.0}
        alloc, register = drv.mem_alloc, glue.host_register

        def timed_alloc(n):
            t0 = time.perf_counter()
            try:
                return alloc(n)
            finally:
                self.t["alloc_ms"] += 1e3 * (time.perf_counter() - t0)

        def timed_register(ptr, n):
            t0 = time.perf_counter()
            try:
                return register(ptr, n)
            finally:
                self.t["register_ms"] += 1e3 * (time.perf_counter() - t0)
        drv.mem_alloc, glue.host_register = timed_alloc, timed_register

    def take(self) -> dict:
        out, self.t = self.t, dict.fromkeys(self.t, 0.0)
        return out

    @staticmethod
    def text(p: dict) -> str:
        return f"device allocations {p['alloc_ms']:.2f} ms, page-locking {p['register_ms']:.2f} ms"


def main(argv=None) -> int:
    from hmmbench.apis import cuda as glue
    from hmmbench.profile import cuda_resident as pcuda, datasets
    from hmmbench.profile.model import SequenceSet
    from hmmbench.profile.resident import ResidentCache
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-d", "--database", default="proteins-2e8")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    seqs = datasets.resolve_database(args.database).load()
    drv = glue.driver()
    res, offs = seqs.residues, seqs.offsets
    nbytes = res.nbytes + offs.nbytes
    dev = drv.mem_alloc(nbytes)
    rows: list = []
    defaults = (pcuda.UPLOAD_CHUNK, pcuda.UPLOAD_BUFFERS, pcuda.UPLOAD_THREADS)

    def row(name: str, t: dict, **extra) -> None:
        t.update(extra, path=name, gbps=nbytes / (t["best_ms"] / 1e3) / 1e9)
        rows.append(t)
        print(f"{name:44s} first {t['first_ms']:8.2f}  best {t['best_ms']:8.2f}  median "
              f"{t['median_ms']:8.2f} ms  {t['gbps']:6.1f} GB/s", flush=True)

    print(f"{args.database}: {len(seqs)} sequences, {nbytes / 1e6:.1f} MB", flush=True)
    # the process's first load, as a run's first search pays it (staging buffers, copying
    # threads and the order kernels set up first, as the backends do before their clocks)
    for i in range(2):                        # the process's first page-locking, and a second
        small = np.ones(1 << 20, np.uint8)
        t0 = time.perf_counter()
        ok = glue.host_register(small.ctypes.data, small.nbytes)
        t1 = time.perf_counter()
        glue.host_unregister(small.ctypes.data)
        rows.append({"path": f"page-locking 1 MiB, {'first' if i == 0 else 'second'} in the "
                     "process", "register_ms": 1e3 * (t1 - t0), "ok": ok,
                     "unregister_ms": 1e3 * (time.perf_counter() - t1)})
        print(f"{rows[-1]['path']}: register {rows[-1]['register_ms']:.3f} ms, unregister "
              f"{rows[-1]['unregister_ms']:.3f} ms", flush=True)
    t0 = time.perf_counter()
    pcuda._staging(drv)
    print(f"process setup (staging buffers, copying threads): "
          f"{1e3 * (time.perf_counter() - t0):.2f} ms", flush=True)
    first = pcuda.resident_cache()
    clocks = Parts(drv, glue)
    t0 = time.perf_counter()
    load = first.get_seqs(seqs, "db")[1]         # the database itself not kept: dropped by clear()
    wall = time.perf_counter() - t0
    first_parts = clocks.take()
    t0 = time.perf_counter()
    probe = drv.mem_alloc(nbytes)
    alloc = time.perf_counter() - t0
    probe.free()
    first.clear()
    rows.append({"path": "first load in the process", "wall_ms": 1e3 * wall,
                 "prep_ms": 1e3 * load["prep"], "h2d_ms": 1e3 * load["h2d"],
                 "later_alloc_ms": 1e3 * alloc, **first_parts})
    print(f"first load in the process: wall {1e3 * wall:.2f} ms (prep {1e3 * load['prep']:.2f}, "
          f"h2d {1e3 * load['h2d']:.2f}; {Parts.text(first_parts)}); a later "
          f"{nbytes / 1e6:.0f} MB cuMemAlloc {1e3 * alloc:.2f} ms", flush=True)
    # host memcpy into a warm destination, by threads (the staging's own bound)
    dst = np.empty_like(res)
    dst[:] = res
    for threads in (1, 2, 4, 8):
        row(f"host memcpy, {threads} threads", timed(lambda: pcuda.fill(dst, res, threads),
                                                     args.repeats))
    # the staged upload by chunk size, buffers, threads
    arrays = {"residues": res, "offsets": offs}
    pin_min = pcuda.PIN_MIN
    pcuda.PIN_MIN = 1 << 62                    # staging alone
    for chunk_mib in (16, 64):
        for nbuf in (2,):
            for threads in (8,):
                pcuda.UPLOAD_CHUNK, pcuda.UPLOAD_BUFFERS = chunk_mib << 20, nbuf
                pcuda.UPLOAD_THREADS = threads
                pcuda._STAGING.clear()
                pcuda._staging(drv)

                def staged():
                    bufs, *_ = pcuda.upload_database(arrays)
                    for b in bufs.values():
                        b.free()
                row(f"staged {chunk_mib} MiB x {nbuf} buffers, {threads} threads",
                    timed(staged, args.repeats), chunk_mib=chunk_mib, buffers=nbuf,
                    threads=threads)
    pcuda._STAGING.clear()
    pcuda.PIN_MIN = pin_min
    # the link from page-locked memory (the bound of any staged path)
    t0 = time.perf_counter()
    locked = drv.pagelocked_empty(res.size, np.uint8)
    alloc_ms = 1e3 * (time.perf_counter() - t0)
    t0 = time.perf_counter()
    pcuda.fill(locked, res, 8)
    fill_ms = 1e3 * (time.perf_counter() - t0)
    row("page-locked source, one copy", timed(lambda: drv.memcpy_htod(dev, locked), args.repeats),
        alloc_ms=alloc_ms, first_fill_ms=fill_ms)
    stream = drv.Stream()

    def chunked():
        step = 16 << 20
        for s in range(0, locked.size, step):
            drv.memcpy_htod_async(int(dev) + s, locked[s:s + step], stream)
        stream.synchronize()
    row("page-locked source, 16 MiB async chunks", timed(chunked, args.repeats))
    del locked
    # pinning the database in place (cuMemHostRegister through ctypes: PyCUDA's
    # register_host_memory fails under NumPy 2, inducer/pycuda#459), one copy, unpinning
    import ctypes
    libcuda = ctypes.CDLL("libcuda.so.1")
    ptr, size = ctypes.c_void_p(res.ctypes.data), ctypes.c_size_t(res.nbytes)

    def register():
        t0 = time.perf_counter()
        rc = libcuda.cuMemHostRegister_v2(ptr, size, ctypes.c_uint(0))
        t1 = time.perf_counter()
        drv.memcpy_htod_async(dev, res, stream)
        stream.synchronize()
        t2 = time.perf_counter()
        rc2 = libcuda.cuMemHostUnregister(ptr)
        t3 = time.perf_counter()
        register.parts.append((t1 - t0, t2 - t1, t3 - t2, rc, rc2))
    register.parts = []
    t = timed(register, args.repeats)
    parts = np.array(register.parts)
    row("cuMemHostRegister + copy + unregister", t,
        register_ms=float(np.median(parts[:, 0])) * 1e3,
        copy_ms=float(np.median(parts[:, 1])) * 1e3,
        unregister_ms=float(np.median(parts[:, 2])) * 1e3,
        rc=[int(x) for x in parts[:, 3]], rc_unregister=[int(x) for x in parts[:, 4]])
    print(f"  register {rows[-1]['register_ms']:.2f} ms, copy {rows[-1]['copy_ms']:.2f} ms, "
          f"unregister {rows[-1]['unregister_ms']:.2f} ms, rc {rows[-1]['rc']}", flush=True)
    # pinning in place by chunks, each chunk's copy as soon as it is locked (the backends'
    # path: pin_and_copy), by chunk size; each repeat on a fresh copy of
    # the residues (a database's pages are locked once: locking pages again is faster);
    # unpinning timed apart (the backends unpin when a database is dropped)
    pin_chunk = pcuda.PIN_CHUNK
    for chunk_mib in (16, 32, 64, 128):
        pcuda.PIN_CHUNK = chunk_mib << 20
        unpins, walls = [], []
        for _ in range(args.repeats):
            fresh = res.copy()
            t0 = time.perf_counter()
            locked, head = pcuda.pin_and_copy(drv, fresh, dev, stream)
            stream.synchronize()
            walls.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            for ptr in locked:
                glue.host_unregister(ptr)
            unpins.append((time.perf_counter() - t0, head == res.nbytes, len(locked)))
            del fresh
        t = {"first_ms": 1e3 * walls[0], "best_ms": 1e3 * min(walls),
             "median_ms": 1e3 * statistics.median(walls)}
        row(f"pinned in place by {chunk_mib} MiB chunks", t, chunk_mib=chunk_mib,
            unpin_ms=1e3 * statistics.median(u[0] for u in unpins),
            all_pinned=all(u[1] for u in unpins), chunks=unpins[0][2])
        print(f"  unpin {rows[-1]['unpin_ms']:.2f} ms apart; every chunk locked: "
              f"{rows[-1]['all_pinned']}", flush=True)
    pcuda.PIN_CHUNK = pin_chunk
    # a fresh page-locked buffer each time (allocate, fill, copy)
    def fresh():
        buf = drv.pagelocked_empty(res.size, np.uint8)
        pcuda.fill(buf, res, 8)
        drv.memcpy_htod(dev, buf)
    row("fresh page-locked buffer + fill + copy", timed(fresh, min(3, args.repeats)))
    row("pageable, one copy", timed(lambda: drv.memcpy_htod(dev, res), args.repeats))
    # the layout the load computes beside the copies: all on the host, and the host's part
    # when the device sorts the launch order; then the whole load as the backends pay it
    host_cache = ResidentCache(pcuda.upload_database, pcuda.resident_specials)
    row("layout on the host (order, classes, specials)",
        timed(lambda: host_cache._layout(seqs), args.repeats))
    cache = pcuda.resident_cache()
    row("layout's host part with the order on the device",
        timed(lambda: cache._layout(seqs), args.repeats))
    pcuda._STAGING.clear()
    pcuda.UPLOAD_CHUNK, pcuda.UPLOAD_BUFFERS, pcuda.UPLOAD_THREADS = defaults
    pcuda._staging(drv)
    for name, c in (("db load, host order", host_cache), ("db load, device order", cache)):
        loads, walls, drops = [], [], []
        for _ in range(args.repeats):
            fresh = SequenceSet(seqs.names, seqs.residues.copy(), seqs.offsets)   # pages
            clocks.take()                                     # never locked before, as a run's
            t0 = time.perf_counter()
            loads.append(c.get_seqs(fresh, "db")[1])
            walls.append(time.perf_counter() - t0)
            loads[-1] = {**loads[-1], **clocks.take()}
            t0 = time.perf_counter()
            c.clear()                         # the database dropped: unpinned, freed
            drops.append(time.perf_counter() - t0)
        t = {"first_ms": 1e3 * walls[0], "best_ms": 1e3 * min(walls),
             "median_ms": 1e3 * statistics.median(walls)}
        med = {k: 1e3 * statistics.median(x[k] for x in loads) for k in ("prep", "h2d")}
        row(name, t, prep_ms=med["prep"], h2d_ms=med["h2d"],
            drop_ms=1e3 * statistics.median(drops))
        print(f"  median prep {med['prep']:.2f} ms, h2d {med['h2d']:.2f} ms; dropping it "
              f"(unpinning) {rows[-1]['drop_ms']:.2f} ms apart; last load: "
              f"{Parts.text(loads[-1])}", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"gpu": glue.gpu_name(), "database": args.database, "bytes": nbytes,
                       "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
