"""Where the float32 kernel without exponents loses precision (issue 13 point 3, session 20: the
low floor, ``subwarp_layout.f32_floors``): on the NumPy emulation (tests/subwarp_scaling.py), each
pair's error against the float64 reference by the band of its float32 sum with C = 2^120, two
decades a band, and how many pairs each floor queues (GATK's 1e-28, the low floor's per-read
rule). ``SET:iq=Q`` sets every insertion quality to Q; ``SET:random`` draws every quality
(insertion 0..50, deletion and base 0..93, gap 1..40).

    HMMBENCH_DATA_PATH=... python scripts/subwarp_floor_emulation.py equal-512@1024:iq=45 \\
        equal-512@1024:iq=93 equal-256@2048:random 10s 1m [--json F]
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT)]

import subwarp_scaling as emu  # noqa: E402

from cpu_reference.pairhmm import forward_log10  # noqa: E402
from hmmbench.pairhmm.datasets import resolve  # noqa: E402
from hmmbench.pairhmm.subwarp_layout import f32_floors  # noqa: E402

BANDS = range(-20, -42, -2)  # upper ends of the two-decade bands of log10(sum with C)


def load(spec: str):
    name, _, how = spec.partition(":")
    ps = resolve(name).load()
    if how.startswith("iq="):
        return dataclasses.replace(ps, ins_qual=np.full_like(ps.ins_qual, int(how[3:])))
    if how == "random":
        rng = np.random.default_rng(5)

        def draw(a, lo, hi):
            return rng.integers(lo, hi + 1, size=a.shape).astype(a.dtype)
        return dataclasses.replace(ps, ins_qual=draw(ps.ins_qual, 0, 50),
                                   del_qual=draw(ps.del_qual, 0, 93),
                                   gcp_qual=draw(ps.gcp_qual, 1, 40),
                                   base_qual=draw(ps.base_qual, 0, 93))
    return ps


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("sets", nargs="+")
    ap.add_argument("--json")
    args = ap.parse_args()
    out = {}
    for spec in args.sets:
        t = time.time()
        ps = load(spec)
        ref = forward_log10(ps, "float64")
        got, _ = emu.emulate(ps, None)
        sums = got + emu.LOG10_C32
        fin = np.isfinite(ref) & np.isfinite(got)
        err = np.abs(got - ref)
        bands = {}
        for hi in BANDS:
            sel = fin & (sums >= hi - 2) & (sums < hi)
            bands[f"[1e{hi - 2}, 1e{hi})"] = {"pairs": int(sel.sum()),
                                               "max_err": float(err[sel].max(initial=0.0))}
        floors = np.log10(f32_floors(ps))
        row = out[spec] = {
            "pairs": int(ps.n_pairs), "bands": bands,
            "queued_under_1e-28": int(np.sum(~(sums >= -28))),
            "queued_under_low_floor": int(np.sum(~(sums >= floors))),
            "kept_over_1e-4": int(np.sum(fin & (sums >= floors) & ~(err <= 1e-4))),
            "seconds": round(time.time() - t, 1)}
        print(spec, json.dumps(row), flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
