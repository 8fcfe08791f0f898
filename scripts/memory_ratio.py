"""A backend's memory estimate (``Backend.memory_need``) against the peak of one call, each
backend x dataset in a fresh process: the growth of the resident high-water mark (VmHWM) from
before the backend exists to the end of its call (the runtime, kernel builds, layout and, on a
CPU OpenCL device, its buffers), and for the NumPy backends (in a second process) the peak
tracemalloc saw. Prints one
line per cell with the ratios estimate / peak; the way to re-fit a family's constants on a
new machine (docs/reliability.md quotes its output).

    python scripts/memory_ratio.py -b numpy -b numpy-f32 -d shape-16x16@6000 -d tiny
    python scripts/memory_ratio.py -b profile-numpy -d proteins-2e5/random-M50/ssv

A profile cell is DATABASE/MODEL/KIND; its estimate is also given from the database's name
alone (``from name``: what the run's check reads, nothing generated).
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys

ONE = """
import json, sys, tracemalloc
from hmmbench.pairhmm.datasets import resolve
from hmmbench.pairhmm.shape import PairShape
from hmmbench.registry import probe, select
def hwm():
    with open("/proc/self/status") as fh:
        return next(int(l.split()[1]) * 1024 for l in fh if l.startswith("VmHWM:"))
pairs = resolve(sys.argv[2]).load()
shape = PairShape.of(pairs)
before = hwm()
backend = select([sys.argv[1]], "pairhmm")[0]
reason = probe(backend).reason
if reason:
    print(json.dumps({"unavailable": reason})); sys.exit()
need = backend.memory_need(shape)
traced = sys.argv[3] == "traced"      # tracemalloc's own records would swell the RSS
if traced:
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
backend.run(pairs)
peak = tracemalloc.get_traced_memory()[1] - base if traced else None
print(json.dumps({"host": need.host, "device": need.device, "hwm": hwm() - before,
                  "traced": peak, "note": need.note}))
"""

PROFILE = """
import json, sys, tracemalloc
from hmmbench.profile import datasets as pds
from hmmbench.profile.job import ProfileSearch
from hmmbench.profile.shape import ProfileShape
from hmmbench.registry import select
def hwm():
    with open("/proc/self/status") as fh:
        return next(int(l.split()[1]) * 1024 for l in fh if l.startswith("VmHWM:"))
db_name, model_name, kind = sys.argv[2].split("/")
db = pds.resolve_database(db_name)
seqs = db.load()
model, hmm = pds.resolve_model(model_name).load()
before = hwm()
backend = select([sys.argv[1]], "profile")[0]
need = backend.memory_need(ProfileShape.of(seqs, model.M, kind))
named = (backend.memory_need(ProfileShape.generated(db.n_cells, model.M, kind)).host
         if db.kind == "synthetic" else need.host)
traced = sys.argv[3] == "traced"
if traced:
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
backend.run(ProfileSearch(model, seqs, kind, hmm))
peak = tracemalloc.get_traced_memory()[1] - base if traced else None
print(json.dumps({"host": need.host, "device": need.device, "hwm": hwm() - before,
                  "traced": peak, "note": need.note, "named": named}))
"""


def _measure(backend: str, dataset: str, how: str) -> dict:
    script = PROFILE if dataset.count("/") == 2 else ONE
    out = subprocess.run([sys.executable, "-c", script, backend, dataset, how],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-b", "--backend", action="append", required=True)
    ap.add_argument("-d", "--dataset", action="append", required=True)
    args = ap.parse_args(argv)
    mib = 1 << 20
    for ds in args.dataset:
        for name in args.backend:
            r = _measure(name, ds, "resident")
            if "unavailable" in r:
                print(f"{ds:22} {name:26} unavailable: {r['unavailable']}")
                continue
            line = (f"{ds:22} {name:26} estimate {r['host'] / mib:8.1f} MiB   resident peak "
                    f"{r['hwm'] / mib:8.1f} MiB ({r['host'] / r['hwm']:.2f}x)")
            if name.startswith(("numpy", "profile-numpy")):
                t = _measure(name, ds, "traced")
                r["traced"] = t["traced"]
                line += (f"   traced peak {r['traced'] / mib:8.1f} MiB "
                         f"({r['host'] / r['traced']:.2f}x)")
                if "named" in t:
                    line += f"   from name {t['named'] / r['traced']:.2f}x"
            if r["device"]:
                line += f"   device {r['device'] / mib:.1f} MiB"
            print(line + (f"   {r['note']}" if r["note"] else ""), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
