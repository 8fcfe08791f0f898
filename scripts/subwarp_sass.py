"""SASS instructions per cell of the wavefront loop, per read length, for the kernel each
equal-length set runs in (the tables in docs/subwarp-design.md).

For each L: the bin a read of length L falls in, that bin's float32 kernel as the backend
compiles it (its defines: p, k, min blocks, exponents or not, recurrence), nvcc -cubin for sm_90,
cuobjdump -sass, and the counts of the wavefront loop (4 unrolled steps of k rows;
``hmmbench.pairhmm.subwarp.build.wavefront_loop``). With exponents the rescale check is a forward branch inside
that loop, taken every SW_EXP_EVERY / 4 iterations: its block is counted apart and amortized.
Needs nvcc and cuobjdump (PyPI's nvidia-cuda-cuobjdump and nvidia-cuda-nvdisasm give one:
CUOBJDUMP=path).

    python scripts/subwarp_sass.py [--backend cuda-subwarp] [--lengths 32,64,...] [--json F]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections import Counter

from hmmbench import registry
from hmmbench.apis import cuda as glue
from hmmbench.pairhmm.subwarp.build import FP32_OPS, SOURCE, wavefront_loop
from hmmbench.pairhmm.subwarp.layout import make_bins

LENGTHS = (32, 64, 128, 160, 192, 256, 320, 384, 448, 512, 640, 768, 896, 1024)
STEPS = 4            # wavefront steps per loop iteration (the kernel's unroll)
EXP_EVERY = 4        # the kernel's default SW_EXP_EVERY: the check every 4 iterations (16 steps)
#: H100: 132 SMs x 128 FP32 lanes x 1.98 GHz
FP32_PER_S = 132 * 128 * 1.98e9


def sass_of(defines: dict, cuobjdump: str) -> tuple:
    """(SASS text, registers, spill bytes) of the sub-warp kernel with these defines."""
    with tempfile.TemporaryDirectory() as tmp:
        cubin = os.path.join(tmp, "k.cubin")
        used = glue.ptxas_resources(glue.nvcc_cubin(SOURCE, defines, cubin), "subwarp_forward")
        sass = subprocess.run([cuobjdump, "-sass", cubin], capture_output=True, text=True,
                              check=True).stdout
    return sass, used["registers"], used["spill_store_bytes"]


def row(L: int, backend, cuobjdump: str) -> dict:
    bins = make_bins(backend._bins_table, backend._long, L)
    b = next(x for x in bins if x.lo <= L <= x.hi)
    d = backend.defines(b)
    sass, regs, spill = sass_of(d, cuobjdump)
    main, block = wavefront_loop(sass)
    cells = STEPS * b.k
    per_iter = Counter(main)
    if block:   # the check runs once per SW_EXP_EVERY iterations (the bin's own, or 4)
        for k, v in block.items():
            per_iter[k] += v / d.get("SW_EXP_EVERY", EXP_EVERY)
    total = sum(per_iter.values())
    fp32 = sum(per_iter[o] for o in FP32_OPS)
    shfl = per_iter["SHFL"]
    out = {"L": L, "bin": f"p{b.p}k{b.k}" + (f" /{b.min_blocks}" if b.min_blocks else ""),
           "exponents": bool(d["SW_EXP_SCALE"]), "registers": regs, "spill_bytes": spill,
           "loop_instructions": sum(main.values()), "check_block": sum(block.values()),
           "instr_per_cell": total / cells, "fp32_per_cell": fp32 / cells,
           "shfl_per_cell": shfl / cells, "other_per_cell": (total - fp32 - shfl) / cells,
           "ldl_stl_in_loop": main["LDL"] + main["STL"]}
    out["fp32_bound_tcups"] = FP32_PER_S / out["fp32_per_cell"] / 1e12
    out["issue_bound_tcups"] = FP32_PER_S / out["instr_per_cell"] / 1e12
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backend", default="cuda-subwarp")
    ap.add_argument("--lengths", default=",".join(map(str, LENGTHS)))
    ap.add_argument("--json", help="write the rows here")
    args = ap.parse_args(argv)
    cuobjdump = os.environ.get("CUOBJDUMP", "cuobjdump")
    (backend,) = registry.select([args.backend])
    rows = [row(int(x), backend, cuobjdump) for x in args.lengths.split(",")]
    print("| L | bin | exponents | registers | instr/cell | FP32 | SHFL | other | LDL+STL in loop "
          "| FP32 bound | issue bound |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['L']} | {r['bin']} | {'yes' if r['exponents'] else 'no'} | {r['registers']} "
              f"| {r['instr_per_cell']:.2f} | {r['fp32_per_cell']:.2f} | {r['shfl_per_cell']:.3f} "
              f"| {r['other_per_cell']:.2f} | {r['ldl_stl_in_loop']} | {r['fp32_bound_tcups']:.2f} "
              f"| {r['issue_bound_tcups']:.2f} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"backend": args.backend, "arch": "sm_90", "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
