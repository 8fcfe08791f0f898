"""The HMMER3 filter kernels' study tools (kernels_common/profile/warp.h through
kernels_cuda/profile/filters.cu; docs/profile-kernels.md holds what they measured).

``sass``: SASS instructions per cell of each warp kernel's row loop, per model size and variant,
and the bounds they imply. For each M and kind: the warp kernel as profile-cuda-warp compiles it
(``warp.defines`` of the tuned variant, with ``--set KEY=VALUE`` overrides), nvcc -cubin for
sm_90, cuobjdump -sass, and the opcode counts of one database row: the innermost loop holding the
profile loads, from its head to the branch that skips the rare part of a row (the Viterbi
filter's lazy-F D->D passes, MSV's vote-gated reduction) or to its back branch, divided by the
rows the compiler unrolled into it (one residue broadcast each). Per cell = per lane and row
over the M / GROUP model positions a lane owns. Needs nvcc and cuobjdump (PyPI's
nvidia-cuda-cuobjdump gives one: CUOBJDUMP=path); no GPU.

``variants`` (GPU machine): kernel-only TCUPS of warp-kernel variants (defines the registry does
not hold) on a generated database, each variant's scores checked against profile-numpy on a
sample and its raw integers on the whole database against the first variant's. Kinds: ssv (SSV
on every sequence), msv (the full MSV kernel on every sequence), vf (the Viterbi filter on every
sequence); models query-M<size>. Kernel time = CUDA events around the one launch, after a
warm-up launch; the median of --repeats launches, with min and max. Development figures;
`hmmbench run` / the profile-e2e suite make the committed ones.

    python scripts/profile_kernels.py sass [--sizes 100,400,1200] [--set row_inplace=0]
    python3 scripts/profile_kernels.py variants --db proteins-2e8 --sizes 100,400,1200 \\
        --json $OUT/variants.json
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from cpu_reference.profile import filters as pf
from hmmbench.apis import cuda as glue
from hmmbench.profile import datasets
from hmmbench.profile.device import layout, warp
from hmmbench.profile.device.cuda import BLOCK, SOURCE, TUNED_VARIANT, _CudaDevice
from hmmbench.profile.device.host import launch_order
from hmmbench.profile.model import SequenceSet

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


def sass_main(args) -> int:
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

#: name -> (variant overrides of TUNED_VARIANT, kinds it is timed on); "ascending" is the tuned
#: set before ROW_INPLACE and VF_NTSC_MASK, "tuned" the registry's current one
_ASC = {"row_inplace": 0, "vf_ntsc_mask": 0}
VARIANTS = {
    "ascending": (_ASC, ("ssv", "msv", "vf")),
    "inplace": ({**_ASC, "row_inplace": 1}, ("ssv", "msv", "vf")),
    "ntsc-alu": ({**_ASC, "vf_ntsc_alu": 1}, ("vf",)),
    "mask07": ({**_ASC, "vf_ntsc_mask": 0x07}, ("vf",)),
    "mask0f": ({**_ASC, "vf_ntsc_mask": 0x0f}, ("vf",)),
    "mask70": ({**_ASC, "vf_ntsc_mask": 0x70}, ("vf",)),
    "inplace-mask07": ({"row_inplace": 1, "vf_ntsc_mask": 0x07}, ("vf",)),
    "tuned": ({}, ("ssv", "msv", "vf")),
}


def odd_sequences(seed: int = 5) -> SequenceSet:
    """Length 1, degenerate residues (B J Z O U X = codes 21..26), '*' (27), a long one."""
    rng = np.random.default_rng(seed)
    parts = [np.array([3], np.uint8), np.array([27], np.uint8), np.array([26], np.uint8),
             rng.integers(21, 28, 50).astype(np.uint8),
             np.where(rng.random(400) < 0.2, rng.integers(21, 28, 400),
                      rng.integers(0, 20, 400)).astype(np.uint8),
             rng.integers(0, 20, 3000).astype(np.uint8)]
    offs = np.zeros(len(parts) + 1, np.int64)
    np.cumsum([p.size for p in parts], out=offs[1:])
    return SequenceSet([f"odd{i}" for i in range(len(parts))], np.concatenate(parts), offs)


def concat(a: SequenceSet, b: SequenceSet) -> SequenceSet:
    offs = np.concatenate([a.offsets, a.offsets[-1] + b.offsets[1:]])
    return SequenceSet(list(a.names) + list(b.names), np.concatenate([a.residues, b.residues]),
                       offs)


def raw(dev, model, seqs, kind, order):
    L = seqs.lengths
    if kind == "ssv":
        return dev.ssv_xe(model, seqs, order)
    if kind == "msv":
        bp = model.byte
        return dev.msv_xj(model, seqs, order, ((bp.tjb(L) + bp.tbm) & 0xFF).astype(np.uint8))
    return dev.vf_xc(model, seqs, order, model.word.move(L).astype(np.int16))


def finished(model, seqs, kind, r):
    r, L = np.asarray(r, np.int64), seqs.lengths
    if kind == "ssv":
        return pf.ssv_from_xe(model, r, L)[0]
    if kind == "msv":
        return pf.msv_from_xj(model, np.maximum(r, 0), r < 0, L)
    return pf.vf_from_xc(model, np.minimum(r, 32767), r > 32767, L)


def reference(model, seqs, kind):
    if kind == "ssv":
        return pf.ssv_filter(model, seqs)
    if kind == "msv":
        return pf.msv_full(model, seqs, np.arange(len(seqs)))
    return pf.viterbi_filter(model, seqs)


def mismatches(got, want) -> int:
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    return int((~((got == want) | (np.isnan(got) & np.isnan(want)))).sum())


def precompile(models: dict, threads: int = 16) -> int:
    """nvcc every (variant, kind, M) kernel in parallel into PyCUDA's disk cache."""
    from pycuda.compiler import compile as nvcc_compile
    arch = glue.device_attributes()["arch"]
    specs = []
    for name, (over, kinds) in VARIANTS.items():
        variant = {**TUNED_VARIANT, **over}
        for model in models.values():
            for kind in kinds:
                Q, _ = warp.profile(model, kind, variant)
                d = {**warp.defines(model, kind, Q, variant, BLOCK), "PROFILE_SMEM": 0}
                specs.append(d)

    def build(d):
        nvcc_compile(glue.kernel_source(SOURCE), options=list(glue.BASE_OPTIONS) +
                     glue.define_flags(d), no_extern_c=True, arch=arch,
                     include_dirs=glue.include_dirs(SOURCE))
    with ThreadPoolExecutor(max_workers=threads) as pool:
        list(pool.map(build, specs))
    return len(specs)


def variants_main(args) -> int:
    t0 = time.time()
    seqs = datasets.resolve_database(args.db).loader()
    order = launch_order(seqs)
    sizes = [int(x) for x in args.sizes.split(",")]
    models = {M: datasets.resolve_model(f"query-M{M}").load()[0] for M in sizes}
    step = max(1, len(seqs) // args.sample)
    check = concat(seqs.subset(range(0, len(seqs), step)), odd_sequences())
    check_order = launch_order(check)
    print(f"db {args.db}: {len(seqs)} sequences, {seqs.n_residues} residues; check sample "
          f"{len(check)}; set-up {time.time() - t0:.0f} s", flush=True)
    t1 = time.time()
    print(f"precompiled {precompile(models)} kernels in {time.time() - t1:.0f} s", flush=True)
    names = args.variants.split(",")
    rows, base = [], {}
    for M in sizes:
        model = models[M]
        refs = {}
        for name in names:
            over, kinds = VARIANTS[name]
            variant = {**TUNED_VARIANT, **over}
            dev = _CudaDevice(True, variant)
            for kind in kinds:
                dev.begin(glue.EventTimer())
                if kind not in refs:
                    refs[kind] = reference(model, check, kind)
                sample_bad = mismatches(finished(model, check, kind,
                                                 raw(dev, model, check, kind, check_order)),
                                        refs[kind])
                dev.begin(glue.EventTimer())
                full = np.asarray(raw(dev, model, seqs, kind, order))    # warm-up + identity
                key = (M, kind)
                base.setdefault(key, full)
                differ = int((full != base[key]).sum())
                secs = []
                for _ in range(args.repeats):
                    timer = glue.EventTimer()
                    dev.begin(timer)
                    raw(dev, model, seqs, kind, order)
                    secs.append(timer.seconds()["kernel"])
                cells = M * seqs.n_residues
                med = float(np.median(secs))
                launch = dev.launches[-1]
                row = {"M": M, "kind": kind, "variant": name, "defines_over": over,
                       "kernel_s": secs, "median_s": med, "tcups": cells / med / 1e12,
                       "tcups_min": cells / max(secs) / 1e12, "tcups_max": cells / min(secs) / 1e12,
                       "registers": launch["registers"], "grid": launch["grid"],
                       "group": launch.get("GROUP"), "sample_mismatches": sample_bad,
                       "full_differ_from_first": differ}
                rows.append(row)
                print(f"M={M:5d} {kind:3s} {name:15s} {row['tcups']:7.3f} TCUPS "
                      f"[{row['tcups_min']:.3f}..{row['tcups_max']:.3f}] regs {row['registers']} "
                      f"sample-mismatch {sample_bad} differ {differ}", flush=True)
            dev.end()
    with open(args.json, "w") as f:
        json.dump({"db": args.db, "device": glue.device_attributes().get("name"),
                   "sizes": sizes, "repeats": args.repeats, "rows": rows}, f, indent=1)
    bad = [r for r in rows if r["sample_mismatches"] or r["full_differ_from_first"]]
    print(f"{len(rows)} rows, {len(bad)} with mismatches; {time.time() - t0:.0f} s")
    return 1 if bad else 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="tool", required=True)
    s = sub.add_parser("sass", help="SASS instructions per cell and bounds (no GPU)")
    s.add_argument("--sizes", default="100,400,1200")
    s.add_argument("--kinds", default="ssv,msv,vf")
    s.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="override a key of the tuned variant (repeatable)")
    s.add_argument("--json", help="write the rows here")
    v = sub.add_parser("variants", help="time and check kernel variants (GPU)")
    v.add_argument("--db", default="proteins-2e8")
    v.add_argument("--sizes", default="100,400,1200")
    v.add_argument("--variants", default=",".join(VARIANTS),
                   help="the first is the one the others' raw integers are compared with")
    v.add_argument("--repeats", type=int, default=5)
    v.add_argument("--sample", type=int, default=1500, help="sequences checked against numpy")
    v.add_argument("--json", required=True)
    args = ap.parse_args(argv)
    return sass_main(args) if args.tool == "sass" else variants_main(args)


if __name__ == "__main__":
    sys.exit(main())
