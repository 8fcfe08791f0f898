"""The queue cascade of ``cuda-subwarp`` on the NumPy float32 emulation (tests/subwarp_scaling.py):
every pair of a set with a read up to 256 whose likelihood is under 1e-28 (the pairs the float32
kernel without exponents queues) through the cascaded queue configurations (k = 8, the smallest
p whose tile holds the reads) with exponents; how many the exponents hand on to float64 and the
largest error against the float64 reference. ``deep`` = 96 generated deep pairs of 100..256
bases with GATK's gap penalty.

    python scripts/subwarp_cascade_emulation.py deep 10s 1m [--json F]
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import subwarp_scaling as emu  # noqa: E402
from cpu_reference.pairhmm import forward_log10  # noqa: E402
from hmmbench.pairhmm import cuda_subwarp as sw  # noqa: E402
from hmmbench.pairhmm import cuda_subwarp_variants as swv
from hmmbench.pairhmm.datasets import resolve  # noqa: E402
from pairgen import deep_pairs  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("sets", nargs="+")
    ap.add_argument("--json")
    args = ap.parse_args()
    b = swv.backends()[0]
    out = {}
    for name in args.sets:
        t = time.time()
        ps = deep_pairs(11, 96, length=(100, 257), gcp_q=(10, 11)) if name == "deep" \
            else resolve(name).load()
        ref = forward_log10(ps, "float64")
        sel = np.flatnonzero((ref < -28) & (ps.pair_read_lengths <= 256))
        queue_bins, _, cascade = b.queue_plan(b.bins_for(ps))
        table = tuple((q.hi, q.p, q.k) for q, c in zip(queue_bins, cascade) if c)
        sub = ps.subset(sel)
        got, redo = emu.emulate(sub, emu.Scheme(), bins=table, long_config=(32, 8))
        row = emu.compare(sub, got, redo, ref[sel])
        row.update(queue_configs=[list(x) for x in table], seconds=round(time.time() - t, 1))
        out[name] = row
        print(name, row, flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
