"""On the GPU machine: the resident database's upload (hmmbench.profile.cuda.upload_database)
by number of host threads filling the page-locked staging buffers, and the whole one-off load
(layout + upload) as the CUDA backends pay it.

    python3 scripts/device_upload_threads.py [-d proteins-2e8] [--threads 1,2,4,8] [--repeats 3]

Prints, per thread count, the first load's times (the process's first one is what a run's first
search pays) and the best wall time of the staged upload (ms, GB/s) and of the load.
"""
from __future__ import annotations

import argparse
import time


def main(argv=None) -> int:
    from hmmbench.apis import cuda as glue
    from hmmbench.profile import cuda_resident as pcuda, datasets
    from hmmbench.profile.resident import ResidentCache
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-d", "--database", default="proteins-2e8")
    ap.add_argument("--threads", default="1,2,4,8")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args(argv)
    seqs = datasets.resolve_database(args.database).load()
    drv = glue.driver()
    t0 = time.perf_counter()
    pcuda._staging(drv)
    print(f"{args.database}: {len(seqs)} sequences; page-locked staging buffers allocated in "
          f"{1e3 * (time.perf_counter() - t0):.1f} ms (once per process, before the timed copy)")
    for threads in (int(t) for t in args.threads.split(",")):
        pcuda.UPLOAD_THREADS = threads
        cache = ResidentCache(pcuda.upload_database, pcuda.resident_specials)
        best = {"prep": float("inf"), "h2d": float("inf")}
        for rep in range(args.repeats):
            cache.clear()
            _, load = cache.get_seqs(seqs, "db")
            best = {k: min(best[k], load[k]) for k in best}
            if rep == 0:
                print(f"threads {threads}: first load prep {1e3 * load['prep']:7.2f} ms   h2d "
                      f"{1e3 * load['h2d']:7.2f} ms")
        nbytes = sum(b.nbytes for b in (seqs.residues, seqs.offsets)) + 4 * 4 * len(seqs)
        print(f"threads {threads}: db load prep {1e3 * best['prep']:7.2f} ms   h2d "
              f"{1e3 * best['h2d']:7.2f} ms ({nbytes / best['h2d'] / 1e9:5.1f} GB/s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
