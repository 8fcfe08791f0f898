"""SASS instructions per cell of the HMMER3 filter kernels' row loop (kernels_common/profile/warp.h
through kernels_cuda/profile/filters.cu), per model size and variant, and the bounds they imply
(the tables in docs/profile-kernels.md).

For each M and kind: the warp kernel as profile-cuda-warp compiles it (``warp.defines`` of the
tuned variant, with ``--set KEY=VALUE`` overrides of the variant), nvcc -cubin for sm_90,
cuobjdump -sass, and the opcode counts of one database row: the innermost loop holding the
profile loads, from its head to the branch that skips the rare part of a row (the Viterbi
filter's lazy-F D->D passes, MSV's vote-gated reduction) or to its back branch, divided by the
rows the compiler unrolled into it (one residue broadcast each). Per cell = per lane and row over
the M / GROUP model positions a lane owns. Needs nvcc and cuobjdump (PyPI's
nvidia-cuda-cuobjdump gives one: CUOBJDUMP=path).

    python scripts/profile_sass.py [--sizes 100,400,1200] [--kinds ssv,msv,vf] [--set row_inplace=1]
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from collections import Counter

from hmmbench.apis import cuda as glue
from hmmbench.profile.device import layout, warp

SOURCE = "profile/filters.cu"
KERNEL = {"ssv": "ssv_xe_warp", "msv": "msv_xj_warp", "vf": "vf_xc_warp"}
#: H200 (and H100 SXM): 132 SMs at 1.98 GHz; per SM and clock: 64 lanes of integer ALU (DPX
#: included), 32 lanes of load/store (a warp's 4-byte load = 128 B of L1), 4 warp issues
SM_CLOCKS = 132 * 1.98e9
ALU_LANES, LSU_LANES, ISSUE_LANES = 64, 32, 128
LSU_OPS = ("LDG", "LDS", "LDL", "STG", "STS", "STL", "SHFL", "LDC")
FMA_OPS = ("IMAD", "IMUL", "FFMA", "FADD", "FMUL")
OTHER_OPS = ("BRA", "BSSY", "BSYNC", "WARPSYNC", "REDUX", "VOTE", "EXIT", "NOP", "UMOV", "ULDC",
             "S2R", "S2UR", "CS2R", "BAR")
_LINE = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;")


def sass_lines(text: str) -> list:
    """[(address, predicate-free opcode, full instruction)] of one function's SASS."""
    out = []
    for m in _LINE.finditer(text):
        ins = m.group(2).strip()
        op = ins.split()[1] if ins.startswith("@") else ins.split()[0]
        out.append((int(m.group(1), 16), op, ins))
    return out


def row_loop(lines: list) -> list:
    """The row loop's straight-line part: the backward branch whose body holds the most profile
    loads, from its target to the first conditional forward branch after the last row
    reduction (REDUX) or vote, else to the back branch."""
    loops = []
    for addr, op, ins in lines:
        m = re.search(r"\bBRA\s+0x([0-9a-f]+)", ins)
        if op != "BRA" or not m or int(m.group(1), 16) >= addr:
            continue
        body = [x for x in lines if int(m.group(1), 16) <= x[0] <= addr]
        loops.append((sum(x[1].startswith("LDG") for x in body), len(body), body))
    most = max(n for n, _, _ in loops)
    body = min((b for b in loops if b[0] >= 0.5 * most), key=lambda b: b[1])[2]
    marks = [i for i, x in enumerate(body) if x[1].startswith(("REDUX", "VOTE"))]
    if marks:
        for j in range(marks[0], len(body)):
            if body[j][2].startswith("@") and body[j][1] == "BRA":
                return body[:j + 1]
    return body


def classify(op: str) -> str:
    if op.startswith(LSU_OPS):
        return "lsu"
    if op.startswith(FMA_OPS):
        return "fma"
    if op.startswith(OTHER_OPS):
        return "other"
    if op == "MOV":
        return "mov"
    return "alu"


def count(M: int, kind: str, variant: dict, cuobjdump: str) -> dict:
    class _M:                                    # what warp.defines reads of a model
        Kp = 29
    model = _M()
    model.M = M
    g = warp.group(variant, M, kind)
    if kind == "vf":
        Q = layout.n_vectors(M, 64)
    else:
        Q = layout.n_vectors(M, g * (2 if variant["simd16"] else 4), 1)
    d = warp.defines(model, kind, Q, variant, 128)
    d["PROFILE_SMEM"] = 0
    with tempfile.TemporaryDirectory() as tmp:
        cubin = os.path.join(tmp, "k.cubin")
        used = glue.ptxas_resources(glue.nvcc_cubin(SOURCE, d, cubin), KERNEL[kind])
        sass = subprocess.run([cuobjdump, "-sass", "-fun", KERNEL[kind], cubin],
                              capture_output=True, text=True, check=True).stdout
    body = row_loop(sass_lines(sass))
    ops = Counter(op for _, op, _ in body)
    pipes = Counter()
    for op, n in ops.items():
        pipes[classify(op)] += n
    # the compiler may unroll the row loop: one residue broadcast (PREFETCH's SHFL.IDX) per row
    rows = max(1, ops.get("SHFL.IDX", 0)) if variant["prefetch"] else 1
    cells = rows * M / g                         # model positions per lane in the counted rows
    per = {k: v / cells for k, v in pipes.items()}
    total = sum(pipes.values()) / cells
    bound = {"alu": SM_CLOCKS * ALU_LANES / max(per.get("alu", 0), 1e-9) / 1e12,
             "lsu": SM_CLOCKS * LSU_LANES / max(per.get("lsu", 0), 1e-9) / 1e12,
             "issue": SM_CLOCKS * ISSUE_LANES / total / 1e12}
    return {"M": M, "kind": kind, "group": g, "Q": Q, "registers": used["registers"],
            "spill_bytes": used["spill_store_bytes"], "rows_counted": rows,
            "row_instructions": len(body) / rows,
            "opcodes": dict(ops.most_common()), "per_cell": per, "instr_per_cell": total,
            "bound_tcups": bound}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="100,400,1200")
    ap.add_argument("--kinds", default="ssv,msv,vf")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="override a key of the tuned variant (repeatable)")
    ap.add_argument("--json", help="write the rows here")
    args = ap.parse_args(argv)
    variant = dict(warp.TUNED_VARIANT)
    for kv in args.set:
        k, v = kv.split("=", 1)
        variant[k] = int(v, 0)
    cuobjdump = os.environ.get("CUOBJDUMP", "cuobjdump")
    rows = [count(int(M), kind, variant, cuobjdump)
            for kind in args.kinds.split(",") for M in args.sizes.split(",")]
    print("| kind | M | group | regs | row instr | per cell: all | ALU | LSU | FMA+MOV "
          "| bound ALU / LSU / issue (TCUPS) |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for r in rows:
        p, b = r["per_cell"], r["bound_tcups"]
        print(f"| {r['kind']} | {r['M']} | {r['group']} | {r['registers']}"
              f"{' (spills)' if r['spill_bytes'] else ''} | {r['row_instructions']:.0f} "
              f"| {r['instr_per_cell']:.2f} | {p.get('alu', 0):.2f} | {p.get('lsu', 0):.2f} "
              f"| {p.get('fma', 0) + p.get('mov', 0):.2f} "
              f"| {b['alu']:.1f} / {b['lsu']:.1f} / {b['issue']:.1f} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"variant": variant, "arch": "sm_90", "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
