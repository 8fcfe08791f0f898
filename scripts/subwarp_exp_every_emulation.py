"""The exponents' check every 16 steps (the kernel's SW_EXP_EVERY = 4 unrolled iterations) against
a longer interval, on the NumPy emulation (tests/subwarp_scaling.py): per set the float64 pairs,
the worst error against the float64 reference and the checks made (issue 13 point 3, session
12: fewer checks are fewer instructions per cell; every 32 steps sent every equal-896/1024 pair
to float64, so 24 is what was measured on the GPU, docs/evidence/subwarp-ab-exp-every-h100.json).

    HMMBENCH_DATA_PATH=... python scripts/subwarp_exp_every_emulation.py [STEPS] [--json F]
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT)]

import subwarp_scaling as emu  # noqa: E402
from pairgen import deep_pairs  # noqa: E402

from cpu_reference.pairhmm import forward_log10  # noqa: E402
from hmmbench.pairhmm.datasets import resolve  # noqa: E402

#: (label, PairSet maker): the deep pairs of the exponents' proof and the real and equal sets
SETS = (("deep150-400-q10", lambda: deep_pairs(1, 96, gcp_q=(10, 11))),
        ("deep500-1024-q10", lambda: deep_pairs(2, 32, length=(500, 1025), gcp_q=(10, 11))),
        ("deep1030-1500-q10", lambda: deep_pairs(3, 12, length=(1030, 1500), gcp_q=(10, 11))),
        ("deep-q10-40", lambda: deep_pairs(4, 96, gcp_q=(10, 41))),
        ("10s", lambda: resolve("10s").load()),
        ("equal-512@2048", lambda: resolve("equal-512@2048").load()),
        ("equal-896@1024", lambda: resolve("equal-896@1024").load()),
        ("equal-1024@1024", lambda: resolve("equal-1024@1024").load()),
        ("1m", lambda: resolve("1m").load()))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("steps", nargs="?", type=int, default=24)
    ap.add_argument("--json")
    args = ap.parse_args()
    rows = {}
    for name, make in SETS:
        ps = make()
        t0 = time.time()
        ref = forward_log10(ps, "float64")
        for every in (16, args.steps):
            stats: dict = {}
            got, redo = emu.emulate(ps, emu.Scheme(every=every), stats=stats)
            row = emu.compare(ps, got, redo, ref)
            row.update(stats, seconds=round(time.time() - t0, 1))
            rows[f"{name} every={every}"] = row
            print(name, every, row, flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
