"""The queue cascade of a sub-warp backend on the NumPy float32 emulation (tests/subwarp_scaling.py):
every pair of a set whose read falls in a bin without exponents and whose likelihood is under
1e-28 (the pairs the float32 kernel without exponents queues) through its queue's float32 level
with exponents (``subwarp_rescue.exp_config``: k = 8 and the smallest p whose tile holds the
reads up to 256, one p32k16 tile up to 512); how many the exponents hand on to float64 and the
largest error against the float64 reference. ``deep`` = 96 generated deep pairs of 100..256
bases with GATK's gap penalty, ``deep-long`` 96 of 257..512. ``--whole-table``: the bins of a
call too large for the size tiers (whose multi-tile bin takes reads over 256 with exponents),
so that small sets show the 257..512 bins' cascade.

    python scripts/subwarp_cascade_emulation.py deep 10s 1m [--backend NAME] [--whole-table]
        [--json F]
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
from hmmbench import registry  # noqa: E402
from hmmbench.pairhmm.cuda_subwarp import SubwarpBackend  # noqa: E402
from hmmbench.pairhmm.datasets import resolve  # noqa: E402
from hmmbench.pairhmm.subwarp_rescue import exp_config  # noqa: E402
from pairgen import deep_pairs  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("sets", nargs="+")
    ap.add_argument("--backend", default="cuda-subwarp")
    ap.add_argument("--whole-table", action="store_true")
    ap.add_argument("--json")
    args = ap.parse_args()
    (b,) = registry.select([args.backend])
    if args.whole_table:
        keep = ("bins", "long_config", "exp_scale", "exp_above", "exp_recompute")
        b = SubwarpBackend(b.name, **{k: v for k, v in b.params.items() if k in keep})
    deep = {"deep": (11, (100, 257)), "deep-long": (12, (257, 513))}
    out = {}
    for name in args.sets:
        t = time.time()
        ps = deep_pairs(deep[name][0], 96, length=deep[name][1], gcp_q=(10, 11)) \
            if name in deep else resolve(name).load()
        ref = forward_log10(ps, "float64")
        bins = b.bins_for(ps)
        queue_bins, queue_of, cascade = b.queue_plan(bins)
        # the reads of the cascaded queues' bins, and those queues' float32 levels as a table
        cascaded = [x for i, x in enumerate(bins) if cascade[queue_of[i]]]
        m = ps.pair_read_lengths
        held = np.zeros(ps.n_pairs, bool)
        for x in cascaded:
            held |= (m >= x.lo) & (m <= x.hi)
        sel = np.flatnonzero((ref < -28) & held)
        table = tuple((e.hi, e.p, e.k) for e in
                      (exp_config(q) for q, c in zip(queue_bins, cascade) if c))
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
