"""A backend's memory estimate (``Backend.memory_need``) against the peak of one call, each
backend x dataset in a fresh process (:mod:`hmmbench.memory_peak`): the growth of the resident
high-water mark (VmHWM) from before the backend exists to the end of its call (the runtime,
kernel builds, layout and, on a CPU OpenCL device, its buffers; not a peer program's own
process), and for the NumPy backends (in a second process) the peak tracemalloc saw. Prints
one line per cell with the ratios estimate / peak; the way to re-fit a family's constants on a
new machine (docs/reliability.md quotes its output).

    python scripts/memory_ratio.py -b numpy -b numpy-f32 -d shape-16x16@6000 -d tiny
    python scripts/memory_ratio.py -b profile-numpy -d proteins-2e5/random-M50/ssv

A profile cell is DATABASE/MODEL/KIND; its estimate is also given from the database's name
alone (``from name``: what the run's check reads, nothing generated).
"""
from __future__ import annotations

import argparse
import sys

from hmmbench.memory_peak import in_own_process


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-b", "--backend", action="append", required=True)
    ap.add_argument("-d", "--dataset", action="append", required=True)
    args = ap.parse_args(argv)
    mib = 1 << 20
    for ds in args.dataset:
        workload = "profile" if ds.count("/") == 2 else "pairhmm"
        for name in args.backend:
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


if __name__ == "__main__":
    sys.exit(main())
