"""A backend's memory estimate (``Backend.memory_need``) against the peak of one call, each
backend x dataset in a fresh process (:mod:`hmmbench.memory_peak`): the growth of the resident
high-water mark (VmHWM) from before the backend exists to the end of its call (the runtime,
kernel builds, layout and, on a CPU OpenCL device, its buffers; not a peer program's own
process), and for the NumPy backends (in a second process) the peak tracemalloc saw. Prints
one line per cell with the ratios estimate / peak; the way to re-fit a family's constants on a
new machine (docs/working-memory.md quotes its output).

    python scripts/memory_ratio.py -b numpy -b numpy-f32 -d shape-16x16@6000 -d tiny
    python scripts/memory_ratio.py -b profile-numpy -d proteins-2e5/random-M50/ssv

With ``--check-samples``, the cross-check's reference (``numpy``, float64) on its sample
instead: the estimate the run's memory check makes (``PairHMM.sample_shapes``, else
``PairHMM.sample_shape``; nothing drawn) against the peak tracemalloc sees while the check
draws each unit's sample and computes it, the most of any unit (after an untraced call on the
same sample: the process's one-time allocations), a Markdown row per set:

    python scripts/memory_ratio.py --check-samples 10,20,50,100,200,1000 --piece-pairs 2000 \
        -d tiny -d 10s -d 1m -d shape-300x8@2000 -d equal-512@1e4 -d chunks@4000:seed=5

A profile cell is DATABASE/MODEL/KIND (MODEL+MODEL+...: a batched cell of those models); its
estimate is also given from the database's name alone (``from name``: what the run's check
reads, nothing generated).

With ``--device``, a GPU backend's device estimate against the most its CUDA device's free
memory fell over the call instead (a third process per cell; run nothing else on the GPU
meanwhile: the free memory is the whole device's):

    python scripts/memory_ratio.py --device -b cuda-warp -b cuda-subwarp -d equal-512@20000
"""
from __future__ import annotations

import argparse
import sys

from hmmbench.memory_peak import in_own_process


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-b", "--backend", action="append")
    ap.add_argument("-d", "--dataset", action="append", required=True)
    ap.add_argument("--check-samples", metavar="SIZES",
                    help="the check's sample sizes, comma-separated (no -b)")
    ap.add_argument("--piece-pairs", type=int, default=None,
                    help="with --check-samples: a chunk set generated in pieces of this many pairs")
    ap.add_argument("--device", action="store_true",
                    help="the device estimate against the CUDA device's peak (GPU backends)")
    args = ap.parse_args(argv)
    if args.check_samples:
        return check_samples(args.dataset, [int(k) for k in args.check_samples.split(",")],
                             args.piece_pairs)
    if not args.backend:
        ap.error("-b is required")
    mib = 1 << 20
    for ds in args.dataset:
        workload = "profile" if ds.count("/") == 2 else "pairhmm"
        for name in args.backend:
            if args.device:
                print(device_line(workload, name, ds), flush=True)
                continue
            r = in_own_process(workload, name, ds, "resident")
            if "unavailable" in r:
                print(f"{ds:22} {name:26} unavailable: {r['unavailable']}")
                continue
            line = (f"{ds:22} {name:26} estimate {r['host'] / mib:8.1f} MiB   resident peak "
                    f"{r['hwm'] / mib:8.1f} MiB ({r['host'] / r['hwm']:.2f}x)")
            if name.startswith(("numpy", "profile-numpy")):
                t = in_own_process(workload, name, ds, "traced")
                r["traced"] = t["traced"]
                line += (f"   traced peak {r['traced'] / mib:8.1f} MiB "
                         f"({r['host'] / r['traced']:.2f}x)")
                if workload == "profile":
                    line += f"   from name {t['named'] / r['traced']:.2f}x"
            if r["device"]:
                line += f"   device {r['device'] / mib:.1f} MiB"
            print(line + (f"   {r['note']}" if r["note"] else ""), flush=True)
    return 0


def device_line(workload: str, name: str, ds: str) -> str:
    """One cell's device estimate (and from the name) against its device peak."""
    mib = 1 << 20
    r = in_own_process(workload, name, ds, "device")
    if "unavailable" in r:
        return f"{ds:22} {name:26} unavailable: {r['unavailable']}"
    peak = max(r["device_peak"], 1)
    local = r.get("local_bytes")     # a CUDA backend's kernels: local memory bytes a thread
    return (f"{ds:22} {name:26} device estimate {r['device'] / mib:8.1f} MiB   device peak "
            f"{r['device_peak'] / mib:8.1f} MiB ({r['device'] / peak:.2f}x, from name "
            f"{r['named_device'] / peak:.2f}x)"
            + (f"   local bytes {max(local.values(), default=0)} (most of {len(local)} kernels)"
               if local is not None else ""))


def check_samples(datasets: list, sizes: list, piece_pairs) -> int:
    """The --check-samples table."""
    from hmmbench.memory_peak import traced_peak
    from hmmbench.pairhmm.datasets import chunks, resolve
    from hmmbench.pairhmm.reference import NumpyBackend
    from hmmbench.pairhmm.workload import WORKLOAD
    from hmmbench.runner.check import sample_indexes
    from hmmbench.runner.memory import sample_need
    if piece_pairs:
        chunks.PIECE_PAIRS = piece_pairs
    ref = NumpyBackend("numpy", "float64")
    print("| set | " + " | ".join(f"{k} pairs" for k in sizes) + " |")
    print("|---|" + "---:|" * len(sizes))
    for name in datasets:
        ds = resolve(name)
        if piece_pairs and isinstance(ds, chunks.LazyChunkDataset):
            ds = chunks.LazyChunkDataset.build("chunks", ds.n_pairs, chunks.DEFAULT_CHUNK_PAIRS,
                                               ds.params["seed"], True, "")
            chunks.iter_pieces.__defaults__ = (None,)
        units = list(ds.chunks())
        row = []
        for k in sizes:
            samples = WORKLOAD.sample_shapes(ds, "original", k) or [
                WORKLOAD.sample_shape(WORKLOAD.unit_shape(ds, "original"), k)]
            estimate = sample_need(ref, samples)[0]
            peaks = []
            for ci, u in enumerate(units):
                idx = sample_indexes(u.n_pairs, k, seed=ci)
                ref.run(u.subset(idx))
                peaks.append(traced_peak(lambda: ref.run(u.subset(idx))))
            row.append(f"{estimate / max(peaks):.2f}")
        print(f"| `{ds.name}` | " + " | ".join(row) + " |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
